package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeClaudePlan drives the real claude through spbridge serve
// with the official ACP client and no TodoWrite switch of its own in the
// environment: spbridge switches TodoWrite on, the model finds it through
// ToolSearch, and each list it writes reaches the editor as an ACP plan
// with every entry's status.
func TestE2EServeClaudePlan(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	todos := func(s1, s2, s3 string) map[string]any {
		return map[string]any{"todos": []any{
			map[string]any{"content": "Read the code", "status": s1, "activeForm": "Reading the code"},
			map[string]any{"content": "Write the fix", "status": s2, "activeForm": "Writing the fix"},
			map[string]any{"content": "Run the tests", "status": s3, "activeForm": "Running the tests"},
		}}
	}
	tool := func(id, name string, input map[string]any) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: id, Name: name, Input: input}}}
	}
	e.srv.Push(
		tool("toolu_search_1", "ToolSearch", map[string]any{"query": "select:TodoWrite", "max_results": 1}),
		tool("toolu_todo_1", "TodoWrite", todos("in_progress", "pending", "pending")),
		tool("toolu_todo_2", "TodoWrite", todos("completed", "completed", "in_progress")),
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Planned."}}})
	envMap := acpEnv(e.env)
	envMap["CLAUDE_CODE_ENABLE_TODO_TOOLS"], envMap["CLAUDE_CODE_ENABLE_TASKS"] = nil, nil
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []string{"allow_once", "allow_once", "allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "plan the fix"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	var plans []string
	for _, ev := range events {
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct {
				SessionUpdate string
				Entries       []struct{ Content, Status, Priority string }
			}
		}
		json.Unmarshal(ev.Params, &p)
		if p.Update.SessionUpdate != "plan" {
			continue
		}
		var entries []string
		for _, en := range p.Update.Entries {
			entries = append(entries, en.Content+"="+en.Status)
		}
		plans = append(plans, strings.Join(entries, ", "))
	}
	want := []string{
		"Read the code=in_progress, Write the fix=pending, Run the tests=pending",
		"Read the code=completed, Write the fix=completed, Run the tests=in_progress",
	}
	if len(plans) < 2 || plans[0] != want[0] || plans[len(plans)-1] != want[1] {
		t.Errorf("plans %q, want %q", plans, want)
	}
	// The model was offered TodoWrite: the CLI ran it, no error result.
	if reqs := e.srv.Requests(); len(reqs) < 3 || strings.Contains(string(reqs[2].Body), "No such tool") {
		t.Errorf("TodoWrite did not run (%d requests)", len(reqs))
	}
}
