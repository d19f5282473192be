package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyFile copies src to dst (made with its folders) and sets its
// modification time to mod.
func copyFile(t testing.TB, src, dst string, mod time.Time) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	setFile(t, dst, data, mod)
}

func setFile(t testing.TB, dst string, data []byte, mod time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mod, mod); err != nil {
		t.Fatal(err)
	}
}

var base = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// store builds a Claude Code config folder and a Codex home in a temporary
// folder from the recorded sessions, with files that are not to be listed
// beside them, and returns the options naming them.
func store(t *testing.T) Options {
	t.Helper()
	root := t.TempDir()
	cl, cx := filepath.Join(root, "claude"), filepath.Join(root, "codex")
	proj := filepath.Join(cl, "projects", "-work-project")
	copyFile(t, claudeFixture, filepath.Join(proj, "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40.jsonl"), base.Add(3*time.Hour))
	// A session of another folder, with a title the user gave it.
	other := strings.ReplaceAll(claudeUser, `"cwd":"/w"`, `"cwd":"/elsewhere"`) + "\n" + claudeReply + "\n" +
		`{"type":"custom-title","customTitle":"My  own\ntitle","sessionId":"s2"}` + "\n"
	setFile(t, filepath.Join(cl, "projects", "-elsewhere", "s2.jsonl"), []byte(other), base.Add(2*time.Hour))
	// Not sessions: a subagent's file, a sidechain-only file, one with no
	// user message, a symbolic link out of the store.
	copyFile(t, "testdata/claude/projects/-work-project/ca0632fd-a8b0-4a1c-9271-caa77e5d4c40/subagents/agent-a0ad1535de6bf8694.jsonl",
		filepath.Join(proj, "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40", "subagents", "agent-a0ad1535de6bf8694.jsonl"), base.Add(5*time.Hour))
	side := strings.Replace(claudeUser, `"type":"user"`, `"type":"user","isSidechain":true`, 1)
	setFile(t, filepath.Join(proj, "side.jsonl"), []byte(side+"\n"), base.Add(5*time.Hour))
	setFile(t, filepath.Join(proj, "empty.jsonl"), []byte(`{"type":"summary","summary":"x","leafUuid":"l"}`+"\n"+claudeReply+"\n"), base.Add(5*time.Hour))
	setFile(t, filepath.Join(proj, "old.jsonl"), []byte(`{"type":"summary","summary":"x","leafUuid":"l"}`+"\n"), base.Add(-time.Hour))
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	setFile(t, outside, []byte(claudeUser+"\n"), base)
	if err := os.Symlink(outside, filepath.Join(proj, "link.jsonl")); err != nil {
		t.Log(err)
	}
	day := filepath.Join(cx, "sessions", "2026", "12", "02")
	copyFile(t, codexFixture, filepath.Join(day, filepath.Base(codexFixture)), base.Add(4*time.Hour))
	copyFile(t, codexImage, filepath.Join(day, filepath.Base(codexImage)), base.Add(1*time.Hour))
	return Options{ClaudeDir: cl, CodexHome: cx}
}

func describe(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Backend+" "+e.ID+" "+e.Cwd+" "+e.Title+" "+e.UpdatedAt.UTC().Format("15:04"))
	}
	return strings.Join(s, "\n")
}

