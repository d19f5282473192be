package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
)

// cliStores copies the recorded sessions of internal/claude and
// internal/codex (their testdata/history) into a Claude Code config folder
// and a Codex home of their own, named by the environment as the CLIs read
// them.
func cliStores(t *testing.T) {
	t.Helper()
	root := t.TempDir()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// Each session's time, so that the list's order is known.
	hours := map[string]int{"ca0632fd-a8b0-4a1c-9271-caa77e5d4c40.jsonl": 4,
		"rollout-2026-12-02T05-37-56-01a23542-7241-71b3-8ca5-629e22deb51c.jsonl": 3,
		"rollout-2026-12-02T05-37-53-01a23542-6502-7f33-80f4-cae31bfb0ab9.jsonl": 2}
	for _, from := range []string{"claude", "codex"} {
		to := from
		src := filepath.Join("..", "..", "internal", from, "testdata", "history")
		err := filepath.Walk(filepath.Join(src, from), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(src, from), p)
			dst := filepath.Join(root, to, rel)
			data, err := os.ReadFile(p)
			if err == nil {
				err = os.MkdirAll(filepath.Dir(dst), 0o755)
			}
			if err == nil {
				err = os.WriteFile(dst, data, 0o644)
			}
			if err == nil {
				mod := base.Add(time.Duration(hours[filepath.Base(p)]) * time.Hour)
				err = os.Chtimes(dst, mod, mod)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(root, "claude"))
	t.Setenv("CODEX_HOME", filepath.Join(root, "codex"))
	t.Setenv("SPBRIDGE_STATE_DIR", filepath.Join(root, "state")) // the listing's head cache
}

// call runs one command function as run does, giving its output and error.
func call(fn func(context.Context, stdio, []string) error, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := fn(context.Background(), stdio{in: strings.NewReader(""), out: &out, err: &errb}, args)
	return out.String(), errb.String(), err
}

// TestConversationListCLI: the CLIs' sessions, newest first, for every
// folder or one; as JSON; a bad backend is a usage error; without --cli the
// packages are listed as before.
func TestConversationListCLI(t *testing.T) {
	cliStores(t)
	out, _, err := call(runConversationListAll, "--cli")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("list:\n%s", out)
	}
	for i, want := range []string{"claude\tca0632fd-a8b0-4a1c-9271-caa77e5d4c40\t", "codex\t01a23542-7241-71b3-8ca5-629e22deb51c\t", "codex\t01a23542-6502-7f33-80f4-cae31bfb0ab9\t"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %q, want %q…", i, lines[i], want)
		}
	}
	if !strings.HasSuffix(lines[0], "\tSay hello") || !strings.HasSuffix(lines[1], "\tWhat colour is this?") {
		t.Errorf("titles:\n%s", out)
	}
	out, _, err = call(runConversationListAll, "--cli", "--cwd", "/work/project", "--backend", "codex", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil || v["backend"] != "codex" || v["cwd"] != "/work/project" || v["path"] == "" {
			t.Errorf("json line %q: %v", l, err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d codex sessions in /work/project:\n%s", n, out)
	}
	if out, _, _ := call(runConversationListAll, "--cli", "--cwd", t.TempDir()); out != "" {
		t.Errorf("another folder:\n%s", out)
	}
	var uerr *usageError
	if _, _, err := call(runConversationListAll, "--cli", "--backend", "other"); !errors.As(err, &uerr) {
		t.Errorf("bad backend: %v", err)
	}
	// Without --cli: the packages under a folder.
	if out, _, err := call(runConversationListAll, t.TempDir()); err != nil || out != "" {
		t.Errorf("packages: %q %v", out, err)
	}
}

// newPackage makes an empty document package.
func newPackage(t *testing.T) string {
	t.Helper()
	pkg := filepath.Join(t.TempDir(), "Poster.silverpoint")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return pkg
}

// snapshotDir is every file under dir with its bytes.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			data, _ := os.ReadFile(p)
			files[p] = string(data)
		}
		return err
	})
	return files
}

