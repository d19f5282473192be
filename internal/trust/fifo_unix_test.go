//go:build unix

package trust

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestNonEmptyDirFIFO: a FIFO where a folder's .git would be is no folder,
// told at once; before, opening it waited for a writer forever.
func TestNonEmptyDirFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".git")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan bool, 1)
	go func() { got <- NonEmptyDir(p) }()
	select {
	case nonEmpty := <-got:
		if nonEmpty {
			t.Error("a FIFO counts as a folder with something in it")
		}
	case <-time.After(time.Minute): // only when it hangs
		t.Fatal("nonEmptyDir waits on the FIFO")
	}
}