// TestList: every session of both stores, newest first, with its folder
// and title; files that are not sessions left out.
func TestList(t *testing.T) {
	opts := store(t)
	got, err := List(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := "codex 01a23542-6502-7f33-80f4-cae31bfb0ab9 /work/project Say hello 14:00\n" +
		"claude ca0632fd-a8b0-4a1c-9271-caa77e5d4c40 /work/project Say hello 13:00\n" +
		"claude s2 /elsewhere My own title 12:00\n" +
		"codex 01a23542-7241-71b3-8ca5-629e22deb51c /work/project What colour is this? 11:00"
	if d := describe(got); d != want {
		t.Errorf("list\n%s\nwant\n%s", d, want)
	}
	// One folder, one CLI.
	opts.Cwd = "/elsewhere"
	if got, _ := List(opts); describe(got) != "claude s2 /elsewhere My own title 12:00" {
		t.Errorf("cwd: %s", describe(got))
	}
	opts.Cwd, opts.Backend = "/work/project", Codex
	if got, _ := List(opts); len(got) != 2 || got[0].Backend != Codex || got[1].Backend != Codex {
		t.Errorf("codex in /work/project: %s", describe(got))
	}
	opts.Cwd, opts.Backend = "/nowhere", ""
	if got, err := List(opts); len(got) != 0 || err != nil {
		t.Errorf("another folder: %s %v", describe(got), err)
	}
}

// TestListPages: pages of one entry follow one another to the last,
// which has no cursor; a bad cursor is an error.
func TestListPages(t *testing.T) {
	opts := store(t)
	all, _ := List(opts)
	var got []Entry
	cursor := ""
	for range 10 {
		p, err := ListPage(opts, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Entries...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if describe(got) != describe(all) || cursor != "" {
		t.Errorf("pages\n%s\nall\n%s\ncursor %q", describe(got), describe(all), cursor)
	}
	// The last page, whose files after it are not sessions, has no cursor.
	p, err := ListPage(opts, "", len(all))
	if err != nil || len(p.Entries) != len(all) || p.NextCursor != "" {
		t.Errorf("one page: %d entries, cursor %q, %v", len(p.Entries), p.NextCursor, err)
	}
	if _, err := ListPage(opts, "!!", 1); err == nil {
		t.Error("a bad cursor was taken")
	}
}

// TestListMissingStores: no store lists nothing, without an error.
func TestListMissingStores(t *testing.T) {
	dir := t.TempDir()
	got, err := List(Options{ClaudeDir: filepath.Join(dir, "none"), CodexHome: filepath.Join(dir, "none")})
	if len(got) != 0 || err != nil {
		t.Errorf("%v %v", got, err)
	}
	if _, err := List(Options{Backend: "other"}); err == nil {
		t.Error("an unknown backend was taken")
	}
}

// TestFind: a session by its id, of either CLI; the environment names the
// stores when the options do not.
func TestFind(t *testing.T) {
	opts := store(t)
	t.Setenv("CLAUDE_CONFIG_DIR", opts.ClaudeDir)
	t.Setenv("CODEX_HOME", opts.CodexHome)
	e, err := Find(Options{}, "01a23542-6502-7f33-80f4-cae31bfb0ab9")
	if err != nil || e.Backend != Codex || e.Title != "Say hello" {
		t.Errorf("%+v %v", e, err)
	}
	e, err = Find(Options{Backend: Claude}, "s2")
	if err != nil || e.Cwd != "/elsewhere" {
		t.Errorf("%+v %v", e, err)
	}
	for _, id := range []string{"side", "none", "../s2", ""} {
		if _, err := Find(Options{}, id); err == nil {
			t.Errorf("%q found", id)
		}
	}
}

// TestCutTitle: one line of at most 80 characters.
func TestCutTitle(t *testing.T) {
	long := strings.Repeat("é", 100)
	if got := cutTitle("  a\n\tb  c "); got != "a b c" {
		t.Errorf("%q", got)
	}
	if got := cutTitle(long); got != strings.Repeat("é", 79)+"…" {
		t.Errorf("%q", got)
	}
}

// TestResumedSession: a session that resumed another as a fork is listed
// under its own id (its file's, which claude --resume opens) beside the
// first, and imports with the first one's turns before its own.
func TestResumedSession(t *testing.T) {
	opts := Options{Backend: Claude, ClaudeDir: "testdata/claude-fork"}
	got, err := List(opts)
	if err != nil || len(got) != 2 {
		t.Fatalf("%s %v", describe(got), err)
	}
	ids := map[string]bool{got[0].ID: true, got[1].ID: true}
	if !ids["3cdf0d34-ea70-404f-8d93-6a4a68f4a2e6"] || !ids["5a725827-2930-4cf8-99a8-6122e69908fb"] {
		t.Errorf("ids %v", ids)
	}
	e, err := Find(opts, "3cdf0d34-ea70-404f-8d93-6a4a68f4a2e6")
	if err != nil {
		t.Fatal(err)
	}
	conv, rep, err := Import(e, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k := strings.Join(kinds(conv), "\n"); k != "user Remember the number 7\nassistant I will remember 7.\nuser What was the number?\nassistant It was 7." ||
		rep.ID != e.ID || rep.Turns != 2 {
		t.Errorf("%s\n%+v", k, rep)
	}
}
