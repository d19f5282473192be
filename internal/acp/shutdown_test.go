package acp

import (
	"sync"
	"testing"
	"time"

	"spbridge/internal/backend"
)

// closeBarrier holds each backend's Close until every one was asked to
// close (or the test gives up): CLIs slow to end.
type closeBarrier struct {
	mu      sync.Mutex
	left    int
	all     chan struct{} // closed when every Close began
	release chan struct{} // closed by a test that gave up
}

type barrierBackend struct {
	*fakeBackend
	b *closeBarrier
}

func (b barrierBackend) Close() error {
	b.b.mu.Lock()
	if b.b.left--; b.b.left == 0 {
		close(b.b.all)
	}
	b.b.mu.Unlock()
	select {
	case <-b.b.all:
	case <-b.b.release:
	}
	return b.fakeBackend.Close()
}

// TestShutdownClosesSessionsAtOnce: shutdown ends the sessions' CLIs at the
// same time, so that it takes as long as the slowest CLI's close, not
// their sum, whatever the number of sessions.
func TestShutdownClosesSessionsAtOnce(t *testing.T) {
	const n = 3
	b := &closeBarrier{left: n, all: make(chan struct{}), release: make(chan struct{})}
	c := startServerWith(t, Config{CLIs: rowsOf(func(_ string, _ backend.Options) (backend.Backend, error) {
		return barrierBackend{newFake(), b}, nil
	})})
	for range n {
		c.request("session/new", newSessionParams(newPackage(t)))
	}
	c.in.Close()
	select {
	case <-c.doneCh:
	case <-time.After(outputGuard):
		close(b.release)
		t.Fatalf("the CLIs were closed one after the other: shutdown waited %v for the first to end", outputGuard)
	}
	if c.doneErr != nil {
		t.Fatal(c.doneErr)
	}
}
