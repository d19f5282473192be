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
	c, err := p.stdout.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size uintptr
	c.Control(func(fd uintptr) {
		size, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETPIPE_SZ, 0)
	})
	if size != pipeSize {
		t.Errorf("pipe size %d, want %d", size, pipeSize)
	}
}
