package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
)

// outputGuard only keeps a broken output or server from hanging a test:
// nothing waits for it to pass.
const outputGuard = time.Minute

// await waits for what ch brings, and fails the test when nothing came
// within outputGuard.
func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(outputGuard):
		t.Fatalf("%s did not end within %v", what, outputGuard)
		panic("unreachable")
	}
}

// lineReader reads the server's output when the test asks, and only then:
// when the test stops asking, the server's writes wait (an io.Pipe holds
// nothing).
type lineReader struct {
	t  *testing.T
	sc *bufio.Scanner
}

// until reads lines until one holds s.
func (l *lineReader) until(s string) {
	l.t.Helper()
	for l.sc.Scan() {
		if strings.Contains(l.sc.Text(), s) {
			return
		}
	}
	l.t.Fatalf("the output ended before %q (%v)", s, l.sc.Err())
}

// stalledServer is a server with fake backends whose output the test reads
// only when it asks; log gets the server's log.
type stalledServer struct {
	srv   *Server
	in    *io.PipeWriter
	out   *lineReader
	outR  *io.PipeReader
	pkg   string
	done  chan error
	logMu sync.Mutex
	log   strings.Builder
}

func (s *stalledServer) Write(p []byte) (int, error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.Write(p)
}

func (s *stalledServer) logged() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// send writes one request.
func (s *stalledServer) send(id int, method string, params any) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	s.in.Write(append(data, '\n'))
}

// startStalledServer opens a session and starts a "slow" turn (it streams
// until interrupted), reading the output up to the turn's first text: from
// then on nobody reads, and the turn's next update waits in the write.
func startStalledServer(t *testing.T) *stalledServer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stalledServer{in: inW, outR: outR, out: &lineReader{t: t, sc: bufio.NewScanner(outR)}, pkg: newPackage(t), done: make(chan error, 1)}
	s.out.sc.Buffer(nil, 1<<20)
	s.srv = NewServer(outW, Config{
		Version: "test", Log: log.New(s, "", 0),
		CLIs: rowsOf(func(_ string, _ backend.Options) (backend.Backend, error) { return newFake(), nil }),
	})
	go func() { s.done <- s.srv.Serve(context.Background(), inR) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		<-s.done
	})
	s.send(0, "initialize", map[string]any{"protocolVersion": 1})
	s.out.until(`"id":0`)
	s.send(1, "session/new", newSessionParams(s.pkg))
	s.out.until(`"id":1`)
	s.send(2, "session/prompt", map[string]any{"sessionId": s.pkg, "prompt": []any{map[string]any{"type": "text", "text": "slow"}}})
	s.out.until("tick")
	return s
}

// savedTurn returns the items saved in the package: the prompt and the
// reply so far, when the turn was saved.
func savedTurn(t *testing.T, pkg string) []archive.Item {
	t.Helper()
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	return p.Conv.Items
}

// partialTurn reports whether items are the "slow" prompt and some of its
// reply.
func partialTurn(items []archive.Item) bool {
	return len(items) >= 2 && items[0].String("text") == "slow" && strings.HasPrefix(items[1].String("text"), "tick ")
}

// TestServeEndsWhileClientReadsNothing: standard input closes while the
// client reads nothing of the output and a turn's update waits to be
// written: the server gives the output up, interrupts and saves the turn,
// ends its CLI and returns.
func TestServeEndsWhileClientReadsNothing(t *testing.T) {
	s := startStalledServer(t)
	s.in.Close()
	err := await(t, "the server's shutdown", s.done)
	s.done <- err
	if err != nil {
		t.Errorf("Serve: %v", err)
	}
	if items := savedTurn(t, s.pkg); !partialTurn(items) {
		t.Errorf("saved %d items, want the prompt and the reply so far", len(items))
	}
	if !strings.Contains(s.logged(), jsonrpc.ErrStalled.Error()) {
		t.Errorf("log %q does not say the output was given up", s.logged())
	}
}

// TestServeEndsWhenClientGone: the client closes its end of the output
// while standard input stays open: the server ends as at the end of its
// input, saving the turn.
func TestServeEndsWhenClientGone(t *testing.T) {
	s := startStalledServer(t)
	s.outR.Close()
	err := await(t, "the server's shutdown", s.done)
	s.done <- err
	if err != nil {
		t.Errorf("Serve: %v", err)
	}
	if items := savedTurn(t, s.pkg); !partialTurn(items) {
		t.Errorf("saved %d items, want the prompt and the reply so far", len(items))
	}
	if !strings.Contains(s.logged(), "the client is gone") {
		t.Errorf("log %q does not say the client is gone", s.logged())
	}
}

// TestSaveWhileOutputWaits: a turn's update waiting for a client that
// reads nothing holds nothing a save needs: _spbridge/save writes the turn
// as it stands (its answer then waits, like everything else).
func TestSaveWhileOutputWaits(t *testing.T) {
	s := startStalledServer(t)
	s.send(3, "_spbridge/save", map[string]any{"sessionId": s.pkg})
	deadline := time.Now().Add(outputGuard)
	for !partialTurn(savedTurn(t, s.pkg)) {
		if time.Now().After(deadline) {
			t.Fatalf("the turn was not saved within %v", outputGuard)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
