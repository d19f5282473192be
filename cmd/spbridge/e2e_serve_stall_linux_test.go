//go:build linux

package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// The end-to-end tests of a client that stops reading spbridge serve's
// output in the middle of a long turn of the real claude: serve's stdout is
// a pipe that the test fills and never reads. Whether the client then goes
// away (the pipe's reader closed) or serve is told to end (SIGTERM, SIGINT,
// standard input closed), serve must save the turn as it stands, end the
// CLI and exit 0 within its shutdown bound, dropping the output nobody
// takes.

// stallExitGuard only keeps a broken serve from hanging the test: it is far
// above the bound the README states (stalledOutputGrace, then the CLI's
// close escalation, 15 s at most), and nothing waits for it to pass.
const stallExitGuard = 3 * time.Minute

// stalledServe is spbridge serve whose claude streams a turn longer than
// serve's output pipe holds, into a pipe the test does not read.
type stalledServe struct {
	t      *testing.T
	e      *e2e
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *os.File // the output pipe's read end: never read
	outW   *os.File // a copy of its write end, to see when the pipe is full
	errR   *os.File // serve's stderr pipe's read end
	stderr syncBuffer
	copied chan struct{} // closed when stderr's copy ended
	exited chan error    // serve's wait result
	bridge string        // the marker in the environment of serve and all it starts
	text   string        // what the model streams
}

