package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// rewindServe is spbridge serve with one session on a package, driven
// line by line: its prompts, and the user items it told.
type rewindServe struct {
	*serveProc
	t    *testing.T
	pkg  string
	next int
}

func openRewindServe(t *testing.T, e *e2e, backend string) *rewindServe {
	t.Helper()
	p := &rewindServe{serveProc: startServe(t, e), t: t, pkg: e.pkg, next: 2}
	open := map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": backend}}}
	p.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}}},
		map[string]any{"id": 1, "method": "session/new", "params": open})
	if m := p.response(1); m["error"] != nil {
		t.Fatalf("session/new: %v", m)
	}
	return p
}

// call sends a request of the session and returns its answer.
func (p *rewindServe) call(method string, params map[string]any) map[string]any {
	p.t.Helper()
	p.next++
	params["sessionId"] = p.pkg
	p.write(map[string]any{"id": p.next, "method": method, "params": params})
	return p.response(float64(p.next))
}

func (p *rewindServe) prompt(text string) {
	p.t.Helper()
	m := p.call("session/prompt", map[string]any{"prompt": []any{map[string]any{"type": "text", "text": text}}})
	if r, _ := m["result"].(map[string]any); r["stopReason"] != "end_turn" {
		p.t.Fatalf("%s: %v\nstderr:\n%s", text, m, p.stderr.String())
	}
}

func (p *rewindServe) users() []string {
	var ids []string
	for _, m := range p.seen {
		params, _ := m["params"].(map[string]any)
		it, _ := params["item"].(map[string]any)
		if m["method"] == "_spbridge/item" && params["op"] == "add" && it["type"] == "user" {
			ids = append(ids, fmt.Sprint(it["id"]))
		}
	}
	return ids
}

// testRewindFiles: two turns, the second of which changed notes.txt and
// created new.txt; the test then changes new.txt itself. A rewind of both
// halves to before the second turn (a dry run first) puts notes.txt back
// byte for byte, leaves new.txt as a conflict, and cuts the conversation;
// the undo puts notes.txt as the turn left it and the conversation back.
func testRewindFiles(t *testing.T, p *rewindServe, work, edited string) {
	users := p.users()
	if len(users) != 2 {
		t.Fatalf("user items %v", users)
	}
	notes, created := filepath.Join(work, "notes.txt"), filepath.Join(work, "new.txt")
	if got := readFile(notes); got != edited {
		t.Fatalf("the turn left notes.txt %q", got)
	}
	os.WriteFile(created, []byte("changed by the user\n"), 0o644)
	dry := p.call("_session/rewind", map[string]any{"messageId": users[1], "dryRun": true})
	res, _ := dry["result"].(map[string]any)
	files, _ := res["files"].(map[string]any)
	if fmt.Sprint(files["restored"]) != fmt.Sprint([]any{notes}) || !strings.Contains(fmt.Sprint(files["conflicts"]), created) || files["rewound"] != false {
		t.Fatalf("dry run: %v", dry)
	}
	if readFile(notes) != edited {
		t.Fatal("the dry run changed notes.txt")
	}
	m := p.call("_session/rewind", map[string]any{"messageId": users[1]})
	res, _ = m["result"].(map[string]any)
	files, _ = res["files"].(map[string]any)
	conv, _ := res["conversation"].(map[string]any)
	if files["rewound"] != true || conv["rewound"] != true {
		t.Fatalf("rewind: %v", m)
	}
	if got := readFile(notes); got != "alpha\nbeta\ngamma\n" {
		t.Errorf("after the rewind notes.txt = %q", got)
	}
	if got := readFile(created); got != "changed by the user\n" {
		t.Errorf("the conflict was not left alone: new.txt = %q", got)
	}
	m = p.call("_session/rewind", map[string]any{"undo": true})
	res, _ = m["result"].(map[string]any)
	if c, _ := res["conversation"].(map[string]any); c["undone"] != true {
		t.Fatalf("undo: %v", m)
	}
	if got := readFile(notes); got != edited {
		t.Errorf("after the undo notes.txt = %q, want %q", got, edited)
	}
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<none>"
	}
	return string(b)
}

