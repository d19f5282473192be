package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// TestE2EServePermissionScope drives the real claude through spbridge
// serve with the official ACP client: allow_always on `npm test` is a
// grant of `npm test …` for the session, which Claude Code takes as a
// session rule (the second `npm test -- --watch` runs unasked), and which
// does not allow `rm`.
func TestE2EServePermissionScope(t *testing.T) {
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	bash := func(cmd string) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": cmd, "description": "run " + cmd}}}}
	}
	e.srv.Push(bash("npm test"), bash("npm test -- --watch"), bash("rm -f gone.txt"),
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Tested."}}})
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []string{"allow_always", "reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "run the tests, then clean up"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	var asked []string
	for _, ev := range events {
		if ev.Event != "request" || ev.Method != "session/request_permission" {
			continue
		}
		var p struct {
			ToolCall struct{ RawInput struct{ Command string } }
			Options  []struct{ Kind, Name string }
		}
		json.Unmarshal(ev.Params, &p)
		asked = append(asked, p.ToolCall.RawInput.Command)
		if p.ToolCall.RawInput.Command == "npm test" {
			var names []string
			for _, o := range p.Options {
				names = append(names, o.Kind+": "+o.Name)
			}
			if want := "allow_always: Always allow `npm test …` in this session"; !strings.Contains(strings.Join(names, "\n"), want) {
				t.Errorf("options %q lack %q", names, want)
			}
		}
	}
	if strings.Join(asked, "|") != "npm test|rm -f gone.txt" {
		t.Errorf("asked about %q, want npm test, then rm (npm test -- --watch allowed always)", asked)
	}
}

// TestE2EServeQuestion drives the real claude through spbridge serve with
// the official ACP client: Claude's AskUserQuestion comes to the editor as
// a permission request whose options are the answers, and the one chosen
// reaches the model as the tool's result; the questions item keeps it.
func TestE2EServeQuestion(t *testing.T) {
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "AskUserQuestion", Input: map[string]any{"questions": []any{
			map[string]any{"question": "Which lock?", "header": "Lock", "multiSelect": false, "options": []any{
				map[string]any{"label": "flock", "description": "whole file"},
				map[string]any{"label": "fcntl", "description": "ranges"}}}}}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "fcntl it is."}}})
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []any{map[string]any{"optionId": "answer-1"}},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "ask me which lock"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	var options []string
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" {
			var p struct {
				ToolCall struct{ Title string }
				Options  []struct{ Name string }
			}
			json.Unmarshal(ev.Params, &p)
			for _, o := range p.Options {
				options = append(options, o.Name)
			}
			if p.ToolCall.Title != "Lock: Which lock?" {
				t.Errorf("question title %q", p.ToolCall.Title)
			}
		}
	}
	if strings.Join(options, "|") != "flock|fcntl|Don't answer" {
		t.Errorf("question options %q", options)
	}
	answered := false
	for _, r := range e.srv.Requests() {
		answered = answered || strings.Contains(string(r.Body), `\"Which lock?\"=\"fcntl\"`)
	}
	if !answered {
		t.Error("the model did not get the answer")
	}
}

// TestE2EServeAllEdits drives the real claude through spbridge serve with
// the official ACP client: an edit's permission request offers "Allow all
// edits in this session"; chosen, the session goes into acceptEdits
// (current_mode_update) and the next edit, of another file, runs without a
// request, while both files are written.
func TestE2EServeAllEdits(t *testing.T) {
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	first, second := filepath.Join(work, "first.txt"), filepath.Join(work, "second.txt")
	write := func(id, path, content string) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: id, Name: "Write", Input: map[string]any{"file_path": path, "content": content}}}}
	}
	e.srv.Push(write("toolu_first", first, "one\n"), write("toolu_second", second, "two\n"),
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Both written."}}})
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []any{map[string]any{"optionId": "allow_all_edits"}},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "write both files"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	if n := len(eventsOf(events, "request")); n != 1 {
		t.Errorf("%d permission requests, want one (the first Write)", n)
	}
	kinds, _ := updatesOf(events)
	if !strings.Contains(strings.Join(kinds, " "), "current_mode_update") {
		t.Errorf("no current_mode_update in %v", kinds)
	}
	// Claude Code itself asked once: in acceptEdits it asks no more.
	approvals := 0
	for _, it := range e.conv().Items {
		if it.Type() == archive.TypeToolApproval {
			approvals++
		}
	}
	if approvals != 1 {
		t.Errorf("%d toolApproval items, want 1", approvals)
	}
	for path, want := range map[string]string{first: "one\n", second: "two\n"} {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", path, got, err)
		}
	}
}
