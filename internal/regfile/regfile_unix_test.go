//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFIFORefusedAtOnce: a FIFO that no writer ever opens is refused
// without waiting (before regfile, os.Open waited for a writer forever).
func TestFIFORefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "heads")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(fifo)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
		t.Fatalf("ReadFile(FIFO): %v", err)
	}
	if _, err := Open("/dev/null"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("Open(/dev/null): %v", err)
	}
}

func TestRegularAndMissing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	want := strings.Repeat("x", 100000)
	os.WriteFile(path, []byte(want), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(path, link)
	for _, p := range []string{path, link} {
		got, err := ReadFile(p)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s): %d bytes, %v", p, len(got), err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a folder") {
		t.Errorf("folder: %v", err)
	}
	// The file is read in blocking mode: a read after the open works as usual.
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 10)
	if n, err := f.Read(buf); n != 10 || err != nil {
		t.Errorf("read: %d, %v", n, err)
	}
}
