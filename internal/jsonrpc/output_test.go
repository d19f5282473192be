package jsonrpc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
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
			if len(whys) != 1 || whys[0] != ErrStalled {
				t.Errorf("told %v, want ErrStalled once", whys)
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

// TestWriterFlushesWhenIdle: the buffered writer holds no message once no
// writer waits: after concurrent writers return, every line is out.
func TestWriterFlushesWhenIdle(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, nil)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 1000 {
				w.Write(func(b []byte) []byte {
					return fmt.Appendf(b, `{"jsonrpc":"2.0","method":"m","params":[%d,%d]}`+"\n", g, i)
				})
			}
		}()
	}
	for range 8 {
		<-done
	}
	if n := bytes.Count(out.Bytes(), []byte("\n")); n != 8000 {
		t.Errorf("%d lines out after every writer returned, want 8000", n)
	}
	w.Send(map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
	if !bytes.HasSuffix(out.Bytes(), []byte(`{"id":1,"jsonrpc":"2.0","result":{}}`+"\n")) {
		t.Errorf("a lone message was held: %q", out.Bytes()[max(0, out.Len()-80):])
	}
}
