//go:build unix

package cliproc

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestVersionAskedOnce: a program is run for its version once while its
// file stays the same, by one caller however many ask at once; a program
// rewritten, or one that gave no answer, is asked again.
func TestVersionAskedOnce(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	prog := filepath.Join(dir, "cli")
	write := func(body string) {
		t.Helper()
		// A new file each time, as an update installs one.
		os.Remove(prog)
		script := "#!/bin/sh\necho run >> '" + runs + "'\n" + body
		if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		data, _ := os.ReadFile(runs)
		return strings.Count(string(data), "run\n")
	}

	write("echo '1.0.0 (Test CLI)'\necho second line\n")
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() { got[i] = Version(prog, nil) })
	}
	wg.Wait()
	for _, v := range got {
		if v != "1.0.0 (Test CLI)" {
			t.Fatalf("versions %q", got)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("eight callers at once ran the program %d times, want 1", n)
	}
	if v := Version(prog, nil); v != "1.0.0 (Test CLI)" || count() != 1 {
		t.Fatalf("asked again: %q, %d runs, want the answer kept and 1 run", v, count())
	}

	write("echo '1.0.10 (Test CLI)'\n")
	if v := Version(prog, nil); v != "1.0.10 (Test CLI)" || count() != 2 {
		t.Fatalf("after an update: %q, %d runs, want 1.0.10 from a second run", v, count())
	}

	write("exit 3\n")
	for range 2 {
		if v := Version(prog, nil); v != "" {
			t.Fatalf("a program that fails: %q", v)
		}
	}
	if n := count(); n != 4 {
		t.Fatalf("a program that gave no answer ran %d times in all, want 4 (asked each time)", n)
	}

	if v := Version(filepath.Join(dir, "missing"), nil); v != "" {
		t.Fatalf("a missing program: %q", v)
	}
}
