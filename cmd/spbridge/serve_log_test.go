package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockedWriter takes no write until released.
type blockedWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

// TestLogWriterNeverWaits: with a standard error nobody reads, logging
// many lines returns at once (lines past the queue are dropped), and Close
// gives up waiting; once the reader comes back, the queued lines arrive in
// order.
func TestLogWriterNeverWaits(t *testing.T) {
	w := &blockedWriter{release: make(chan struct{})}
	l := newLogWriter(w)
	for range 10 * logQueue {
		if n, err := io.WriteString(l, "line\n"); n != 5 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	l.Close(time.Millisecond) // returns although nothing was written
	close(w.release)
	<-l.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := strings.Count(w.got.String(), "line\n"); n < logQueue || n > logQueue+1 {
		t.Errorf("%d lines written, want the %d queued (one more may have been taken before the queue filled)", n, logQueue)
	}
}

// TestLogWriterDelivers: lines reach a standard error that is read, whole
// and in order, by the time Close returns.
func TestLogWriterDelivers(t *testing.T) {
	var b syncBuffer
	l := newLogWriter(&b)
	for _, s := range []string{"a\n", "b\n", "c\n"} {
		io.WriteString(l, s)
	}
	l.Close(time.Minute)
	if got := b.String(); got != "a\nb\nc\n" {
		t.Errorf("got %q", got)
	}
}
