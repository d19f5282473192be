//go:build unix

package cliproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// RunPTY runs a program with a new pseudo-terminal as its controlling
// terminal (it leads a session and process group of its own) and relays in
// to the terminal and the terminal to out until the program exits. It
// returns the program's exit status (128+n when killed by signal n).
//
// When in is a terminal, it is put in raw mode, so keys (Ctrl-C included)
// reach the program as typed, and restored on every way out; its window size
// is given to the program and kept in step on SIGWINCH. When in is a pipe or
// a file, the program still gets its terminal, sized Rows×Cols. When ctx is
// done, the program's group is hung up, then sent SIGTERM and SIGKILL, and
// reaped. End of input is not passed on: the program decides when it is
// done.
func RunPTY(ctx context.Context, cfg PTYConfig, in io.Reader, out io.Writer) (int, error) {
	if cfg.Rows == 0 || cfg.Cols == 0 {
		cfg.Rows, cfg.Cols = 24, 80
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Second
	}
	path, err := exec.LookPath(cfg.Path)
	if err != nil {
		return 0, &StartError{Path: cfg.Path, Err: err}
	}
	cmd := exec.Command(path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env

	inFile, _ := in.(*os.File)
	isTerm := inFile != nil && term.IsTerminal(int(inFile.Fd()))
	size := &pty.Winsize{Rows: cfg.Rows, Cols: cfg.Cols}
	if isTerm {
		if w, h, err := term.GetSize(int(inFile.Fd())); err == nil && w > 0 && h > 0 {
			size = &pty.Winsize{Rows: uint16(h), Cols: uint16(w)}
		}
	}
	master, err := pty.StartWithSize(cmd, size) // Setsid and Setctty: a session of its own
	if err != nil {
		return 0, &StartError{Path: cfg.Path, Err: err}
	}
	defer master.Close()

	if isTerm {
		old, err := term.MakeRaw(int(inFile.Fd()))
		if err == nil {
			defer term.Restore(int(inFile.Fd()), old)
		}
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if w, h, err := term.GetSize(int(inFile.Fd())); err == nil {
					pty.Setsize(master, &pty.Winsize{Rows: uint16(h), Cols: uint16(w)})
				}
			}
		}()
	}

	// The terminal's output, until the program and everything holding the
	// terminal ended: EIO from the master is its end of file.
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		io.Copy(out, ptyReader{master})
	}()
	// Input, for as long as there is some. It is not waited for: a read of
	// spbridge's own input may block until the process ends.
	go io.Copy(master, in)

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	pgid := cmd.Process.Pid
	var werr error
	select {
	case werr = <-waitDone:
	case <-ctx.Done():
		werr = stopGroup(pgid, cfg.Grace, waitDone)
	}
	// Whatever the program left in its group goes too. What it wrote before
	// it ended is still in the terminal: the relay passes it on and ends at
	// EIO, at once unless a process that left the group holds the terminal,
	// so it is waited for, up to drainWait (a busy machine may take a while
	// to run the relay; its last words, such as why it ended, matter).
	syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-outDone:
	case <-time.After(drainWait):
	}
	return exitStatus(cmd, werr)
}

// drainWait bounds the wait for the terminal's last output once the program
// ended; only a process that left its group and still holds the terminal
// makes it wait that long.
const drainWait = 10 * time.Second

// stopGroup hangs up a process group, then sends SIGTERM and SIGKILL, grace
// apart, until the leader is reaped.
func stopGroup(pgid int, grace time.Duration, done <-chan error) error {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGKILL} {
		syscall.Kill(-pgid, sig)
		select {
		case err := <-done:
			return err
		case <-time.After(grace):
		}
	}
	return <-done
}

func exitStatus(cmd *exec.Cmd, err error) (int, error) {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 0, fmt.Errorf("run %s: %w", cmd.Path, err)
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return cmd.ProcessState.ExitCode(), nil
}

// ptyReader reads a pseudo-terminal's master, reporting EIO (every slave
// closed) as the end of file it is.
type ptyReader struct{ f *os.File }

func (r ptyReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}
