package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// grantRequests are the session/request_permission requests of events:
// each one's command and folder as the request shows them (Codex's cwd),
// and the name of its allow_always option ("" when none).
func grantRequests(events []acpEvent) (asked []string, always []string) {
	for _, ev := range events {
		if ev.Event != "request" || ev.Method != "session/request_permission" {
			continue
		}
		var p struct {
			ToolCall struct{ RawInput struct{ Command, Cwd string } }
			Options  []struct{ OptionID, Name string }
		}
		json.Unmarshal(ev.Params, &p)
		asked = append(asked, strings.TrimSpace(p.ToolCall.RawInput.Command+" "+p.ToolCall.RawInput.Cwd))
		name := ""
		for _, o := range p.Options {
			if o.OptionID == "allow_always" {
				name = o.Name
			}
		}
		always = append(always, name)
	}
	return asked, always
}

// TestE2EServeCodexGrantFolder drives the real codex (app-server) through
// spbridge serve with the official ACP client: "always" on `rm -f *` run
// in work/build covers it there only. The same command in a folder
// outside the workspace is asked again (and rejected: its file stays), and
// so is the same command in work/build outside the sandbox; the option
// names the folder, and the sandbox when it is left. Codex's own session
// approval (acceptForSession) is keyed by folder and sandbox too: it asks
// again, and spbridge asks the editor.
func TestE2EServeCodexGrantFolder(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	rm := func(id, dir string, escalated bool) fakeapi.ResponsesReply {
		args := map[string]any{"cmd": "rm -f *", "workdir": dir}
		if escalated {
			args["sandbox_permissions"], args["justification"] = "require_escalated", "Clean it outside the sandbox?"
		}
		return fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: id, Arguments: args}}}
	}
	// build is given relative to the session's folder, as a model does.
	e, _ := newCodexE2E(t, rm("call_build", "build", false), rm("call_outside", outside, false),
		rm("call_escalated", "build", true), fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Cleaned.")}})
	work := filepath.Dir(e.pkg)
	build := filepath.Join(work, "build")
	os.MkdirAll(build, 0o755)
	for _, f := range []string{filepath.Join(build, "a.o"), filepath.Join(outside, "keep.txt")} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"permissions": []string{"allow_always", "reject_once", "reject_once", "reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "clean the build folders"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	asked, always := grantRequests(events)
	wantAsked := []string{"rm -f * " + build, "rm -f * " + outside, "rm -f * " + build}
	wantAlways := []string{"Always allow `rm -f *` in build in this session", "Always allow `rm -f *` in " + outside + " in this session",
		"Always allow `rm -f *` in build, also outside the sandbox in this session"}
	if !slices.Equal(asked, wantAsked) || !slices.Equal(always, wantAlways) {
		t.Errorf("the editor was asked about\n%q\nwith\n%q\nwant\n%q\nwith\n%q", asked, always, wantAsked, wantAlways)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Errorf("the file outside the workspace: %v (the grant of work/build covered another folder)", err)
	}
	if _, err := os.Stat(filepath.Join(build, "a.o")); err == nil {
		t.Error("build/a.o is still there: the granted command did not run")
	}
}

// TestE2EServeClaudeGrantFolder drives the real claude through spbridge
// serve with the official ACP client: "always" on `rm -f *` covers it in
// the session's folder, and a `cd ..` into the parent (one of the
// session's folders, where Claude Code would otherwise keep the shell)
// does not carry over to the next command: spbridge runs Claude Code so
// that every command starts in the session's folder, the one spbridge
// knows. The `rm -f *` after the `cd ..` runs there, unasked, and the
// parent folder's file stays; `pwd` after it prints the session's folder.
func TestE2EServeClaudeGrantFolder(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	parent := filepath.Dir(work)
	for _, f := range []string{filepath.Join(work, "a.tmp"), filepath.Join(parent, "parent.tmp")} {
		os.WriteFile(f, []byte("x"), 0o644)
	}
	bash := func(id, cmd string) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: id, Name: "Bash", Input: map[string]any{"command": cmd, "description": "clean"}}}}
	}
	e.srv.Push(bash("toolu_rm1", "rm -f *"), bash("toolu_cd", "cd .."), bash("toolu_rm2", "rm -f *"), bash("toolu_pwd", "pwd"),
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Cleaned."}}})
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		// rm -f *: always; cd .. and pwd, if Claude Code asks: once.
		"permissions": []string{"allow_always", "allow_once", "allow_once", "allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "additionalDirectories": []string{parent}, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "clean up, then the parent"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	asked, always := grantRequests(events)
	if n := slices.Index(asked, "rm -f *"); n != 0 || slices.Index(asked[1:], "rm -f *") >= 0 || always[0] != "Always allow `rm -f *` in the working folder in this session" {
		t.Errorf("the editor was asked about %q with %q: want `rm -f *` once, first, in the working folder", asked, always)
	}
	if _, err := os.Stat(filepath.Join(parent, "parent.tmp")); err != nil {
		t.Errorf("the parent folder's file: %v (`rm -f *` ran where it was not granted)", err)
	}
	results := toolResults(t, e.srv)
	if r := results["toolu_rm2"]; strings.Contains(r, "reject") || strings.Contains(r, "denied") {
		t.Errorf("the second `rm -f *`: %s", r)
	}
	if r, real := results["toolu_pwd"], mustEvalSymlinks(t, work); !strings.Contains(r, real) || strings.Contains(r, parent+`\n`) {
		t.Errorf("pwd after `cd ..`: %s, want %s", r, real)
	}
}

func mustEvalSymlinks(t *testing.T, path string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
