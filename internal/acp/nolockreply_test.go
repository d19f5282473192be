package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"

	"spbridge/internal/backend"
)

// gateWriter passes writes on until it is shut; then the next write
// says so on entered and waits until it is opened again.
type gateWriter struct {
	w       io.Writer
	mu      sync.Mutex
	shut    bool
	entered chan struct{}
	open    chan struct{}
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	shut := g.shut
	g.shut = false
	g.mu.Unlock()
	if shut {
		g.entered <- struct{}{}
		<-g.open
	}
	return g.w.Write(p)
}

// TestCloseRepliesWithNoLock: the close of a session answers the prompts
// still queued behind its turn (cancelled) with no lock of the session
// held: while the client does not read the answer, the session's lock is
// free.
func TestCloseRepliesWithNoLock(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	gate := &gateWriter{w: outW, entered: make(chan struct{}), open: make(chan struct{})}
	f := newFake()
	srv := NewServer(gate, Config{AuditDir: t.TempDir(), CLIs: rowsOf(func(string, backend.Options) (backend.Backend, error) { return f, nil })})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), inR); outW.Close() }()
	answers := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["method"] == nil {
				answers <- m
			}
		}
		close(answers)
	}()
	send := func(id int, method string, params any) {
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		inW.Write(append(data, '\n'))
	}
	answer := func(id int) map[string]any {
		for m := range answers {
			if m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("no answer to %d", id)
		return nil
	}
	pkg := newPackage(t)
	send(1, "session/new", newSessionParams(pkg))
	sid := answer(1)["result"].(map[string]any)["sessionId"].(string)
	send(2, "session/prompt", promptParams(sid, "stubborn"))
	<-f.began
	send(3, "session/prompt", promptParams(sid, "queued"))
	send(4, "_spbridge/save", map[string]any{"sessionId": sid}) // after the prompt is queued
	answer(4)
	srv.mu.Lock()
	ss := srv.sessions[sid]
	srv.mu.Unlock()

	gate.mu.Lock()
	gate.shut = true
	gate.mu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- ss.close() }()
	<-gate.entered // the queued prompt's answer waits for the client
	if ss.mu.TryLock() {
		ss.mu.Unlock()
	} else {
		t.Error("the close answers the client with the session's lock held")
	}
	close(gate.open)
	if err := <-closed; err != nil {
		t.Error(err)
	}
	if m := answer(3); m["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Errorf("the queued prompt: %v", m)
	}
	f.finish <- struct{}{}
	inW.Close()
	for range answers {
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
}
