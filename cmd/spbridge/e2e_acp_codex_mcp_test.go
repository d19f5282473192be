package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeCodexMCP drives the real codex (app-server) through spbridge
// serve with the official ACP client, which validates every message: the
// editor's MCP server, given in session/new, reaches codex; the model finds
// its tool and calls it twice; codex's approval of the call becomes one
// permission request, answered "allow always", so the second call runs
// unasked; and the server's own form is asked as a question whose answer
// the server gets.
func TestE2EServeCodexMCP(t *testing.T) {
	t.Parallel()
	shout := fakeapi.OutputItem{Type: "function_call", Name: "shout", Namespace: "mcp__fake", Arguments: map[string]any{"text": "hi"}}
	e, _ := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "tool_search_call", Query: "shout ask"}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{shout}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{shout}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "ask", Namespace: "mcp__fake", Arguments: map[string]any{}}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("All done.")}})
	work := filepath.Dir(e.pkg)
	envMap := acpEnv(e.env)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mcp := []any{map[string]any{"name": "fake", "command": exe, "args": []any{},
		"env": []any{map[string]any{"name": fakeapi.MCPServerEnv, "value": "1"}, map[string]any{"name": fakeapi.MCPTokenEnv, "value": "tok"}}}}
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		// The shout call's approval: always; ask's approval: once; the
		// form's Color: Blue; Sure?: Yes.
		"permissions": []any{"allow_always", "allow_once", map[string]any{"optionId": "answer-1"}, map[string]any{"optionId": "answer-0"}},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "mcpServers": mcp, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "shout twice, then ask"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	var titles []string
	var outputs []string
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" {
			var p struct {
				ToolCall map[string]any `json:"toolCall"`
			}
			json.Unmarshal(ev.Params, &p)
			titles = append(titles, p.ToolCall["title"].(string))
		}
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct{ Update map[string]any }
		json.Unmarshal(ev.Params, &p)
		if p.Update["sessionUpdate"] == "tool_call_update" && p.Update["status"] == "completed" {
			b, _ := json.Marshal(p.Update["content"])
			outputs = append(outputs, string(b))
		}
	}
	if len(titles) != 4 || !strings.Contains(titles[0], "shout") || !strings.Contains(titles[1], "ask") ||
		!strings.Contains(titles[2], "Color") || !strings.Contains(titles[3], "Sure?") {
		t.Errorf("permission requests %q, want shout's, ask's and the form's two questions", titles)
	}
	all := strings.Join(outputs, "\n")
	if strings.Count(all, "HI tok") != 2 {
		t.Errorf("the two shout calls did not both run: %s", all)
	}
	if !strings.Contains(all, `\"color\":\"blue\"`) || !strings.Contains(all, `\"confirm\":true`) {
		t.Errorf("the form's answer did not reach the MCP server: %s", all)
	}
}
