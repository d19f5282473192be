package clis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/trust"
)

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

// TestFolder: a session asks once, and only about a folder with files
// that would act; each answer does what it says, and the notice is given
// once, only while untrusted.
func TestFolder(t *testing.T) {
	_, env := setup(t)
	state := os.Getenv("SPBRIDGE_STATE_DIR")
	dir := t.TempDir()
	if f := trust.Open(dir, env, Trust()); ask(f, "claude") || f.Notice("claude") != "" {
		t.Error("a folder with nothing that would act was to be asked about")
	}
	write(t, filepath.Join(dir, ".mcp.json"), "{}")
	for _, tc := range []struct {
		answer  trust.Answer
		trusted bool
		kept    string // "", "trusted", "never"
	}{{trust.NotNow, false, ""}, {trust.TrustOnce, true, ""}, {trust.TrustAlways, true, "trusted"}, {trust.Never, false, "never"}} {
		os.Remove(filepath.Join(state, trust.File))
		f := trust.Open(dir, env, Trust())
		if ask(f, "codex") {
			t.Fatalf("%v: asked about a folder with nothing codex would apply", tc.answer)
		}
		if !ask(f, "claude") || ask(f, "claude") {
			t.Fatalf("%v: Ask is not given once", tc.answer)
		}
		if err := f.Answer(tc.answer); err != nil {
			t.Fatal(err)
		}
		if f.Trusted("claude") != tc.trusted {
			t.Errorf("%v: trusted %v", tc.answer, f.Trusted("claude"))
		}
		notice := f.Notice("claude")
		if (notice != "") == tc.trusted || f.Notice("claude") != "" || f.Notice("codex") != "" {
			t.Errorf("%v: notice %q (then %q)", tc.answer, notice, f.Notice("claude"))
		}
		if notice != "" && (!strings.Contains(notice, ".mcp.json") || !strings.Contains(notice, "spbridge trust add "+f.Dir)) {
			t.Errorf("%v: the notice %q", tc.answer, notice)
		}
		records, _ := trust.Read(state)
		r, ok := records[f.Dir]
		kept := ""
		if ok {
			kept = map[bool]string{true: "trusted", false: "never"}[r.Trusted]
		}
		if kept != tc.kept {
			t.Errorf("%v: kept %q, want %q", tc.answer, kept, tc.kept)
		}
		if next := trust.Open(dir, env, Trust()); ask(next, "claude") != (tc.kept == "") {
			t.Errorf("%v: the next session asks %v, want %v", tc.answer, !(tc.kept == ""), tc.kept == "")
		}
	}
}

// ask reports whether f would ask now for a session on cli.
func ask(f *trust.Folder, cli string) bool {
	_, ok := f.Ask(cli)
	return ok
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
	f := trust.Open(dir, env, Trust())
	if !f.Trusted("codex") || f.Trusted("claude") {
		t.Errorf("codex's record: trusted for codex %v, for claude %v", f.Trusted("codex"), f.Trusted("claude"))
	}
	if f.Notice("codex") != "" || f.Notice("claude") == "" {
		t.Error("the notices do not follow each CLI's trust")
	}
	if err := trust.Set(os.Getenv("SPBRIDGE_STATE_DIR"), dir, false); err != nil {
		t.Fatal(err)
	}
	if q, ok := f.Ask("claude"); ok {
		t.Errorf("asked %+v after spbridge trust add --never", q)
	}
	if f.Trusted("codex") || f.Trusted("claude") {
		t.Error("spbridge's never does not stand over codex's record")
	}
}
