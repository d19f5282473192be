package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modelValues are the model option's values in the configOptions of an
// open's answer, and how many of them carry a description.
func modelValues(t *testing.T, res map[string]any) (values []string, described int) {
	t.Helper()
	opts, _ := res["configOptions"].([]any)
	for _, o := range opts {
		if o := o.(map[string]any); o["id"] == "model" {
			for _, v := range o["options"].([]any) {
				v := v.(map[string]any)
				values = append(values, v["value"].(string))
				if v["description"] != nil {
					described++
				}
			}
		}
	}
	return values, described
}

// TestE2EServeModelsInAnswer drives the real CLIs through spbridge serve
// with the official ACP client: the answer to session/new already carries
// the CLI's own models, on a fresh state folder (the open waits for the
// CLI's list) and in the next serve (the list its program gave, kept in the
// state folder's models/), where a model from it is chosen right after the
// answer, before the CLI said anything.
func TestE2EServeModelsInAnswer(t *testing.T) {
	t.Run("claude", func(t *testing.T) {
		e := newE2E(t)
		modelsInAnswer(t, e, "claude", func(values []string, described int) bool {
			return slices.Contains(values, "sonnet") && described > 0
		})
	})
	t.Run("codex", func(t *testing.T) {
		e, _ := newCodexE2E(t)
		modelsInAnswer(t, e, "codex", func(values []string, _ int) bool {
			return len(values) >= 2 && values[0] == "default"
		})
	})
}

func modelsInAnswer(t *testing.T, e *e2e, backend string, real func([]string, int) bool) {
	t.Helper()
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": backend}}
	open := func(extra ...any) []acpEvent {
		steps := append([]any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
		}, extra...)
		steps = append(steps, map[string]any{"op": "closeStdin"})
		return runACPClient(t, map[string]any{"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work, "steps": steps})
	}
	first := open()
	values, described := modelValues(t, response(t, first, 1))
	if !real(values, described) {
		t.Fatalf("session/new on a fresh state folder offered %v (%d described): not %s's own list", values, described, backend)
	}
	var state string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "SPBRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	if _, err := os.Stat(filepath.Join(state, "models", backend+".json")); err != nil {
		t.Errorf("the model list was not kept: %v", err)
	}
	pick := values[len(values)-1]
	second := open(map[string]any{"op": "ext", "method": "session/set_config_option",
		"params": map[string]any{"sessionId": "$s1", "configId": "model", "value": pick}})
	if again, _ := modelValues(t, response(t, second, 1)); !slices.Equal(again, values) {
		t.Errorf("the next session/new offered %v, want the kept %v", again, values)
	}
	if got, _ := modelValues(t, response(t, second, 2)); !slices.Contains(got, pick) {
		t.Errorf("set_config_option model %q right after the answer: %v", pick, got)
	}
	for _, o := range response(t, second, 2)["configOptions"].([]any) {
		if o := o.(map[string]any); o["id"] == "model" && o["currentValue"] != pick {
			t.Errorf("the model chosen is %v, want %q", o["currentValue"], pick)
		}
	}
}
