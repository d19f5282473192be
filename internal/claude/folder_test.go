package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"spbridge/internal/trust"
)

// trustCLIs are the CLIs trust weighs in these tests: Claude Code alone.
var trustCLIs = []trust.CLI{Plugin.Trust}

// setup makes a state folder and a home for the CLIs' own files, and
// returns the home and the CLIs' environment.
func setup(t testing.TB) (home string, env []string) {
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

// TestTrustRecord: Claude Code's own record (projects[…]
// .hasTrustDialogAccepted, in $CLAUDE_CONFIG_DIR/.claude.json or
// ~/.claude.json) trusts its folder and the folders below it, not those
// beside or above; spbridge's "never" stands over it.
func TestTrustRecord(t *testing.T) {
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
		if st := trust.Check(dir, env, trustCLIs); st.Trusted != want || want && st.By != Plugin.Trust.Who {
			t.Errorf("Check(%s) = %+v, want trusted %v", dir, st, want)
		}
	}
	// $CLAUDE_CONFIG_DIR moves the file.
	cfg := t.TempDir()
	if st := trust.Check(trusted, append(env, "CLAUDE_CONFIG_DIR="+cfg), trustCLIs); st.Trusted {
		t.Errorf("with CLAUDE_CONFIG_DIR empty: %+v", st)
	}
	write(t, filepath.Join(cfg, ".claude.json"), string(data))
	if st := trust.Check(sub, append(env, "CLAUDE_CONFIG_DIR="+cfg), trustCLIs); !st.Trusted || st.Record != filepath.Join(cfg, ".claude.json") {
		t.Errorf("with CLAUDE_CONFIG_DIR: %+v", st)
	}
	if err := trust.Set(os.Getenv("SPBRIDGE_STATE_DIR"), trusted, false); err != nil {
		t.Fatal(err)
	}
	if st := trust.Check(trusted, env, trustCLIs); st.Trusted || !st.Refused {
		t.Errorf("spbridge's never under Claude Code's trust: %+v", st)
	}
}

// TestFolderFiles: what would act is the folder's own settings files,
// commands, skills and agents, and every CLAUDE.md and .mcp.json from the
// folder up, but for the user's own (Claude Code's configuration folder);
// a folder with none has nothing to ask about.
func TestFolderFiles(t *testing.T) {
	home, env := setup(t)
	root := filepath.Join(home, "src")
	dir := filepath.Join(root, "a", "b")
	os.MkdirAll(dir, 0o755)
	write(t, filepath.Join(home, ".claude", "CLAUDE.md"), "mine")
	write(t, filepath.Join(home, ".claude", "settings.json"), "{}")
	if got := folderFiles(dir, env); len(got) != 0 {
		t.Errorf("an empty folder: %q", got)
	}
	if got := folderFiles(home, env); len(got) != 0 {
		t.Errorf("the home folder with only the user's own files: %q", got)
	}
	write(t, filepath.Join(root, ".mcp.json"), "{}")
	write(t, filepath.Join(root, "CLAUDE.md"), "")
	write(t, filepath.Join(dir, ".claude", "settings.local.json"), "{}")
	write(t, filepath.Join(dir, ".claude", "commands", "greet.md"), "")
	write(t, filepath.Join(root, "a", ".claude", "settings.json"), "{}") // not its folder's: claude does not read it
	want := []string{filepath.Join(dir, ".claude", "settings.local.json"), filepath.Join(dir, ".claude", "commands"),
		filepath.Join(root, "CLAUDE.md"), filepath.Join(root, ".mcp.json")}
	if got := folderFiles(dir, env); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ClaudeFiles = %q, want %q", got, want)
	}
}

// BenchmarkTrustOpen: a session's trust check with a large Claude Code
// configuration (5,000 folders of records, about 4 MB), as a busy user's
// ~/.claude.json grows.
func BenchmarkTrustOpen(b *testing.B) {
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
		if trust.Open(dir, env, trustCLIs).Trusted(Name) {
			b.Fatal("trusted")
		}
	}
}
