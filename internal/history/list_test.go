package history_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/claude"
	"spbridge/internal/codex"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
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

// stores are the stores the tests read: the table's, Claude Code's and
// the Codex CLI's.
var stores = []history.Store{claude.History, codex.History}

// dirs names the stores' folders ("" for a store's own).
func dirs(claudeDir, codexHome string) map[string]string {
	return map[string]string{"claude": claudeDir, "codex": codexHome}
}

const (
	claudeFixture  = "../claude/testdata/history/claude/projects/-work-project/ca0632fd-a8b0-4a1c-9271-caa77e5d4c40.jsonl"
	codexFixture   = "../codex/testdata/history/codex/sessions/2026/12/02/rollout-2026-12-02T05-37-53-01a23542-6502-7f33-80f4-cae31bfb0ab9.jsonl"
	codexImage     = "../codex/testdata/history/codex/sessions/2026/12/02/rollout-2026-12-02T05-37-56-01a23542-7241-71b3-8ca5-629e22deb51c.jsonl"
	codexPicture   = "../codex/testdata/history/codex-picture/sessions/2026/12/02/rollout-2026-12-02T09-49-32-01a23628-c9a8-74e0-8e3b-16baa728c919.jsonl"
	claudeSubagent = "../claude/testdata/history/claude/projects/-work-project/ca0632fd-a8b0-4a1c-9271-caa77e5d4c40/subagents/agent-a0ad1535de6bf8694.jsonl"
)

// store builds a Claude Code config folder and a Codex home in a temporary
// folder from the recorded sessions, with files that are not to be listed
// beside them, and returns the options naming them.
func store(t *testing.T) history.Options {
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
	copyFile(t, claudeSubagent,
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
	return history.Options{Stores: stores, Dirs: dirs(cl, cx)}
}

// TestList: every session of both stores, newest first, with its folder
// and title; files that are not sessions left out.
func TestList(t *testing.T) {
	opts := store(t)
	got, err := history.List(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := "codex 01a23542-6502-7f33-80f4-cae31bfb0ab9 /work/project Say hello 14:00\n" +
		"claude ca0632fd-a8b0-4a1c-9271-caa77e5d4c40 /work/project Say hello 13:00\n" +
		"claude s2 /elsewhere My own title 12:00\n" +
		"codex 01a23542-7241-71b3-8ca5-629e22deb51c /work/project What colour is this? 11:00"
	if d := historytest.Describe(got); d != want {
		t.Errorf("list\n%s\nwant\n%s", d, want)
	}
	// One folder, one CLI.
	opts.Cwd = "/elsewhere"
	if got, _ := history.List(opts); historytest.Describe(got) != "claude s2 /elsewhere My own title 12:00" {
		t.Errorf("cwd: %s", historytest.Describe(got))
	}
	opts.Cwd, opts.Backend = "/work/project", "codex"
	if got, _ := history.List(opts); len(got) != 2 || got[0].Backend != "codex" || got[1].Backend != "codex" {
		t.Errorf("codex in /work/project: %s", historytest.Describe(got))
	}
	opts.Cwd, opts.Backend = "/nowhere", ""
	if got, err := history.List(opts); len(got) != 0 || err != nil {
		t.Errorf("another folder: %s %v", historytest.Describe(got), err)
	}
}

// TestListPages: pages of one entry follow one another to the last,
// which has no cursor; a bad cursor is an error.
func TestListPages(t *testing.T) {
	opts := store(t)
	all, _ := history.List(opts)
	var got []history.Entry
	cursor := ""
	for range 10 {
		p, err := history.ListPage(opts, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Entries...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if historytest.Describe(got) != historytest.Describe(all) || cursor != "" {
		t.Errorf("pages\n%s\nall\n%s\ncursor %q", historytest.Describe(got), historytest.Describe(all), cursor)
	}
	// The last page, whose files after it are not sessions, has no cursor.
	p, err := history.ListPage(opts, "", len(all))
	if err != nil || len(p.Entries) != len(all) || p.NextCursor != "" {
		t.Errorf("one page: %d entries, cursor %q, %v", len(p.Entries), p.NextCursor, err)
	}
	if _, err := history.ListPage(opts, "!!", 1); err == nil {
		t.Error("a bad cursor was taken")
	}
}

// TestListMissingStores: no store lists nothing, without an error.
func TestListMissingStores(t *testing.T) {
	dir := t.TempDir()
	got, err := history.List(history.Options{Stores: stores, Dirs: dirs(filepath.Join(dir, "none"), filepath.Join(dir, "none"))})
	if len(got) != 0 || err != nil {
		t.Errorf("%v %v", got, err)
	}
	if _, err := history.List(history.Options{Stores: stores, Backend: "other"}); err == nil {
		t.Error("an unknown backend was taken")
	}
}

// TestFind: a session by its id, of either CLI; the environment names the
// stores when the options do not.
func TestFind(t *testing.T) {
	opts := store(t)
	t.Setenv("CLAUDE_CONFIG_DIR", opts.Dirs["claude"])
	t.Setenv("CODEX_HOME", opts.Dirs["codex"])
	e, err := history.Find(history.Options{Stores: stores}, "01a23542-6502-7f33-80f4-cae31bfb0ab9")
	if err != nil || e.Backend != "codex" || e.Title != "Say hello" {
		t.Errorf("%+v %v", e, err)
	}
	e, err = history.Find(history.Options{Stores: stores, Backend: "claude"}, "s2")
	if err != nil || e.Cwd != "/elsewhere" {
		t.Errorf("%+v %v", e, err)
	}
	for _, id := range []string{"side", "none", "../s2", ""} {
		if _, err := history.Find(history.Options{Stores: stores}, id); err == nil {
			t.Errorf("%q found", id)
		}
	}
}
