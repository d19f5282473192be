//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPollableOutput: serve's output, a pipe in blocking mode as an editor
// hands it over, becomes a copy that takes write deadlines (so a write the
// client does not take can be given up), and is back in blocking mode
// after; a regular file is left as it is.
func TestPollableOutput(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	if w.SetWriteDeadline(time.Now()) == nil {
		t.Fatal("a blocking pipe took a write deadline: nothing to test")
	}
	out, restore := pollableOutput(w)
	pf, ok := out.(*os.File)
	if !ok || pf == w {
		t.Fatalf("pollableOutput gave %T %v, want a copy", out, out)
	}
	if err := pf.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Errorf("the copy takes no write deadline: %v", err)
	}
	if _, err := pf.Write([]byte("line\n")); err != nil {
		t.Errorf("write: %v", err)
	}
	restore()
	if fl, err := unix.FcntlInt(uintptr(fds[1]), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("after restore: flags %#x, %v; want blocking mode", fl, err)
	}
	pf.Close()

	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if out, _ := pollableOutput(file); out != file {
		t.Errorf("a regular file became %v", out)
	}
}

// TestServeOneSocketForInputAndOutput: serve whose standard input and
// output are one socket (as socat's EXEC starts it) reads and answers as
// usual: its output is not made non-blocking under its input's reads.
func TestServeOneSocketForInputAndOutput(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "client"), os.NewFile(uintptr(fds[1]), "serve")
	defer ours.Close()
	cmd := exec.Command(spbridgeBin(t), "serve", "--no-audit")
	cmd.Env = append(os.Environ(), "SPBRIDGE_STATE_DIR="+t.TempDir())
	cmd.Stdin, cmd.Stdout = theirs, theirs
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// theirs stays open here: its flags are those of serve's input and
	// output, one open socket.
	defer theirs.Close()
	ours.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}` + "\n"))
	line, err := bufio.NewReader(ours).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":7`) || !strings.Contains(line, `"protocolVersion":1`) {
		t.Errorf("answer %q, %v\n%s", line, err, stderr.String())
	}
	// Answered, serve has set its output up: in non-blocking mode its
	// input's next read would fail at once, and serve end.
	if fl, err := unix.FcntlInt(uintptr(fds[1]), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("serve's input and output: flags %#x, %v; want blocking mode", fl, err)
	}
	unix.Shutdown(fds[0], unix.SHUT_WR) // the end of serve's input
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve: %v\n%s", err, stderr.String())
	}
}
