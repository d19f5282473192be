// Package testbin gives a test the program to start as its helper
// processes (a fake CLI, a supervisor, a process killed at random moments):
// its own test binary, built again without the race detector when it has
// it. A race-enabled binary takes about ten times the CPU of a plain one to
// start (its shadow memory) and runs several times slower, and the tests
// that start helpers by the hundred spent most of their time on that; what
// a helper does is checked by the test that starts it, which keeps the race
// detector.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	once sync.Once
	path string
	dir  string
)

// Helper returns the path of the test binary to start as a helper: with
// the race detector, a copy of it built without (go test -c in the
// package's folder, the working directory go test gives a test), made
// once per process; else, or when that build fails (said on stderr), the
// running binary itself. It has the same TestMain, so a helper is asked
// for as before (an environment variable, an argument).
func Helper() string {
	once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			panic(err)
		}
		path = exe
		if !raceEnabled {
			return
		}
		d, err := os.MkdirTemp("", "testbin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testbin:", err)
			return
		}
		out := filepath.Join(d, filepath.Base(exe))
		if b, err := exec.Command("go", "test", "-c", "-o", out, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "testbin: go test -c without -race: %v\n%s(the helpers run as the race-enabled test binary)\n", err, b)
			os.RemoveAll(d)
			return
		}
		path, dir = out, d
	})
	return path
}

// Cleanup removes the copy Helper built, if any: TestMain calls it once
// the tests have run.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
