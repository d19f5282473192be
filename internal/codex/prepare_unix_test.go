//go:build unix

package codex

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/backend"
)

// TestPrepareCancelled: a session closed while Prepare's app-server
// starts (it has not answered initialize) ends it without a wait for the
// lines nobody will read: the server prints 4 MiB as its input closes
// and exits by itself, long before the minute of grace after which it
// would be interrupted.
func TestPrepareCancelled(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	exe, _ := os.Executable()
	b := New(Options{Options: backend.Options{Program: exe, Env: append(os.Environ(), fakeAppServerEnv+"=hold-init "+fifo, "GORACE=atexit_sleep_ms=0"),
		Dir: t.TempDir(), Grace: time.Minute}})
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	prepared := make(chan error, 1)
	go func() { prepared <- b.Prepare(ctx) }()
	started, err := os.ReadFile(fifo) // until the server read initialize
	if err != nil || string(started) != "initialize\n" {
		t.Fatalf("the server's word: %q, %v", started, err)
	}
	cancel()
	if err := <-prepared; err == nil {
		t.Error("a cancelled Prepare reported no error")
	}
	if got := b.ExitStatus(); got != "exit status 0" {
		t.Errorf("the server ended with %q, want its own exit 0", got)
	}
}
