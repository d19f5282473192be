package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/checkpoint"
	"spbridge/internal/fakeapi"
)

// fileChange is one file of a turn's change set, as a test compares it.
type fileChange struct {
	path           string
	kind           checkpoint.Kind
	added, removed int
}

// checkpointed is each turn's change set from the package's checkpoints,
// in turn order, keyed by the notice items of the saved conversation
// ("Changed ..."), which it checks name them.
func checkpointed(t *testing.T, e *e2e) [][]fileChange {
	t.Helper()
	st, err := checkpoint.Open(e.pkg, checkpoint.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.Entries()
	if err != nil {
		t.Fatalf("checkpoints: %v", err)
	}
	var notices []string
	for _, it := range e.conv().Items {
		if it.Type() == archive.TypeNotice && strings.HasPrefix(it.String("text"), "Changed ") {
			notices = append(notices, it.ID())
		}
	}
	var out [][]fileChange
	for i, en := range entries {
		if i >= len(notices) || en.Key != notices[i] {
			t.Fatalf("entry %d is keyed %s, the notices are %v", i, en.Key, notices)
		}
		var fs []fileChange
		for _, f := range en.Files {
			fs = append(fs, fileChange{f.Path, f.Change, f.Added, f.Removed})
		}
		out = append(out, fs)
	}
	return out
}

// rewindAll undoes every turn of the package's checkpoints.
func rewindAll(t *testing.T, pkg string) {
	t.Helper()
	st, err := checkpoint.Open(pkg, checkpoint.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.Entries()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := st.Plan([]string{entries[0].Key}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Conflicts()) > 0 || len(plan.Missing) > 0 {
		t.Fatalf("plan %+v", plan)
	}
	if _, err := st.Apply(plan); err != nil {
		t.Fatal(err)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sameFiles checks that dir holds exactly files (besides the package).
func sameFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	list, _ := os.ReadDir(dir)
	var names []string
	for _, e := range list {
		if e.Name() != "Poster.silverpoint" {
			names = append(names, e.Name())
		}
	}
	var want []string
	for n, data := range files {
		want = append(want, n)
		if got, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(got) != data {
			t.Errorf("%s = %q, %v after the rewind, want %q", n, got, err, data)
		}
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("files %v after the rewind, want %v", names, want)
	}
}

// TestE2ECheckpointsClaude: with the real claude, a turn that edits with
// the Edit and Write tools and one that changes files through Bash (sed
// -i, rm, a script writing a file, mkdir -p and a file in the new
// folder) each end with a notice of exactly what they changed, kept in
// the package's checkpoints; rewinding both puts every file back byte for
// byte and removes the created ones, and the folders made for them.
func TestE2ECheckpointsClaude(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	notes := filepath.Join(work, "notes.txt")
	initial := map[string]string{"notes.txt": "alpha\nbeta\ngamma\n", "list.txt": "1\n2\n3\n", "old.txt": "old\n"}
	writeFiles(t, work, initial)
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": notes}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta\n", "new_string": "BETA\nDELTA\n"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": filepath.Join(work, "new.txt"), "content": "one\ntwo\n"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Edited."}}})
	e.run(nil, "--allow-tool", "Edit", "--allow-tool", "Write", "edit the notes")
	if e.code != 0 {
		e.fail("the edit turn")
	}
	e.srv.Push(bashRound(`sed -i 's/2/TWO/' list.txt && rm old.txt && sh -c 'printf "x\ny\nz\n" > made.txt' && mkdir -p a/b && echo x > a/b/c.txt`)...)
	e.run(nil, "--allow-tool", "Bash", "change them in the shell")
	if e.code != 0 {
		e.fail("the shell turn")
	}
	got := checkpointed(t, e)
	want := [][]fileChange{
		{{"new.txt", checkpoint.Created, 2, 0}, {"notes.txt", checkpoint.Modified, 2, 1}},
		{{"a/b/c.txt", checkpoint.Created, 1, 0}, {"list.txt", checkpoint.Modified, 1, 1}, {"made.txt", checkpoint.Created, 3, 0}, {"old.txt", checkpoint.Deleted, 0, 1}},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		e.fail("change sets\n got %+v\nwant %+v", got, want)
	}
	items := e.items()
	if !containsStr(items, "notice: Changed 4 files: a/b/c.txt (created, +1), list.txt (+1 −1), made.txt (created, +3), old.txt (deleted).") {
		e.fail("items %q", items)
	}
	rewindAll(t, e.pkg) // the folders a/b and a the shell made go too
	sameFiles(t, work, initial)
}