// TestImport: a Claude Code session by its id goes into an empty package
// (its images into agent/images/); a second import is refused and changes
// nothing, unless --replace; a Codex rollout by its file; an unknown id
// and a file that is not a session fail and leave the package alone.
func TestImport(t *testing.T) {
	cliStores(t)
	pkg := newPackage(t)
	out, _, err := call(runImport, "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40", pkg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "wrote agent/conversation.json") || !strings.Contains(out, "imported Claude Code session ca0632fd-a8b0-4a1c-9271-caa77e5d4c40: 6 messages") {
		t.Errorf("output:\n%s", out)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil || p.Unreadable != "" {
		t.Fatal(err, p.Unreadable)
	}
	if c := p.Conv; c.Provider != "claude-code" || c.Model != "claude-opus-5-5" || c.Items[0].String("text") != "Say hello" {
		t.Errorf("provider %q model %q first %q", c.Provider, c.Model, c.Items[0].String("text"))
	}
	if imgs, _ := filepath.Glob(filepath.Join(pkg, "agent", "images", "*.png")); len(imgs) != 1 {
		t.Errorf("images %q", imgs) // the same red picture, read and sent: stored once
	}
	if problems, err := archive.Check(pkg); err != nil || len(problems) > 0 {
		t.Errorf("fsck: %v %q", err, problems)
	}

	before := snapshotDir(t, pkg)
	rollout := filepath.Join(os.Getenv("CODEX_HOME"), "sessions", "2026", "12", "02", "rollout-2026-12-02T05-37-53-01a23542-6502-7f33-80f4-cae31bfb0ab9.jsonl")
	if _, _, err := call(runImport, rollout, pkg); err == nil || !strings.Contains(err.Error(), "already holds a conversation of") {
		t.Errorf("second import: %v", err)
	}
	for _, args := range [][]string{{"no-such-session", pkg}, {"--backend", "codex", "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40", pkg},
		{filepath.Join(pkg, "document.json"), pkg}} {
		if _, _, err := call(runImport, append([]string{"--replace"}, args...)...); err == nil {
			t.Errorf("%q imported", args)
		}
	}
	if after := snapshotDir(t, pkg); len(after) != len(before) {
		t.Errorf("the package changed: %d files, then %d", len(before), len(after))
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s changed", k)
			}
		}
	}

	out, _, err = call(runImport, "--replace", rollout, pkg)
	if err != nil || !strings.Contains(out, "imported Codex session 01a23542-6502-7f33-80f4-cae31bfb0ab9: 2 messages") ||
		!strings.Contains(out, "removed agent/images/") {
		t.Errorf("replace: %v\n%s", err, out)
	}
	p, _ = archive.Open(pkg, archive.KindDocument, true)
	if p.Conv.Provider != "codex" || len(p.Conv.Items) != 10 {
		t.Errorf("after replace: %s, %d items", p.Conv.Provider, len(p.Conv.Items))
	}
	if data, err := os.ReadFile(rollout); err != nil || len(data) == 0 {
		t.Errorf("the rollout: %v", err) // only read
	}

	var uerr *usageError
	for _, args := range [][]string{{pkg}, {"a", "b", "c"}, {"--backend", "x", "a", pkg}} {
		if _, _, err := call(runImport, args...); !errors.As(err, &uerr) {
			t.Errorf("%q: %v", args, err)
		}
	}
	none := filepath.Join(t.TempDir(), "none")
	if _, _, err := call(runImport, "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40", filepath.Join(none, "New.silverpoint")); err == nil ||
		err.Error() != "cannot make the package "+filepath.Join(none, "New.silverpoint")+": the folder "+none+" does not exist" {
		t.Errorf("a package in a missing folder: %v", err)
	}
	if _, err := os.Stat(none); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the missing folder: %v", err)
	}
}