// startStalledServe starts serve, opens a session, sends a prompt whose
// reply is 4 MiB of text, and returns once serve's output pipe is full (so
// serve waits for the client to read).
func startStalledServe(t *testing.T) *stalledServe {
	t.Helper()
	// Four deltas of 1 MiB, a second apart: the pipe (1 MiB, as serve
	// grows it) and serve's buffer are full after two, and the stream is
	// still on its way when the test acts.
	text := strings.Repeat("0123456789abcdef", 1<<18)
	s := &stalledServe{t: t, text: text, copied: make(chan struct{}), exited: make(chan error, 1)}
	s.e = newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: text}}, ChunkDelay: time.Second})
	s.bridge, _ = reapMarkers(t)
	s.e.env = append(s.e.env, s.bridge)
	var err error
	if s.out, s.outW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.errR = errR
	s.cmd = exec.Command(spbridgeBin(t), "serve")
	s.cmd.Env = s.e.env
	s.cmd.Stdout = s.outW
	s.cmd.Stderr = errW
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// The pipe's write end is one open file with serve's standard output,
	// and its blocking mode is the file's: serve makes it nonblocking, so
	// that a write the client does not take is given up once serve is
	// ending, and each Fd call makes it blocking again. Taken once, here,
	// before serve starts (Start calls Fd too): taken after, it could
	// come after serve's change and undo it, and serve's last write then
	// waited in the kernel, past any deadline (serve outlived the guard,
	// its goroutines showed, about once in 300 runs under load).
	fd := int(s.outW.Fd())
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	go func() { io.Copy(&s.stderr, errR); close(s.copied) }()
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-s.exited:
			s.exited <- err
		default:
			s.cmd.Process.Kill()
			<-s.exited
		}
		s.out.Close()
		s.outW.Close()
		s.errR.Close()
		s.stdin.Close()
	})
	send := func(v any) {
		data, _ := json.Marshal(v)
		if _, err := s.stdin.Write(append(data, '\n')); err != nil {
			t.Fatalf("write to serve: %v", err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{"cwd": filepath.Dir(s.e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": s.e.pkg, "backend": "claude"}}}})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": map[string]any{"sessionId": s.e.pkg, "prompt": []any{map[string]any{"type": "text", "text": "count"}}}})
	// Only the turn's text can fill the pipe: once full, the turn streams
	// and serve waits for a reader.
	deadline := time.Now().Add(stallExitGuard)
	for {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(p, 0)
		if err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		if err == nil && n == 0 {
			break // no room left
		}
		select {
		case err := <-s.exited:
			s.exited <- err
			t.Fatalf("serve ended before its output pipe was full: %v\n%s", err, s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve's output pipe never filled\n%s", s.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if markedCount(s.bridge) < 2 {
		t.Fatalf("no CLI runs: %v", markedProcs(s.bridge))
	}
	return s
}

// markedCount is how many live processes hold marker.
func markedCount(marker string) int { return len(markedProcs(marker)) }

// waitExit waits for serve to exit and returns how long that took since
// from; a serve that outlives the guard is killed and the test fails.
func (s *stalledServe) waitExit(from time.Time) time.Duration {
	s.t.Helper()
	select {
	case err := <-s.exited:
		took := time.Since(from)
		s.exited <- err
		<-s.copied
		return took
	case <-time.After(stallExitGuard):
		// SIGQUIT makes serve print every goroutine's stack as it exits:
		// the failure shows where it waited.
		s.cmd.Process.Signal(syscall.SIGQUIT)
		var err error
		select {
		case err = <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			err = <-s.exited
		}
		s.exited <- err // for the cleanup
		<-s.copied
		s.t.Fatalf("spbridge serve did not exit within %v\n%s", stallExitGuard, s.stderr.String())
		return 0
	}
}

// check asserts what must hold once serve exited: status 0 (no signal
// killed it), nothing it started left, the turn saved as it stood.
func (s *stalledServe) check() {
	s.t.Helper()
	st := s.cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Exited() || ws.ExitStatus() != 0 {
		s.t.Errorf("serve ended with %v, want exit status 0\n%s", st, s.stderr.String())
	}
	if left := markedProcs(s.bridge); len(left) > 0 {
		s.t.Errorf("processes of the turn outlived serve: %v", left)
	}
	p, err := archive.Open(s.e.pkg, archive.KindDocument, true)
	if err != nil || p.Unreadable != "" {
		s.t.Fatalf("open the saved conversation: %v %s\n%s", err, p.Unreadable, s.stderr.String())
	}
	items := p.Conv.Items
	if len(items) < 2 || items[0].Type() != archive.TypeUser || items[0].String("text") != "count" ||
		items[1].Type() != archive.TypeAssistant || items[1].String("text") == "" || !strings.HasPrefix(s.text, items[1].String("text")) {
		var got []string
		for _, it := range items {
			got = append(got, it.Type()+" "+strings.TrimSpace(it.String("text")[:min(40, len(it.String("text")))]))
		}
		s.t.Errorf("saved items %q, want the prompt and the reply's text so far\n%s", got, s.stderr.String())
	} else {
		s.t.Logf("saved %d of the reply's %d bytes", len(items[1].String("text")), len(s.text))
	}
}

// TestE2EServeStalledOutputEnds: SIGTERM, SIGINT or standard input closed
// while the client reads none of serve's output (its pipe full): serve
// saves the turn, ends the CLI and exits 0, dropping what it cannot
// deliver.
func TestE2EServeStalledOutputEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(s *stalledServe)
	}{
		{"SIGTERM", func(s *stalledServe) { s.cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", func(s *stalledServe) { s.cmd.Process.Signal(syscall.SIGINT) }},
		{"stdin closed", func(s *stalledServe) { s.stdin.Close() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startStalledServe(t)
			start := time.Now()
			c.end(s)
			took := s.waitExit(start)
			t.Logf("serve exited %v after %s, its output pipe full and never read", took.Round(time.Millisecond), c.name)
			s.check()
		})
	}
}

// TestE2EServeClientGone: the client goes away (the reading ends of serve's
// stdout and stderr closed) while serve's output is backed up and its
// standard input stays open: serve is not killed by SIGPIPE but ends as
// when standard input closes, saving the turn and ending the CLI.
func TestE2EServeClientGone(t *testing.T) {
	s := startStalledServe(t)
	start := time.Now()
	s.errR.Close() // what serve logs from now on has no reader
	s.out.Close()
	took := s.waitExit(start)
	t.Logf("serve exited %v after its client went away", took.Round(time.Millisecond))
	s.check()
}
