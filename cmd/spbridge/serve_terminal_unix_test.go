//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// serveStderr runs spbridge serve with stdin as its standard input, calls
// end (which ends that input) and returns what serve wrote on standard
// error once it has exited.
func serveStderr(t *testing.T, stdin *os.File, end func()) string {
	t.Helper()
	cmd := exec.Command(spbridgeBin(t), "serve", "--no-audit")
	cmd.Env = append(os.Environ(), "SPBRIDGE_STATE_DIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	end()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("serve wrote %q on standard output, want nothing", stdout.String())
	}
	return stderr.String()
}

// TestServeOnTerminalSaysWhatItWaitsFor: serve started on a terminal
// says once, on standard error, what it waits for and how it ends; Ctrl-D
// ends it.
func TestServeOnTerminalSaysWhatItWaitsFor(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	// The terminal's output is read so that nothing it echoes blocks.
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	stderr := serveStderr(t, tty, func() {
		// Ctrl-D at the start of a line: the end of serve's input.
		if _, err := master.Write([]byte{4}); err != nil {
			t.Error(err)
		}
	})
	if n := strings.Count(stderr, serveTerminalNote); n != 1 {
		t.Errorf("the note %d times in serve's standard error, want once:\n%s", n, stderr)
	}
	for _, want := range []string{"waiting for an editor", "spbridge help editors", "Ctrl-D"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("standard error does not say %q:\n%s", want, stderr)
		}
	}
}

// TestServeOnPipeSaysNothing: started by an editor (standard input a
// pipe), serve writes no note.
func TestServeOnPipeSaysNothing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stderr := serveStderr(t, r, func() { w.Close() })
	if strings.Contains(stderr, "waiting for an editor") {
		t.Errorf("serve on a pipe wrote the terminal's note:\n%s", stderr)
	}
	if !strings.Contains(stderr, "served for") {
		t.Errorf("serve's standard error %q: not its log (did it run?)", stderr)
	}
}
