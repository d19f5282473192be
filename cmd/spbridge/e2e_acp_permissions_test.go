package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// TestE2EServePermissionScope drives the real claude through spbridge
// serve with the official ACP client: allow_always on `npm test` is a
// grant of `npm test …` for the session, which spbridge keeps (the second
// `npm test -- --watch` is not asked in the editor: spbridge answers
// Claude Code's request), and which does not allow `rm`.
func TestE2EServePermissionScope(t *testing.T) {
	t.Parallel()
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
			if want := "allow_always: Always allow `npm test …` in the working folder in this session"; !strings.Contains(strings.Join(names, "\n"), want) {
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
	t.Parallel()
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

// permissionRequests are the session/request_permission requests of
// events: each one's command or file, and the option kinds it offered.
func permissionRequests(events []acpEvent) (asked []string, kinds [][]string) {
	for _, ev := range events {
		if ev.Event != "request" || ev.Method != "session/request_permission" {
			continue
		}
		var p struct {
			ToolCall struct {
				RawInput struct {
					Command  string
					FilePath string `json:"file_path"`
				}
			}
			Options []struct{ Kind, OptionID string }
		}
		json.Unmarshal(ev.Params, &p)
		asked = append(asked, p.ToolCall.RawInput.Command+p.ToolCall.RawInput.FilePath)
		var ks []string
		for _, o := range p.Options {
			ks = append(ks, o.OptionID)
		}
		kinds = append(kinds, ks)
	}
	return asked, kinds
}

// toolResults are the tool results the model got, by tool_use id, from
// the requests the fake API saw.
func toolResults(t *testing.T, srv *fakeapi.Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range srv.Requests() {
		var body struct {
			Messages []struct {
				Content json.RawMessage
			}
		}
		json.Unmarshal(r.Body, &body)
		for _, m := range body.Messages {
			var blocks []struct {
				Type    string `json:"type"`
				ID      string `json:"tool_use_id"`
				Content json.RawMessage
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if b.Type == "tool_result" {
					out[b.ID] = string(b.Content)
				}
			}
		}
	}
	return out
}

// TestE2EServeExactGrantStaysExact drives the real claude through
// spbridge serve with the official ACP client: "always" on `rm -f *`
// covers exactly that command. Claude Code is not told a rule (its `*`
// would be a wildcard), so the later `rm -f keep/precious` reaches the
// editor, which rejects it, and it never runs; `rm -f *` again runs
// without asking the editor (spbridge answers Claude Code).
func TestE2EServeExactGrantStaysExact(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	os.MkdirAll(filepath.Join(work, "keep"), 0o755)
	precious := filepath.Join(work, "keep", "precious")
	for _, f := range []string{precious, filepath.Join(work, "a.tmp")} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	bash := func(id, cmd string) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: id, Name: "Bash", Input: map[string]any{"command": cmd, "description": "clean"}}}}
	}
	e.srv.Push(bash("toolu_glob", "rm -f *"), bash("toolu_keep", "rm -f keep/precious"),
		bash("toolu_glob2", "rm -f *"), fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Cleaned."}}})
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"permissions": []string{"allow_always", "reject_once", "reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "clean the scratch folder"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	asked, _ := permissionRequests(events)
	if want := []string{"rm -f *", "rm -f keep/precious"}; !slices.Equal(asked, want) {
		t.Errorf("the editor was asked about %q, want %q (the second `rm -f *` answered by the grant)", asked, want)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("keep/precious: %v: a command outside the grant ran", err)
	}
	results := toolResults(t, e.srv)
	if r := results["toolu_keep"]; !strings.Contains(r, "rejected") {
		t.Errorf("the model's result for the rejected rm: %s", r)
	}
	if r, ok := results["toolu_glob2"]; !ok || strings.Contains(r, "reject") || strings.Contains(r, "denied") {
		t.Errorf("the second `rm -f *` (covered by the grant): %q, %v", r, ok)
	}
}

// TestE2EServeNoAlwaysUnscoped drives the real claude through spbridge
// serve with the official ACP client: a Bash call whose command is only
// blanks offers no "always" at all.
func TestE2EServeNoAlwaysUnscoped(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	e.srv.Push(fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": "   ", "description": "nothing"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Done."}}})
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"permissions": []string{"reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "run nothing"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	// Claude Code may refuse a blank command itself; when it asks, the
	// request offers allow_once and reject_once only.
	_, kinds := permissionRequests(events)
	for _, ks := range kinds {
		if !slices.Equal(ks, []string{"allow_once", "reject_once"}) {
			t.Errorf("a blank command's options: %q", ks)
		}
	}
}

// TestE2EServeAllEdits drives the real claude through spbridge serve with
// the official ACP client: an edit's permission request offers "Allow all
// edits in this session"; chosen, the next edit inside the session's
// folder, of another file, is answered by spbridge (Claude Code asks, the
// editor does not), while an edit outside the folder and a read reach the
// editor and nothing of them runs before it answers (rejected: the file is
// not written). The session's mode stays as it was: Claude Code's
// acceptEdits would also let file commands through.
func TestE2EServeAllEdits(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s\n"), 0o600)
	first, second, third := filepath.Join(work, "first.txt"), filepath.Join(work, "second.txt"), filepath.Join(outside, "third.txt")
	write := func(id, path, content string) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: id, Name: "Write", Input: map[string]any{"file_path": path, "content": content}}}}
	}
	e.srv.Push(write("toolu_first", first, "one\n"), write("toolu_second", second, "two\n"), write("toolu_third", third, "three\n"),
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_read", Name: "Read", Input: map[string]any{"file_path": filepath.Join(outside, "secret.txt")}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Written where allowed."}}})
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []any{map[string]any{"optionId": "allow_all_edits"}, "reject_once", "reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "write the files"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	asked, kinds := permissionRequests(events)
	if len(asked) < 2 || asked[0] != first || asked[1] != third {
		t.Errorf("the editor was asked about %q, want %s, %s (and the read, if Claude Code asks)", asked, first, third)
	}
	for i, ks := range kinds[1:] {
		if slices.Contains(ks, "allow_all_edits") {
			t.Errorf("all edits offered on %s, outside the session's folder: %q", asked[i+1], ks)
		}
	}
	kindsOf, _ := updatesOf(events)
	if slices.Contains(kindsOf, "current_mode_update") {
		t.Error("the mode changed: all edits must not put Claude Code into acceptEdits")
	}
	for path, want := range map[string]string{first: "one\n", second: "two\n"} {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", path, got, err)
		}
	}
	if _, err := os.Stat(third); err == nil {
		t.Errorf("%s was written: an edit outside the folder ran without the editor's yes", third)
	}
	if r := toolResults(t, e.srv)["toolu_read"]; strings.Contains(r, "s\\n") && len(asked) > 2 {
		t.Errorf("the rejected read reached the model: %s", r)
	}
	// Claude Code asked each time; spbridge answered the second Write.
	cards := e.conv().ApprovalCards
	approvals := 0
	for _, it := range e.conv().Items {
		if it.Type() == archive.TypeToolApproval {
			approvals++
		}
	}
	if approvals < 3 {
		t.Errorf("%d toolApproval items (cards %v), want Claude Code to ask about each edit", approvals, cards)
	}
}
