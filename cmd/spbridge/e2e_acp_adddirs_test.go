package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeAdditionalDirectories drives the real claude through
// spbridge serve with the official ACP client: a session opened with an
// additional folder, in acceptEdits, lets the model's Write into that
// folder run unasked (claude got it as --add-dir), while a Write into a
// folder not given is still asked about (and rejected here).
func TestE2EServeAdditionalDirectories(t *testing.T) {
	t.Parallel()
	inside := map[string]any{"content": "made in the added folder\n"}
	outside := map[string]any{"content": "must not be made\n"}
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_inside", Name: "Write", Input: inside}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_outside", Name: "Write", Input: outside}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Done."}}},
	)
	work := filepath.Dir(e.pkg)
	root := filepath.Dir(work)
	extra, other := filepath.Join(root, "assets"), filepath.Join(root, "other")
	for _, d := range []string{extra, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inside["file_path"] = filepath.Join(extra, "inside.txt")
	outside["file_path"] = filepath.Join(other, "outside.txt")
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []string{"reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "additionalDirectories": []string{extra}, "saveAs": "s1"},
			map[string]any{"op": "ext", "method": "session/set_mode", "params": map[string]any{"sessionId": "$s1", "modeId": "acceptEdits"}},
			map[string]any{"op": "prompt", "session": "s1", "text": "write both files"}, // 3
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{}},
			map[string]any{"op": "closeStdin"},
		},
	})
	caps := response(t, events, 0)["agentCapabilities"].(map[string]any)
	if sc := caps["sessionCapabilities"].(map[string]any); sc["additionalDirectories"] == nil {
		t.Errorf("sessionCapabilities %v lack additionalDirectories", sc)
	}
	if r := response(t, events, 3); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	if got, err := os.ReadFile(inside["file_path"].(string)); err != nil || string(got) != inside["content"] {
		t.Errorf("the Write into the added folder: %q, %v", got, err)
	}
	if _, err := os.Stat(outside["file_path"].(string)); err == nil {
		t.Error("the rejected Write outside the folders ran")
	}
	var asked []string
	for _, ev := range events {
		if ev.Event != "request" || ev.Method != "session/request_permission" {
			continue
		}
		var p struct {
			ToolCall struct {
				RawInput struct {
					FilePath string `json:"file_path"`
				}
			}
		}
		json.Unmarshal(ev.Params, &p)
		asked = append(asked, p.ToolCall.RawInput.FilePath)
	}
	if len(asked) != 1 || asked[0] != outside["file_path"] {
		t.Errorf("asked about %q, want only %s", asked, outside["file_path"])
	}
	list := response(t, events, 4)["sessions"].([]any)
	if len(list) != 1 {
		t.Fatalf("session/list %v", list)
	}
	if dirs, _ := list[0].(map[string]any)["additionalDirectories"].([]any); len(dirs) != 1 || dirs[0] != extra {
		t.Errorf("session/list additionalDirectories = %v, want [%s]", dirs, extra)
	}
}

// TestE2EServeCodexAdditionalDirectories drives the real codex through
// spbridge serve with the official ACP client, on each transport: a
// folder given as additionalDirectories is writable in the Auto mode's
// sandbox (app-server: a writable root of each turn's policy; exec:
// --add-dir, also on the resumed thread's second turn), so patches adding
// files there apply unasked, while one into a folder not given does not
// (the app-server asks, and the answer here rejects it; exec refuses it).
// The folders are outside /tmp, which codex's workspace-write sandbox
// always lets it write.
func TestE2EServeCodexAdditionalDirectories(t *testing.T) {
	transports(t, testServeCodexAdditionalDirectories)
}

func testServeCodexAdditionalDirectories(t *testing.T, transport string) {
	root := outsideTmp(t)
	extra, other := filepath.Join(root, "assets"), filepath.Join(root, "other")
	for _, d := range []string{extra, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	add := func(id, path string) fakeapi.OutputItem {
		patch := "*** Begin Patch\n*** Add File: " + path + "\n+made by codex\n*** End Patch\n"
		return fakeapi.OutputItem{Type: "custom_tool_call", Name: "apply_patch", CallID: id, Input: patch}
	}
	one, two, out := filepath.Join(extra, "one.txt"), filepath.Join(extra, "two.txt"), filepath.Join(other, "out.txt")
	e, _ := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{add("call_one", one)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("One.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{add("call_two", two)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{add("call_out", out)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Two.")}})
	work := filepath.Dir(e.pkg)
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve", "--codex-transport", transport}, "env": envMap, "cwd": work,
		"permissions": []string{"reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "additionalDirectories": []string{extra}, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "add one"}, // 2
			map[string]any{"op": "prompt", "session": "s1", "text": "add two and out"},
			map[string]any{"op": "closeStdin"},
		},
	})
	for _, step := range []int{2, 3} {
		if r := response(t, events, step); r["stopReason"] != "end_turn" {
			t.Fatalf("step %d: %v", step, r)
		}
	}
	for _, p := range []string{one, two} {
		if got, err := os.ReadFile(p); err != nil || string(got) != "made by codex\n" {
			t.Errorf("the patch adding %s: %q, %v", p, got, err)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the patch outside the folders applied (%s)", out)
	}
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" && strings.Contains(string(ev.Params), extra) {
			t.Errorf("asked about a change in the added folder: %s", ev.Params)
		}
	}
}

// outsideTmp returns a new folder outside the system's temporary folder
// (/var/tmp), removed at the test's end; the test is skipped where there
// is none.
func outsideTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "spbridge-e2e-")
	if err != nil {
		t.Skipf("no folder outside the temporary folder: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
