package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeCodexPlanUsage drives the real codex through spbridge serve
// with the official ACP client, on both transports: the model's plan
// (update_plan; the app-server's turn/plan/updated, exec's todo_list)
// reaches the client as plan updates with each entry's status (exec's says
// only done or not), and a
// usage_update follows the turn with the tokens of its last request and the
// model's context window (exec's own JSON reports neither: they come from
// codex's log of the thread); the prompt's answer carries the turn's
// tokens (PromptResponse.usage).
func TestE2EServeCodexPlanUsage(t *testing.T) {
	t.Parallel()
	plan := func(id string, steps ...string) fakeapi.OutputItem {
		var list []any
		for i := 0; i+1 < len(steps); i += 2 {
			list = append(list, map[string]any{"step": steps[i], "status": steps[i+1]})
		}
		return fakeapi.OutputItem{Type: "function_call", Name: "update_plan", CallID: id, Arguments: map[string]any{"plan": list}}
	}
	for _, transport := range []string{"app-server", "exec"} {
		t.Run(transport, func(t *testing.T) {
			e, srv := newCodexE2E(t,
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{plan("call_plan_1", "Read the code", "in_progress", "Write the fix", "pending")}},
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{plan("call_plan_2", "Read the code", "completed", "Write the fix", "in_progress")}},
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Planned.")},
					Usage: fakeapi.ResponsesUsage{InputTokens: 1000, CachedTokens: 600, OutputTokens: 50, TotalTokens: 1050}})
			work := filepath.Dir(e.pkg)
			envMap := acpEnv(e.env)
			meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
			events := runACPClient(t, map[string]any{
				"command": []string{spbridgeBin(t), "serve", "--codex-transport", transport}, "env": envMap, "cwd": work,
				"steps": []any{
					map[string]any{"op": "initialize"},
					map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
					map[string]any{"op": "prompt", "session": "s1", "text": "plan it"},
					map[string]any{"op": "closeStdin"},
				},
			})
			r := response(t, events, 2)
			if r["stopReason"] != "end_turn" {
				t.Fatalf("prompt: %v", r)
			}
			// The answer carries the turn's tokens (PromptResponse.usage), its
			// last request's among them; cache apart from input.
			if u, _ := r["usage"].(map[string]any); num(u["outputTokens"]) < 50 || num(u["cachedReadTokens"]) < 600 ||
				num(u["totalTokens"]) != num(u["inputTokens"])+num(u["outputTokens"])+num(u["cachedReadTokens"])+num(u["cachedWriteTokens"]) {
				t.Errorf("the prompt's usage %v, want the turn's tokens", r["usage"])
			}
			if n := len(srv.Requests()); n != 3 {
				t.Fatalf("%d model requests, want 3", n)
			}
			var plans [][]map[string]any
			var usage map[string]any
			for _, ev := range events {
				if ev.Event != "notification" || ev.Method != "session/update" {
					continue
				}
				var p struct{ Update map[string]any }
				json.Unmarshal(ev.Params, &p)
				switch p.Update["sessionUpdate"] {
				case "plan":
					var entries []map[string]any
					for _, en := range p.Update["entries"].([]any) {
						entries = append(entries, en.(map[string]any))
					}
					plans = append(plans, entries)
				case "usage_update":
					usage = p.Update
				}
			}
			if len(plans) == 0 {
				t.Fatal("no plan update")
			}
			// exec's todo_list says only whether each step is done: a step
			// in progress shows as pending.
			inProgress := "in_progress"
			if transport == "exec" {
				inProgress = "pending"
			}
			last := plans[len(plans)-1]
			if len(last) != 2 || last[0]["content"] != "Read the code" || last[0]["status"] != "completed" || last[1]["status"] != inProgress {
				t.Errorf("last plan %v", last)
			}
			if first := plans[0]; len(first) != 2 || first[0]["status"] != inProgress || first[1]["status"] != "pending" {
				t.Errorf("first plan %v", first)
			}
			// The last request: 1000 input tokens (600 of them cached) and 50
			// output; codex's window for the model.
			if usage == nil || usage["used"] != 1050.0 || usage["size"] == nil || usage["size"].(float64) <= 1050 {
				t.Errorf("usage_update %v, want used 1050 and the model's window", usage)
			}
		})
	}
}

// num is a JSON number, 0 when it is missing.
func num(v any) float64 { f, _ := v.(float64); return f }
