package codex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/trust"
)

// trustCLIs are the CLIs trust weighs in these tests: the Codex CLI alone.
var trustCLIs = []trust.CLI{Plugin.Trust}

// setup makes a state folder and a home for the CLIs' own files, and
// returns the home and the CLIs' environment.
func setup(t testing.TB) (home string, env []string) {
	t.Helper()
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	home = t.TempDir()
	return home, []string{"HOME=" + home}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrustRecord: Codex's [projects."<folder>"] trust_level = "trusted"
// in $CODEX_HOME/config.toml (else ~/.codex/config.toml) trusts the
// folder, whatever its name holds; "untrusted" does not.
func TestTrustRecord(t *testing.T) {
	home, env := setup(t)
	root := t.TempDir()
	spaced := filepath.Join(root, `my "repo" here`)
	single := filepath.Join(root, "single.d")
	untrusted := filepath.Join(root, "no")
	for _, d := range []string{spaced, single, untrusted} {
		os.MkdirAll(d, 0o755)
	}
	quoted, _ := json.Marshal(spaced)
	writeFile(t, filepath.Join(home, ".codex", "config.toml"), "model = \"gpt-5.5\"\n\n[projects."+string(quoted)+"]\ntrust_level = \"trusted\"\n\n"+
		"[projects.'"+single+"']\ntrust_level = 'trusted' # as codex writes it, or not\n\n[projects.\""+untrusted+"\"]\ntrust_level = \"untrusted\"\n\n[other]\ntrust_level = \"trusted\"\n")
	for dir, want := range map[string]bool{spaced: true, filepath.Join(single): true, untrusted: false, root: false} {
		if st := trust.Check(dir, env, trustCLIs); st.Trusted != want || want && st.By != Plugin.Trust.Who {
			t.Errorf("Check(%s) = %+v, want trusted %v", dir, st, want)
		}
	}
	list, err := trust.List(env, trustCLIs)
	if err != nil || len(list) != 2 {
		t.Errorf("List: %+v, %v", list, err)
	}
}

// TestFolderFiles: a .codex folder in the folder or above it up to its
// git root is what codex would apply; the user's own CODEX_HOME is not,
// nor one above the root.
func TestFolderFiles(t *testing.T) {
	home, env := setup(t)
	dir := filepath.Join(home, "src", "repo", "sub")
	os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(home, "src", "repo", ".git"), 0o755)
	writeFile(t, filepath.Join(home, "src", ".codex", "config.toml"), "") // above the root
	if got := folderFiles(dir, env); len(got) != 0 {
		t.Errorf("with only the user's own ~/.codex: %q", got)
	}
	if got := folderFiles(filepath.Join(home, "src"), env); len(got) != 1 {
		t.Errorf("a folder's own .codex, no git: %q", got)
	}
	writeFile(t, filepath.Join(home, "src", "repo", ".codex", "config.toml"), "")
	if got := folderFiles(dir, env); len(got) != 1 || got[0] != filepath.Join(home, "src", "repo", ".codex") {
		t.Errorf("CodexFiles = %q", got)
	}
	f := trust.Open(dir, env, trustCLIs)
	q, ok := f.Ask(Name)
	if !ok || q.Who != Plugin.Trust.Who || len(q.Files) != 1 {
		t.Errorf("Ask(codex) = %+v, %v", q, ok)
	}
	f.Answer(trust.NotNow)
	if n := f.Notice(Name); !strings.Contains(n, "own Codex configuration was not applied") || !strings.Contains(n, "../.codex") {
		t.Errorf("the notice %q", n)
	}
}
