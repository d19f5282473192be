package cliproc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestPipeGrown checks that the pipe a program's output comes through
// holds pipeSize bytes when the system allows that much.
func TestPipeGrown(t *testing.T) {
	limit, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if n, _ := strconv.Atoi(strings.TrimSpace(string(limit))); err != nil || n < pipeSize {
		t.Skipf("pipes may hold at most %s bytes here", strings.TrimSpace(string(limit)))
	}
	p := start(t, helperConfig("hang"))
	if size := pipeSizeOf(t, p.stdout); size != pipeSize {
		t.Errorf("pipe size %d, want %d", size, pipeSize)
	}
}

// TestGrowPipe checks that GrowPipe grows a pipe (serve's output) and
// leaves a file that is not one alone.
func TestGrowPipe(t *testing.T) {
	limit, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if n, _ := strconv.Atoi(strings.TrimSpace(string(limit))); err != nil || n < pipeSize {
		t.Skipf("pipes may hold at most %s bytes here", strings.TrimSpace(string(limit)))
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	GrowPipe(w)
	if size := pipeSizeOf(t, r); size != pipeSize {
		t.Errorf("pipe size %d after GrowPipe, want %d", size, pipeSize)
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	GrowPipe(f) // not a pipe: nothing happens
	if _, err := f.WriteString("still writable\n"); err != nil {
		t.Error(err)
	}
}

func pipeSizeOf(t *testing.T, f *os.File) uintptr {
	c, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size uintptr
	c.Control(func(fd uintptr) {
		size, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETPIPE_SZ, 0)
	})
	return size
}
