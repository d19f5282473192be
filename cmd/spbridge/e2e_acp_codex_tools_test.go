package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeCodexTools drives the real codex (app-server) through spbridge
// serve with the official ACP client, which validates every message: a
// command and a two-hunk patch show with their kind and title, the patch
// as one diff per hunk whose old and new texts are in the file before and
// after, and the command's output as text content or, for a client with
// terminals of its own (clientCapabilities._meta.terminal_output), in its
// terminal with the exit code.
func TestE2EServeCodexTools(t *testing.T) {
	t.Parallel()
	const (
		before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
		after  = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\n"
		patch  = "*** Begin Patch\n*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n three\n@@\n ten\n-eleven\n+ELEVEN\n twelve\n*** End Patch\n"
	)
	for _, terminal := range []bool{false, true} {
		name := "text"
		if terminal {
			name = "terminal"
		}
		t.Run(name, func(t *testing.T) {
			call := fakeapi.ExecCommandCall("echo hi; echo there")
			call.CallID = "call_cmd_1"
			e, _ := newCodexE2E(t,
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{call}},
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch_1", Input: patch}}},
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
			work := filepath.Dir(e.pkg)
			numbers := filepath.Join(work, "numbers.txt")
			if err := os.WriteFile(numbers, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			envMap := acpEnv(e.env)
			caps := map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false,
				"_meta": map[string]any{"terminal_output": terminal}}
			meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
			events := runACPClient(t, map[string]any{
				"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
				"steps": []any{
					map[string]any{"op": "initialize", "clientCapabilities": caps},
					map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
					map[string]any{"op": "prompt", "session": "s1", "text": "run it and patch"},
					map[string]any{"op": "closeStdin"},
				},
			})
			if r := response(t, events, 2); r["stopReason"] != "end_turn" {
				t.Fatalf("prompt: %v", r)
			}
			if got, _ := os.ReadFile(numbers); string(got) != after {
				t.Fatalf("numbers.txt after the turn = %q", got)
			}
			var cmdID, patchID, termData string
			var diffs []map[string]any
			var exit map[string]any
			var texts []string
			for _, ev := range events {
				if ev.Event != "notification" || ev.Method != "session/update" {
					continue
				}
				var p struct{ Update map[string]any }
				json.Unmarshal(ev.Params, &p)
				u := p.Update
				if changesCall(u) {
					continue // the turn's change set, not the patch
				}
				id, _ := u["toolCallId"].(string)
				switch u["sessionUpdate"] {
				case "tool_call":
					switch u["kind"] {
					case "execute":
						cmdID = id
						if u["title"] != "`echo hi; echo there`" {
							t.Errorf("command title %v", u["title"])
						}
					case "edit":
						patchID = id
						if u["title"] != "Edit numbers.txt" {
							t.Errorf("patch title %v", u["title"])
						}
					}
				}
				meta, _ := u["_meta"].(map[string]any)
				if o, ok := meta["terminal_output"].(map[string]any); ok && id == cmdID {
					termData += o["data"].(string)
				}
				if x, ok := meta["terminal_exit"].(map[string]any); ok && id == cmdID {
					exit = x
				}
				content, _ := u["content"].([]any)
				for _, c := range content {
					c := c.(map[string]any)
					switch {
					case c["type"] == "diff" && id == patchID && u["status"] == "completed":
						diffs = append(diffs, c)
					case c["type"] == "content" && id == cmdID:
						texts = append(texts, c["content"].(map[string]any)["text"].(string))
					}
				}
			}
			if cmdID == "" || patchID == "" {
				t.Fatalf("no command (%q) or patch (%q) call", cmdID, patchID)
			}
			if len(diffs) != 2 {
				t.Fatalf("%d diffs at the patch's end, want 2: %v", len(diffs), diffs)
			}
			for _, d := range diffs {
				old, _ := d["oldText"].(string)
				if d["path"] != numbers || !strings.Contains(before, old) || !strings.Contains(after, d["newText"].(string)) || old == d["newText"] {
					t.Errorf("diff %v is not a hunk of the change", d)
				}
			}
			if terminal {
				if i := strings.LastIndex(termData, "\x1b[H"); i >= 0 {
					termData = termData[i+len("\x1b[H"):]
				}
				if termData != "hi\nthere\n" || exit == nil || exit["exit_code"] != 0.0 || len(texts) != 0 {
					t.Errorf("terminal %q, exit %v, texts %q", termData, exit, texts)
				}
				return
			}
			if termData != "" || exit != nil || len(texts) == 0 || texts[len(texts)-1] != "```\nhi\nthere\n```" {
				t.Errorf("texts %q, terminal %q, exit %v", texts, termData, exit)
			}
		})
	}
}
