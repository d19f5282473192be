package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeModels drives the real claude through spbridge serve with
// the official ACP client: once the session is open and the CLI started,
// a config_option_update lists the models claude's initialize answer
// offers (more than the aliases: their descriptions) and a
// reasoning_effort option; choosing an effort is taken, and the turn after
// it asks the model API for that effort. session/set_model (which ACP
// dropped and claude-agent-acp's clients still send) chooses the model the
// next turn asks the model API for.
func TestE2EServeModels(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Thought hard."}}}, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Quickly."}}})
	work := filepath.Dir(e.pkg)
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	steps := []any{
		map[string]any{"op": "initialize"},                                                                   // 0
		map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},                        // 1
		map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "config_option_update"}, // 2
		map[string]any{"op": "ext", "method": "session/set_config_option",
			"params": map[string]any{"sessionId": "$s1", "configId": "reasoning_effort", "value": "low"}}, // 3
		map[string]any{"op": "prompt", "session": "s1", "text": "think"},                                                             // 4
		map[string]any{"op": "ext", "method": "session/set_model", "params": map[string]any{"sessionId": "$s1", "modelId": "haiku"}}, // 5
		map[string]any{"op": "prompt", "session": "s1", "text": "quick"},                                                             // 6
		map[string]any{"op": "closeStdin"},
	}
	events := runACPClient(t, map[string]any{"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work, "steps": steps})

	var opts []any
	for _, ev := range events {
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct {
			Update map[string]any `json:"update"`
		}
		json.Unmarshal(ev.Params, &p)
		if p.Update["sessionUpdate"] == "config_option_update" {
			opts = p.Update["configOptions"].([]any)
			break
		}
	}
	find := func(opts []any, id string) map[string]any {
		for _, o := range opts {
			if o := o.(map[string]any); o["id"] == id {
				return o
			}
		}
		return nil
	}
	model := find(opts, "model")
	if model == nil {
		t.Fatalf("no model option in %v", opts)
	}
	var values []string
	described := 0
	for _, o := range model["options"].([]any) {
		o := o.(map[string]any)
		values = append(values, o["value"].(string))
		if o["description"] != nil {
			described++
		}
	}
	if !slices.Contains(values, "default") || !slices.Contains(values, "sonnet") || described == 0 {
		t.Errorf("model option %v: not claude's own list", model)
	}
	effort := find(opts, "reasoning_effort")
	var levels []string
	if effort != nil {
		for _, o := range effort["options"].([]any) {
			levels = append(levels, o.(map[string]any)["value"].(string))
		}
	}
	if !slices.Contains(levels, "low") || effort["currentValue"] != "default" {
		t.Errorf("reasoning_effort option %v", effort)
	}
	if got := find(response(t, events, 3)["configOptions"].([]any), "reasoning_effort"); got == nil || got["currentValue"] != "low" {
		t.Errorf("set_config_option reasoning_effort: %v", got)
	}
	if r := response(t, events, 4); r["stopReason"] != "end_turn" {
		t.Errorf("the turn after the effort: %v", r)
	}
	// Claude Code asks the model API for the effort chosen live
	// (apply_flag_settings), not its default.
	reqs := e.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	var body struct {
		OutputConfig struct {
			Effort string `json:"effort"`
		} `json:"output_config"`
	}
	var think []byte
	for _, r := range reqs {
		if slices.Contains(userTexts(r.Body), "think") && !slices.Contains(userTexts(r.Body), "quick") {
			think = r.Body
		}
	}
	json.Unmarshal(think, &body)
	if body.OutputConfig.Effort != "low" {
		t.Errorf("the model request's output_config.effort = %q, want low", body.OutputConfig.Effort)
	}

	// session/set_model: {} and the model the next turn asks for.
	if r := response(t, events, 5); len(r) != 0 {
		t.Errorf("session/set_model answered %v, want {}", r)
	}
	var quick struct {
		Model string `json:"model"`
	}
	for _, r := range reqs {
		if slices.Contains(userTexts(r.Body), "quick") {
			json.Unmarshal(r.Body, &quick)
		}
	}
	if !strings.Contains(quick.Model, "haiku") {
		t.Errorf("the turn after session/set_model haiku asked for model %q", quick.Model)
	}
}
