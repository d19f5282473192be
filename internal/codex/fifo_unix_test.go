//go:build unix

package codex

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestViewedImageFIFORefused: an image path that names a FIFO is refused at
// once as not a regular file; before, its open waited for a writer forever.
func TestViewedImageFIFORefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "shot.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := readViewedImage(dir, "shot.png"); got <- err }()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("readViewedImage(FIFO): %v", err)
		}
	case <-time.After(time.Minute): // only when it hangs
		t.Fatal("readViewedImage waits on the FIFO")
	}
}
