package main

import (
	"io"
	"sync"
	"time"
)

// logWriter hands serve's log lines to w from a goroutine of its own, so
// that an editor that stops reading serve's standard error never holds up
// a session, a save or the shutdown: a line that finds the queue full is
// dropped, and Close waits a bounded time for what is queued.
type logWriter struct {
	lines chan []byte
	done  chan struct{}
	once  sync.Once
}

// logQueue is how many lines wait for a standard error that is not read.
const logQueue = 256

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{lines: make(chan []byte, logQueue), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for b := range l.lines {
			w.Write(b) // a line that cannot be written is lost
		}
	}()
	return l
}

// Write queues a copy of p, or drops it when the queue is full; it never
// waits.
func (l *logWriter) Write(p []byte) (int, error) {
	select {
	case l.lines <- append([]byte(nil), p...):
	default:
	}
	return len(p), nil
}

// Close stops taking lines and waits at most wait for the queued ones to
// be written.
func (l *logWriter) Close(wait time.Duration) {
	l.once.Do(func() { close(l.lines) })
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
}
