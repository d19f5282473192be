package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/fakeapi"
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
// with the official ACP client: the first session hears the CLI's own
// models, which are kept in the state folder's models/, so that the next
// serve's answer to session/new already carries them and a model from them
// is chosen right after the answer, before the CLI said anything.
func TestE2EServeModelsInAnswer(t *testing.T) {
	t.Parallel()
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "On the chosen model."}}})
		pick := modelsInAnswer(t, e, "claude", nil, func(values []string, described int) bool {
			return slices.Contains(values, "sonnet") && described > 0
		})
		reqs := e.srv.Requests()
		var models []string
		for _, r := range reqs {
			models = append(models, gjson.GetBytes(r.Body, "model").String())
		}
		if model := models[len(models)-1]; !strings.Contains(model, pick) {
			t.Errorf("the turn ran on %q, want %q (requests: %q)", model, pick, models)
		}
	})
	for _, transport := range []string{"app-server", "exec"} {
		t.Run("codex-"+transport, func(t *testing.T) {
			t.Parallel()
			e, srv := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("On the chosen model.")}})
			pick := modelsInAnswer(t, e, "codex", []string{"--codex-transport", transport}, func(values []string, _ int) bool {
				return len(values) >= 2 && values[0] == "default"
			})
			reqs := srv.Requests()
			if model := gjson.GetBytes(reqs[len(reqs)-1].Body, "model").String(); model != pick {
				t.Errorf("the turn ran on %q, want %q", model, pick)
			}
		})
	}
}

// modelsInAnswer opens a session twice with spbridge serve args…: the first
// open is offered the CLI's own models (real says whether a list is), the
// second the kept list in its answer, a model of which is chosen right
// after the answer and runs a turn. It returns the model chosen.
func modelsInAnswer(t *testing.T, e *e2e, backend string, args []string, real func([]string, int) bool) string {
	t.Helper()
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": backend}}
	open := func(extra ...any) []acpEvent {
		steps := append([]any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
		}, extra...)
		steps = append(steps, map[string]any{"op": "closeStdin"})
		return runACPClient(t, map[string]any{"command": append([]string{spbridgeBin(t), "serve"}, args...), "env": acpEnv(e.env), "cwd": work, "steps": steps})
	}
	// On a fresh state folder the answer carries the list when the CLI
	// gave it within the open's wait (internal/acp's TestModelsInAnswer
	// shows that path); the update after the answer carries it always.
	first := open(map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "config_option_update"})
	var values []string
	var described int
	for _, ev := range first {
		if ev.Event == "notification" && ev.Method == "session/update" && strings.Contains(string(ev.Params), "config_option_update") {
			var p struct {
				Update map[string]any `json:"update"`
			}
			json.Unmarshal(ev.Params, &p)
			values, described = modelValues(t, p.Update)
		}
	}
	if !real(values, described) {
		t.Fatalf("the first session was offered %v (%d described): not %s's own list", values, described, backend)
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
		"params": map[string]any{"sessionId": "$s1", "configId": "model", "value": pick}},
		map[string]any{"op": "prompt", "session": "s1", "text": "which model are you?"})
	if r := response(t, second, 3); r["stopReason"] != "end_turn" {
		t.Errorf("the turn on %q: %v", pick, r)
	}
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
	return pick
}
