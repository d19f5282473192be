package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
)

// copyTree copies the folder src to dst, as cp -r does.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAuditLogPerCopy: copies of a package (cp -r) each get an audit log of
// their own at their first turn after the copy, whose first record names
// the log and head it was copied from; audit show PKG shows that
// package's turns only (--ancestry: those of the logs it was copied from
// first, up to the copy); a moved package keeps its log; audit verify
// passes on each, checking a copy's parent at the head it names.
func TestAuditLogPerCopy(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	root := t.TempDir()
	exe, _ := os.Executable()
	turn := func(pkg, msg string) {
		t.Helper()
		cmd := exec.Command(spbridgeBin(t), "run", pkg, msg)
		cmd.Env = append(os.Environ(), fakeEditEnv+"=1", "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_STATE_DIR="+state, "GORACE=atexit_sleep_ms=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %s %q: %v\n%s", pkg, msg, err, out)
		}
	}
	show := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"audit", "show"}, args...)...)
		if code != 0 {
			t.Fatalf("audit show %q = %d: %s", args, code, errOut)
		}
		return out
	}
	// users is the user lines of a show's output, in order.
	users := func(out string) []string {
		var u []string
		for _, l := range strings.Split(out, "\n") {
			if s, ok := strings.CutPrefix(l, "  User: "); ok {
				u = append(u, s)
			}
		}
		return u
	}
	want := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: turns %q, want %q", what, got, want)
		}
	}
	verify := func(pkg string) string {
		t.Helper()
		code, out, errOut := runCmd(t, "audit", "verify", pkg)
		if code != 0 {
			t.Errorf("audit verify %s = %d: %s%s", pkg, code, out, errOut)
		}
		return out
	}

	orig := filepath.Join(root, "a", "Poster.silverpoint")
	os.MkdirAll(orig, 0o755)
	os.WriteFile(filepath.Join(orig, "document.json"), []byte("{}"), 0o644)
	turn(orig, "one in the original")
	copy1 := filepath.Join(root, "b", "Poster.silverpoint")
	copy2 := filepath.Join(root, "c", "Poster copy.silverpoint")
	copyTree(t, orig, copy1)
	copyTree(t, orig, copy2)
	turn(copy1, "one in copy 1")
	turn(orig, "two in the original")
	turn(copy2, "one in copy 2")
	turn(copy1, "two in copy 1")

	want("the original", users(show(orig)), "one in the original", "two in the original")
	want("copy 1", users(show(copy1)), "one in copy 1", "two in copy 1")
	want("copy 2", users(show(copy2)), "one in copy 2")
	anc := show("--ancestry", copy1)
	want("copy 1 with its ancestry", users(anc), "one in the original", "one in copy 1", "two in copy 1")
	if !strings.Contains(anc, "which it was copied from (up to record 1)") || !strings.Contains(anc, "the first turn of a copy: its log goes on from log ") {
		t.Errorf("show --ancestry:\n%s", anc)
	}
	logs := map[string]string{}
	for _, pkg := range []string{orig, copy1, copy2} {
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			t.Fatal(err)
		}
		logs[pkg] = p.Conv.AuditLog()
		if p.Conv.Identity() != logs[orig] {
			t.Errorf("%s: identity %s, want the original's %s (a copy keeps its conversation)", pkg, p.Conv.Identity(), logs[orig])
		}
	}
	if logs[copy1] == logs[orig] || logs[copy2] == logs[orig] || logs[copy1] == logs[copy2] {
		t.Errorf("logs %q: want one each", logs)
	}
	if out := verify(orig); strings.Contains(out, "copied from") {
		t.Errorf("verify of the original: %q", out)
	}
	for _, c := range []string{copy1, copy2} {
		if out := verify(c); !strings.Contains(out, "copied from log "+logs[orig]+" at record ") || !strings.Contains(out, "that log holds that head") {
			t.Errorf("verify %s: %q", c, out)
		}
	}

	// A moved package keeps its log.
	moved := filepath.Join(root, "d", "Poster.silverpoint")
	os.MkdirAll(filepath.Dir(moved), 0o755)
	if err := os.Rename(orig, moved); err != nil {
		t.Fatal(err)
	}
	turn(moved, "three after the move")
	want("the moved original", users(show(moved)), "one in the original", "two in the original", "three after the move")
	p, _ := archive.Open(moved, archive.KindDocument, true)
	if p.Conv.AuditLog() != logs[orig] || p.Conv.Extra[archive.FieldAuditLog] != nil {
		t.Errorf("the moved package names log %s (%v), want %s", p.Conv.AuditLog(), p.Conv.Extra[archive.FieldAuditLog], logs[orig])
	}
	verify(moved)
	// Its copies still verify against it: the head they were copied at
	// is still in its log.
	verify(copy1)

	// A parent log whose records were cut below the head a copy names:
	// the copy's verify says so.
	path := filepath.Join(state, "audit", logs[orig]+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitAfterN(string(data), "\n", 2)[0]
	os.WriteFile(path, []byte(strings.Replace(first, "one in the original", "one in the 0riginal", 1)+strings.SplitAfterN(string(data), "\n", 2)[1]), 0o600)
	if code, _, errOut := runCmd(t, "audit", "verify", copy1); code != 1 || !strings.Contains(errOut, "which "+filepath.Join(state, "audit", logs[copy1]+".jsonl")+" was copied from") {
		t.Errorf("verify of a copy whose parent was edited = %d %q", code, errOut)
	}
}

// TestAuditShowShared: a log that copies shared before each got its own
// (records an earlier spbridge wrote, each naming the package it ran in):
// audit show PKG leaves out the turns of the other packages that still
// exist, counting them on standard error, and keeps those naming a folder
// gone (the package before a move); --id shows the log whole.
func TestAuditShowShared(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	root := t.TempDir()
	const id = "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30"
	mk := func(name string) string {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(p, "agent"), 0o755)
		os.WriteFile(filepath.Join(p, "document.json"), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(p, "agent", "conversation.json"), []byte(`{"formatVersion":1,"items":[{"id":"`+id+`","type":"user","text":"hi"}]}`), 0o644)
		return p
	}
	poster, copied := mk("Poster.silverpoint"), mk("Poster copy.silverpoint")
	path, _ := audit.Path(state, id)
	for _, r := range []struct{ user, pkg string }{
		{"before the move", filepath.Join(root, "gone", "Poster.silverpoint")},
		{"in the poster", poster},
		{"in the copy", copied},
		{"in the poster again", poster},
	} {
		rec := map[string]any{"time": "2026-11-30T00:00:00Z", "backend": "claude", "status": "completed", "user": r.user, "package": r.pkg,
			"items": []any{map[string]any{"id": "U", "type": "user", "text": r.user}}}
		if err := audit.Append(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCmd(t, "audit", "show", poster)
	if code != 0 || strings.Contains(out, "in the copy") || !strings.Contains(out, "before the move") || !strings.Contains(out, "in the poster again") ||
		errOut != "spbridge: left out 1 turn that copies of this package ran in its log before each copy got a log of its own (--id "+id+" shows the log whole)\n" {
		t.Errorf("show the poster = %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "audit", "show", copied)
	if code != 0 || strings.Contains(out, "in the poster") || !strings.Contains(out, "in the copy") || !strings.Contains(errOut, "left out 2 turns") {
		t.Errorf("show the copy = %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "audit", "show", "--id", id); code != 0 || strings.Count(out, "  User: ") != 4 || errOut != "" {
		t.Errorf("show --id = %d\n%s%s", code, out, errOut)
	}
}
