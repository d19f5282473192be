package trust

import (
	"os"
	"path/filepath"
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
	if st := Check(link, env, nil); !st.Trusted || st.By != BySpbridge {
		t.Errorf("Check through a link: %+v", st)
	}
	fi, err := os.Stat(filepath.Join(state, File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store %v, %v", fi, err)
	}
	if err := Set(state, dir, false); err != nil {
		t.Fatal(err)
	}
	if st := Check(dir, env, nil); st.Trusted || !st.Refused {
		t.Errorf("after never: %+v", st)
	}
	if found, err := Remove(state, dir); !found || err != nil {
		t.Errorf("Remove: %v, %v", found, err)
	}
	if found, _ := Remove(state, dir); found {
		t.Error("Remove found the answer twice")
	}
	if st := Check(dir, env, nil); st.Trusted || st.Refused {
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

// TestShellQuote: a folder the notice names is quoted for a POSIX shell.
func TestShellQuote(t *testing.T) {
	if got := shellQuote("/a b/it's"); got != `'/a b/it'\''s'` {
		t.Errorf("shellQuote = %s", got)
	}
	if got := shellQuote("/src/my-repo_1.2"); got != "/src/my-repo_1.2" {
		t.Errorf("shellQuote = %s", got)
	}
}

// TestCLIs: trust weighs the CLIs it is given, and names none: a CLI's
// record counts for its sessions only and is checked in the order given,
// its files are what it is asked about, its words are the notice's, and a
// CLI with no record or files is never trusted by one nor asked about.
func TestCLIs(t *testing.T) {
	_, env := setup(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.MkdirAll(sub, 0o755)
	kept := filepath.Join(dir, "x.conf")
	x := CLI{Name: "x", Who: "X Agent", LeftOut: "its hooks", RunsWith: "X runs with yours only",
		Record: func(env []string) (string, []string) { return kept, []string{dir} },
		Files:  func(d string, env []string) []string { return []string{filepath.Join(d, ".x")} }}
	y := CLI{Name: "y", Who: "Y", Files: func(string, []string) []string { return nil }}
	if st := Check(sub, env, []CLI{y, x}); !st.Trusted || st.By != "X Agent" || st.Record != kept {
		t.Errorf("Check(sub) = %+v", st)
	}
	if st := Check(sub, env, []CLI{y}); st.Trusted || st.By != "" {
		t.Errorf("Check(sub) by y = %+v", st)
	}
	if list, err := List(env, []CLI{x, y}); err != nil || len(list) != 1 || list[0].By != "X Agent" || list[0].Dir != dir {
		t.Errorf("List = %+v, %v", list, err)
	}
	f := Open(sub, env, []CLI{x, y})
	if !f.Trusted("x") || f.Trusted("y") || f.Trusted("z") {
		t.Errorf("trusted: x %v, y %v, z %v", f.Trusted("x"), f.Trusted("y"), f.Trusted("z"))
	}
	if _, ok := f.Ask("y"); ok || f.Notice("y") != "" {
		t.Error("asked or noticed about a folder with nothing y would apply")
	}
	g := Open(t.TempDir(), env, []CLI{x, y})
	q, ok := g.Ask("x")
	if !ok || q.Who != "X Agent" || len(q.Files) != 1 || q.Files[0] != filepath.Join(g.Dir, ".x") {
		t.Fatalf("Ask(x) = %+v, %v", q, ok)
	}
	g.Answer(NotNow)
	if n := g.Notice("x"); n != "This folder's own X Agent configuration was not applied (its hooks), which you have not trusted: .x. X runs with yours only. To apply it, trust the folder: spbridge trust add "+shellQuote(g.Dir) {
		t.Errorf("the notice %q", n)
	}
}