// TestE2ECheckpointsCodex: with the real codex on both transports, a turn
// that changes files through exec_command (sed -i, rm, mkdir -p and a file
// in the new folder) and apply_patch
// ends with a notice of exactly what it changed, kept in the package's
// checkpoints; rewinding it puts every file back.
func TestE2ECheckpointsCodex(t *testing.T) { transports(t, testCheckpointsCodex) }

func testCheckpointsCodex(t *testing.T, transport string) {
	patch := "*** Begin Patch\n*** Add File: made-by-codex.txt\n+hello from the patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n"
	e, _ := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall("sed -i 's/2/TWO/' list.txt && rm old.txt && mkdir -p a/b && echo x > a/b/c.txt")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall(patch)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
	work := filepath.Dir(e.pkg)
	initial := map[string]string{"notes.txt": "alpha\nbeta\ngamma\n", "list.txt": "1\n2\n3\n", "old.txt": "old\n"}
	writeFiles(t, work, initial)
	e.run(nil, "--backend", "codex", "--codex-transport", transport, "change the files")
	if e.code != 0 {
		e.fail("the turn")
	}
	got := checkpointed(t, e)
	want := [][]fileChange{{
		{"a/b/c.txt", checkpoint.Created, 1, 0}, {"list.txt", checkpoint.Modified, 1, 1}, {"made-by-codex.txt", checkpoint.Created, 1, 0},
		{"notes.txt", checkpoint.Modified, 1, 1}, {"old.txt", checkpoint.Deleted, 0, 1},
	}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		e.fail("change sets\n got %+v\nwant %+v", got, want)
	}
	rewindAll(t, e.pkg)
	sameFiles(t, work, initial)
}

// TestE2EServeCheckpoints: over ACP with the real claude and the official
// client (which validates every message), a turn that edits a file and
// writes another answers its prompt with the change set in
// _meta.spbridge.changes, after a completed edit call "Files changed in
// this turn" whose diffs are the files before and after (no old text for
// the created one).
func TestE2EServeCheckpoints(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	notes := filepath.Join(work, "notes.txt")
	writeFiles(t, work, map[string]string{"notes.txt": "alpha\nbeta\n"})
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": notes}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "BETA"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": filepath.Join(work, "new.txt"), "content": "new\n"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Done."}}})
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"permissions": []string{"allow_once", "allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "edit and write"},
			map[string]any{"op": "closeStdin"},
		},
	})
	r := response(t, events, 2)
	sp, _ := r["_meta"].(map[string]any)["spbridge"].(map[string]any)
	changes, _ := sp["changes"].(map[string]any)
	files, _ := changes["files"].([]any)
	var got []string
	for _, f := range files {
		f := f.(map[string]any)
		got = append(got, f["path"].(string)+" "+f["change"].(string))
	}
	if !slices.Equal(got, []string{"new.txt created", "notes.txt modified"}) {
		t.Fatalf("_meta.spbridge.changes %v", changes)
	}
	var diffs []map[string]any
	for _, ev := range events {
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct{ Update map[string]any }
		json.Unmarshal(ev.Params, &p)
		if p.Update["title"] != "Files changed in this turn" {
			continue
		}
		if p.Update["kind"] != "edit" || p.Update["status"] != "completed" {
			t.Errorf("the changes' call %v", p.Update)
		}
		for _, c := range p.Update["content"].([]any) {
			if c := c.(map[string]any); c["type"] == "diff" {
				diffs = append(diffs, c)
			}
		}
	}
	if len(diffs) != 2 || diffs[0]["path"] != filepath.Join(work, "new.txt") || diffs[0]["oldText"] != nil || diffs[0]["newText"] != "new\n" ||
		diffs[1]["oldText"] != "alpha\nbeta\n" || diffs[1]["newText"] != "alpha\nBETA\n" {
		t.Fatalf("diffs %v", diffs)
	}
}
