package trust

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// setup makes a state folder and a home for the CLIs' own files, and
// returns the home and the CLIs' environment.
func setup(t *testing.T) (home string, env []string) {
	t.Helper()
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	home = t.TempDir()
	return home, []string{"HOME=" + home}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStore: an answer is kept per folder (0600, under its real path),
// read back, and forgotten by Remove.
func TestStore(t *testing.T) {
	_, env := setup(t)
	state := os.Getenv("SPBRIDGE_STATE_DIR")
	dir := t.TempDir()
	if err := Set(state, dir, true); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if st := Check(link, env); !st.Trusted || st.By != BySpbridge {
		t.Errorf("Check through a link: %+v", st)
	}
	fi, err := os.Stat(filepath.Join(state, File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store %v, %v", fi, err)
	}
	if err := Set(state, dir, false); err != nil {
		t.Fatal(err)
	}
	if st := Check(dir, env); st.Trusted || !st.Refused {
		t.Errorf("after never: %+v", st)
	}
	if found, err := Remove(state, dir); !found || err != nil {
		t.Errorf("Remove: %v, %v", found, err)
	}
	if found, _ := Remove(state, dir); found {
		t.Error("Remove found the answer twice")
	}
	if st := Check(dir, env); st.Trusted || st.Refused {
		t.Errorf("after Remove: %+v", st)
	}
}

// TestStoreConcurrent: answers for many folders given at once by
// concurrent writers are all kept (the lock), and an unreadable store is
// an error, never overwritten.
func TestStoreConcurrent(t *testing.T) {
	setup(t)
	state := os.Getenv("SPBRIDGE_STATE_DIR")
	var wg sync.WaitGroup
	dirs := make([]string, 20)
	for i := range dirs {
		dirs[i] = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Set(state, dirs[i], true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, err := Read(state); len(got) != len(dirs) || err != nil {
		t.Errorf("%d answers kept of %d (%v)", len(got), len(dirs), err)
	}
	write(t, filepath.Join(state, File), "{not json")
	if err := Set(state, dirs[0], false); err == nil || !strings.Contains(err.Error(), "not readable") {
		t.Errorf("Set over an unreadable store: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(state, File)); string(data) != "{not json" {
		t.Errorf("the unreadable store was overwritten: %q", data)
	}
}

// TestClaudeRecord: Claude Code's own record (projects[…]
// .hasTrustDialogAccepted, in $CLAUDE_CONFIG_DIR/.claude.json or
// ~/.claude.json) trusts its folder and the folders below it, not those
// beside or above; spbridge's "never" stands over it.
func TestClaudeRecord(t *testing.T) {
	home, env := setup(t)
	root := t.TempDir()
	trusted := filepath.Join(root, "repo")
	sub := filepath.Join(trusted, "sub")
	other := filepath.Join(root, "other")
	for _, d := range []string{sub, other} {
		os.MkdirAll(d, 0o755)
	}
	data, _ := json.Marshal(map[string]any{"projects": map[string]any{
		trusted: map[string]any{"hasTrustDialogAccepted": true},
		other:   map[string]any{"hasTrustDialogAccepted": false}}})
	write(t, filepath.Join(home, ".claude.json"), string(data))
	for dir, want := range map[string]bool{trusted: true, sub: true, other: false, root: false} {
		if st := Check(dir, env); st.Trusted != want || want && st.By != ByClaude {
			t.Errorf("Check(%s) = %+v, want trusted %v", dir, st, want)
		}
	}
	// $CLAUDE_CONFIG_DIR moves the file.
	cfg := t.TempDir()
	if st := Check(trusted, append(env, "CLAUDE_CONFIG_DIR="+cfg)); st.Trusted {
		t.Errorf("with CLAUDE_CONFIG_DIR empty: %+v", st)
	}
	write(t, filepath.Join(cfg, ".claude.json"), string(data))
	if st := Check(sub, append(env, "CLAUDE_CONFIG_DIR="+cfg)); !st.Trusted || st.Record != filepath.Join(cfg, ".claude.json") {
		t.Errorf("with CLAUDE_CONFIG_DIR: %+v", st)
	}
	if err := Set(os.Getenv("SPBRIDGE_STATE_DIR"), trusted, false); err != nil {
		t.Fatal(err)
	}
	if st := Check(trusted, env); st.Trusted || !st.Refused {
		t.Errorf("spbridge's never under Claude Code's trust: %+v", st)
	}
}

// TestCodexRecord: Codex's [projects."<folder>"] trust_level = "trusted"
// in $CODEX_HOME/config.toml (else ~/.codex/config.toml) trusts the
// folder, whatever its name holds; "untrusted" does not.
func TestCodexRecord(t *testing.T) {
	home, env := setup(t)
	root := t.TempDir()
	spaced := filepath.Join(root, `my "repo" here`)
	single := filepath.Join(root, "single.d")
	untrusted := filepath.Join(root, "no")
	for _, d := range []string{spaced, single, untrusted} {
		os.MkdirAll(d, 0o755)
	}
	quoted, _ := json.Marshal(spaced)
	write(t, filepath.Join(home, ".codex", "config.toml"), "model = \"gpt-5.5\"\n\n[projects."+string(quoted)+"]\ntrust_level = \"trusted\"\n\n"+
		"[projects.'"+single+"']\ntrust_level = 'trusted' # as codex writes it, or not\n\n[projects.\""+untrusted+"\"]\ntrust_level = \"untrusted\"\n\n[other]\ntrust_level = \"trusted\"\n")
	for dir, want := range map[string]bool{spaced: true, filepath.Join(single): true, untrusted: false, root: false} {
		if st := Check(dir, env); st.Trusted != want || want && st.By != ByCodex {
			t.Errorf("Check(%s) = %+v, want trusted %v", dir, st, want)
		}
	}
	list, err := List(env)
	if err != nil || len(list) != 2 {
		t.Errorf("List: %+v, %v", list, err)
	}
}

// TestClaudeFiles: what would act is the folder's own settings files,
// commands, skills and agents, and every CLAUDE.md and .mcp.json from the
// folder up, but for the user's own (Claude Code's configuration folder);
// a folder with none has nothing to ask about.
func TestClaudeFiles(t *testing.T) {
	home, env := setup(t)
	root := filepath.Join(home, "src")
	dir := filepath.Join(root, "a", "b")
	os.MkdirAll(dir, 0o755)
	write(t, filepath.Join(home, ".claude", "CLAUDE.md"), "mine")
	write(t, filepath.Join(home, ".claude", "settings.json"), "{}")
	if got := ClaudeFiles(dir, env); len(got) != 0 {
		t.Errorf("an empty folder: %q", got)
	}
	if got := ClaudeFiles(home, env); len(got) != 0 {
		t.Errorf("the home folder with only the user's own files: %q", got)
	}
	write(t, filepath.Join(root, ".mcp.json"), "{}")
	write(t, filepath.Join(root, "CLAUDE.md"), "")
	write(t, filepath.Join(dir, ".claude", "settings.local.json"), "{}")
	write(t, filepath.Join(dir, ".claude", "commands", "greet.md"), "")
	write(t, filepath.Join(root, "a", ".claude", "settings.json"), "{}") // not its folder's: claude does not read it
	want := []string{filepath.Join(dir, ".claude", "settings.local.json"), filepath.Join(dir, ".claude", "commands"),
		filepath.Join(root, "CLAUDE.md"), filepath.Join(root, ".mcp.json")}
	if got := ClaudeFiles(dir, env); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ClaudeFiles = %q, want %q", got, want)
	}
}

// TestFolder: a session asks once, and only about a folder with files
// that would act; each answer does what it says, and the notice is given
// once, only while untrusted.
func TestFolder(t *testing.T) {
	_, env := setup(t)
	state := os.Getenv("SPBRIDGE_STATE_DIR")
	dir := t.TempDir()
	if f := Open(dir, env); ask(f, Claude) || f.Notice(Claude) != "" {
		t.Error("a folder with nothing that would act was to be asked about")
	}
	write(t, filepath.Join(dir, ".mcp.json"), "{}")
	for _, tc := range []struct {
		answer  Answer
		trusted bool
		kept    string // "", "trusted", "never"
	}{{NotNow, false, ""}, {TrustOnce, true, ""}, {TrustAlways, true, "trusted"}, {Never, false, "never"}} {
		os.Remove(filepath.Join(state, File))
		f := Open(dir, env)
		if ask(f, Codex) {
			t.Fatalf("%v: asked about a folder with nothing codex would apply", tc.answer)
		}
		if !ask(f, Claude) || ask(f, Claude) {
			t.Fatalf("%v: Ask is not given once", tc.answer)
		}
		if err := f.Answer(tc.answer); err != nil {
			t.Fatal(err)
		}
		if f.Trusted(Claude) != tc.trusted {
			t.Errorf("%v: trusted %v", tc.answer, f.Trusted(Claude))
		}
		notice := f.Notice(Claude)
		if (notice != "") == tc.trusted || f.Notice(Claude) != "" || f.Notice(Codex) != "" {
			t.Errorf("%v: notice %q (then %q)", tc.answer, notice, f.Notice(Claude))
		}
		if notice != "" && (!strings.Contains(notice, ".mcp.json") || !strings.Contains(notice, "spbridge trust add "+f.Dir)) {
			t.Errorf("%v: the notice %q", tc.answer, notice)
		}
		records, _ := Read(state)
		r, ok := records[f.Dir]
		kept := ""
		if ok {
			kept = map[bool]string{true: "trusted", false: "never"}[r.Trusted]
		}
		if kept != tc.kept {
			t.Errorf("%v: kept %q, want %q", tc.answer, kept, tc.kept)
		}
		if next := Open(dir, env); ask(next, Claude) != (tc.kept == "") {
			t.Errorf("%v: the next session asks %v, want %v", tc.answer, !(tc.kept == ""), tc.kept == "")
		}
	}
	if got := shellQuote("/a b/it's"); got != `'/a b/it'\''s'` {
		t.Errorf("shellQuote = %s", got)
	}
}

// ask reports whether f would ask now for a session on cli.
func ask(f *Folder, cli string) bool {
	_, ok := f.Ask(cli)
	return ok
}

// TestCodexFiles: a .codex folder in the folder or above it up to its
// git root is what codex would apply; the user's own CODEX_HOME is not,
// nor one above the root.
func TestCodexFiles(t *testing.T) {
	home, env := setup(t)
	dir := filepath.Join(home, "src", "repo", "sub")
	os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(home, "src", "repo", ".git"), 0o755)
	write(t, filepath.Join(home, "src", ".codex", "config.toml"), "") // above the root
	if got := CodexFiles(dir, env); len(got) != 0 {
		t.Errorf("with only the user's own ~/.codex: %q", got)
	}
	if got := CodexFiles(filepath.Join(home, "src"), env); len(got) != 1 {
		t.Errorf("a folder's own .codex, no git: %q", got)
	}
	write(t, filepath.Join(home, "src", "repo", ".codex", "config.toml"), "")
	if got := CodexFiles(dir, env); len(got) != 1 || got[0] != filepath.Join(home, "src", "repo", ".codex") {
		t.Errorf("CodexFiles = %q", got)
	}
	f := Open(dir, env)
	q, ok := f.Ask(Codex)
	if !ok || q.Who != ByCodex || len(q.Files) != 1 {
		t.Errorf("Ask(codex) = %+v, %v", q, ok)
	}
	f.Answer(NotNow)
	if n := f.Notice(Codex); !strings.Contains(n, "own Codex configuration was not applied") || !strings.Contains(n, "../.codex") {
		t.Errorf("the notice %q", n)
	}
}

// BenchmarkOpen: a session's trust check with a large Claude Code
// configuration (5,000 folders of records, about 4 MB), as a busy user's
// ~/.claude.json grows.
func BenchmarkOpen(b *testing.B) {
	b.Setenv("SPBRIDGE_STATE_DIR", b.TempDir())
	home := b.TempDir()
	projects := map[string]any{}
	for i := range 5000 {
		projects[filepath.Join(home, "src", "p"+strconv.Itoa(i))] = map[string]any{"hasTrustDialogAccepted": i%2 == 0,
			"allowedTools": []string{}, "history": []any{map[string]any{"display": strings.Repeat("x", 600)}}}
	}
	data, _ := json.Marshal(map[string]any{"projects": projects})
	os.WriteFile(filepath.Join(home, ".claude.json"), data, 0o600)
	dir := filepath.Join(home, "src", "p1", "sub")
	os.MkdirAll(dir, 0o755)
	env := []string{"HOME=" + home}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if Open(dir, env).Trusted(Claude) {
			b.Fatal("trusted")
		}
	}
}

// TestFolderPerCLI: a CLI's own record counts for that CLI's sessions
// only (codex 0.169.0's app-server writes its record for every folder a
// thread starts in), spbridge's answer for both; an answer given after
// the session opened is taken at the question, not asked again.
func TestFolderPerCLI(t *testing.T) {
	home, env := setup(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".mcp.json"), "{}")
	write(t, filepath.Join(dir, ".codex", "config.toml"), "")
	quoted, _ := json.Marshal(dir)
	write(t, filepath.Join(home, ".codex", "config.toml"), "[projects."+string(quoted)+"]\ntrust_level = \"trusted\"\n")
	f := Open(dir, env)
	if !f.Trusted(Codex) || f.Trusted(Claude) {
		t.Errorf("codex's record: trusted for codex %v, for claude %v", f.Trusted(Codex), f.Trusted(Claude))
	}
	if f.Notice(Codex) != "" || f.Notice(Claude) == "" {
		t.Error("the notices do not follow each CLI's trust")
	}
	if err := Set(os.Getenv("SPBRIDGE_STATE_DIR"), dir, false); err != nil {
		t.Fatal(err)
	}
	if q, ok := f.Ask(Claude); ok {
		t.Errorf("asked %+v after spbridge trust add --never", q)
	}
	if f.Trusted(Codex) || f.Trusted(Claude) {
		t.Error("spbridge's never does not stand over codex's record")
	}
}
