package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
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

// unreadOutputs are writers whose reader never reads: an os.Pipe (a write
// deadline gives up where the system's poller drives pipes) and an io.Pipe
// (no deadlines: the output's own goroutine writes).
func unreadOutputs(t *testing.T) map[string]io.Writer {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ir, iw := io.Pipe()
	t.Cleanup(func() { r.Close(); w.Close(); ir.Close(); iw.Close() })
	return map[string]io.Writer{"os.Pipe": w, "io.Pipe": iw}
}

// TestOutputGivesUpAtShutdown: a write the client does not take is given
// up once drain was called, whether it began before or after; the output
// is then gone, says why once, and drops what follows at once.
func TestOutputGivesUpAtShutdown(t *testing.T) {
	for name, w := range unreadOutputs(t) {
		t.Run(name, func(t *testing.T) {
			o := newOutput(w)
			var whys []error
			o.onGone = func(err error) { whys = append(whys, err) }
			big := make([]byte, 4<<20) // more than any pipe holds
			type result struct {
				n   int
				err error
			}
			res := make(chan result, 1)
			go func() { n, err := o.Write(big); res <- result{n, err} }()
			o.drain()
			r := await(t, "a write to a client that reads nothing", res)
			if r.err == nil || r.n == len(big) {
				t.Fatalf("write = %d, %v; want it given up", r.n, r.err)
			}
			select {
			case <-o.gone():
			default:
				t.Fatal("the output is not gone after a write was given up")
			}
			if n, err := o.Write([]byte("more\n")); n != 0 || err == nil {
				t.Errorf("write after the give-up = %d, %v", n, err)
			}
			if len(whys) != 1 || whys[0] != errStalled {
				t.Errorf("told %v, want errStalled once", whys)
			}
		})
	}
}

// TestOutputClientGone: a write to a client that closed its end fails at
// once, and the output is gone: the server ends as at the end of its
// input.
func TestOutputClientGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ir, iw := io.Pipe()
	r.Close()
	ir.Close()
	for name, w := range map[string]io.Writer{"os.Pipe": w, "io.Pipe": iw} {
		t.Run(name, func(t *testing.T) {
			o := newOutput(w)
			var whys []error
			o.onGone = func(err error) { whys = append(whys, err) }
			if _, err := o.Write([]byte("hello\n")); err == nil {
				t.Fatal("a write to a closed pipe did not fail")
			}
			select {
			case <-o.gone():
			default:
				t.Fatal("the output is not gone after a failed write")
			}
			if len(whys) != 1 || !strings.HasPrefix(whys[0].Error(), "the client is gone") {
				t.Errorf("told %v", whys)
			}
		})
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
	if !strings.Contains(s.logged(), errStalled.Error()) {
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