// TestE2ERewindFiles: _session/rewind with the files, through spbridge
// serve with the real claude (Edit and Write) and the real codex
// (apply_patch): the files back byte for byte, a file the user changed
// since reported and left, and the undo.
func TestE2ERewindFiles(t *testing.T) {
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		e := newE2E(t)
		work := filepath.Dir(e.pkg)
		notes := filepath.Join(work, "notes.txt")
		os.WriteFile(notes, []byte("alpha\nbeta\ngamma\n"), 0o644)
		e.srv.Push(fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "ANSWER-one"}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": notes}}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "BETA"}}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": filepath.Join(work, "new.txt"), "content": "new\n"}}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Done."}}})
		p := openRewindServe(t, e, "claude")
		if m := p.call("session/set_mode", map[string]any{"modeId": "acceptEdits"}); m["error"] != nil {
			t.Fatalf("set_mode: %v", m)
		}
		p.prompt("MARK-one")
		p.prompt("MARK-two: edit and write")
		testRewindFiles(t, p, work, "alpha\nBETA\ngamma\n")
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		patch := "*** Begin Patch\n*** Add File: new.txt\n+new\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n"
		e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("ANSWER-one")}},
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall(patch)}},
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
		work := filepath.Dir(e.pkg)
		os.WriteFile(filepath.Join(work, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644)
		p := openRewindServe(t, e, "codex")
		p.prompt("MARK-one")
		p.prompt("MARK-two: patch")
		testRewindFiles(t, p, work, "alpha\nBETA\ngamma\n")
	})
}

// TestE2ERewindMoved: with the real claude (spbridge run, which saves the
// package and so keeps its checkpoints in it), a turn edits notes.txt and writes a file into folders it makes; the folder
// holding the package and those files is then moved, and spbridge rewind
// --to 1 on the package where it now is puts notes.txt back byte for byte
// there, removes the created file and its folders, and writes nothing
// where the folder was.
func TestE2ERewindMoved(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	notes := filepath.Join(work, "notes.txt")
	os.WriteFile(notes, []byte("alpha\nbeta\ngamma\n"), 0o644)
	e.srv.Push(fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": notes}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "BETA"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": filepath.Join(work, "a", "b", "new.txt"), "content": "new\n"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Done."}}})
	e.run(nil, "--allow-tool", "Edit", "--allow-tool", "Write", "MARK-one: edit and write")
	if e.code != 0 {
		e.fail("the turn")
	}
	if readFile(notes) != "alpha\nBETA\ngamma\n" || readFile(filepath.Join(work, "a", "b", "new.txt")) != "new\n" {
		t.Fatalf("the turn left notes.txt %q, a/b/new.txt %q", readFile(notes), readFile(filepath.Join(work, "a", "b", "new.txt")))
	}

	moved := filepath.Join(filepath.Dir(work), "moved", "work")
	os.MkdirAll(filepath.Dir(moved), 0o755)
	if err := os.Rename(work, moved); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(spbridgeBin(t), "rewind", filepath.Join(moved, filepath.Base(e.pkg)), "--to", "1")
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("spbridge rewind: %v\n%s", err, out)
	}
	for _, want := range []string{"restored " + filepath.Join(moved, "notes.txt"), "deleted " + filepath.Join(moved, "a", "b", "new.txt"),
		"removed folder " + filepath.Join(moved, "a", "b"), "removed folder " + filepath.Join(moved, "a")} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("spbridge rewind did not say %q:\n%s", want, out)
		}
	}
	if got := readFile(filepath.Join(moved, "notes.txt")); got != "alpha\nbeta\ngamma\n" {
		t.Errorf("notes.txt = %q where the folder now is", got)
	}
	if _, err := os.Lstat(filepath.Join(moved, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folders the turn made are still there: %v", err)
	}
	if _, err := os.Lstat(work); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the rewind wrote where the folder was: %v", err)
	}
}
