package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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

// gatedBackend's Close waits until gate is closed: a CLI slow to end.
type gatedBackend struct {
	*fakeBackend
	gate chan struct{}
}

func (b gatedBackend) Close() error {
	<-b.gate
	return b.fakeBackend.Close()
}

// TestShutdownWaitsForAFailedTurnsAnswer: when the input ends while a
// session whose turn panicked is still being ended (it is forgotten
// already, its CLI not closed yet, its prompt not answered), Serve waits
// for that prompt's answer before it returns: every request is answered,
// however late the failure came. (FuzzServe's "panic" seed hit this on a
// busy machine now and then.) synctest.Wait is the event "the server went
// as far as it can": the CLI's close holds the answer back until the test
// lets it go.
func TestShutdownWaitsForAFailedTurnsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		pkg := filepath.Join(dir, "Doc.silverpoint")
		if err := os.Mkdir(pkg, 0o700); err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		var out lockedBuffer
		srv := NewServer(&out, Config{
			CLIs: rowsOf(func(string, backend.Options) (backend.Backend, error) {
				return gatedBackend{newFake(), gate}, nil
			}),
			AuditDir: filepath.Join(dir, "audit"), Version: "test",
		})
		inR, inW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), inR) }()
		send := func(id int, method string, params any) {
			data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			inW.Write(append(data, '\n'))
		}
		send(1, "session/new", newSessionParams(pkg))
		send(2, "session/prompt", promptParams(pkg, "panic"))
		synctest.Wait() // the turn panicked: the session is closing, its CLI's Close waits
		if n := answers(t, &out)["2"]; n != 0 {
			t.Fatalf("the prompt was answered %d times before its session's CLI closed", n)
		}
		inW.Close()
		synctest.Wait() // the shutdown went as far as it can
		close(gate)
		if err := <-served; err != nil {
			t.Error(err)
		}
		got := answers(t, &out)
		for _, id := range []string{"1", "2"} {
			if got[id] != 1 {
				t.Errorf("id %s: %d answers, want 1", id, got[id])
			}
		}
		if !strings.Contains(out.String(), "the session was ended") {
			t.Errorf("the prompt's answer does not say its session ended:\n%s", out.String())
		}
	})
}

// answers counts the answers the server wrote, by id.
func answers(t *testing.T, out *lockedBuffer) map[string]int {
	t.Helper()
	n := map[string]int{}
	for line := range strings.SplitSeq(out.String(), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the server wrote %q: %v", line, err)
		}
		if m.Method == nil && len(m.ID) > 0 {
			n[fmt.Sprint(compactID(m.ID))]++
		}
	}
	return n
}
