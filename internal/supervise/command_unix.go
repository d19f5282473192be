//go:build unix

package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Lifeline is the parent's end of a supervised CLI: while it is open the CLI
// may run; closing it (or this process's death) ends the CLI and everything
// it started. Its methods are not safe for concurrent use.
type Lifeline struct {
	f     *os.File // our end of the socket
	child *os.File // the supervisor's end, ours to close after Start
	path  string   // the CLI, for errors
}

// Command returns a command that runs the CLI described by cli under a
// supervisor: exe (normally os.Executable()) in supervisor mode, with cli's
// working folder, environment (nil meaning os.Environ()), stdin, stdout,
// stderr, extra files and SysProcAttr, so that the CLI inherits stdin, stdout
// and stderr from the supervisor as they are (no copying), and a process
// group set up by SysProcAttr holds both. Pdeathsig is cleared for the
// supervisor (the lifeline does that job, and the supervisor must outlive
// this process to clean up); the supervisor sets it on the CLI on Linux.
// cli itself is not changed and must not be started; it must not come from
// exec.CommandContext (end the CLI with Lifeline.Close).
//
// The caller starts the returned command, then calls Started; it must call
// Close on every path, and keep the Lifeline reachable meanwhile (a
// finalizer would close it).
//
// Signals sent to the supervisor's process group reach the CLI directly; the
// supervisor ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT and forwards
// nothing. SIGKILL must not be sent to the supervisor: it would die without
// cleaning up (see Main); close the lifeline instead.
func Command(exe string, cli *exec.Cmd) (*exec.Cmd, *Lifeline, error) {
	if cli.Err != nil {
		return nil, nil, cli.Err
	}
	if cli.Process != nil {
		return nil, nil, errors.New("supervise: command already started")
	}
	if cli.Cancel != nil {
		return nil, nil, errors.New("supervise: command has a Cancel (exec.CommandContext); end it with Lifeline.Close")
	}
	argv := cli.Args
	if len(argv) == 0 {
		argv = []string{cli.Path}
	}
	ours, theirs, err := socketpair()
	if err != nil {
		return nil, nil, fmt.Errorf("supervise: lifeline: %w", err)
	}
	env := cli.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(withoutVar(env, EnvVar), EnvVar+"="+encodeMode(len(cli.ExtraFiles)))
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        append([]string{exe, cli.Path}, argv...),
		Env:         env,
		Dir:         cli.Dir,
		Stdin:       cli.Stdin,
		Stdout:      cli.Stdout,
		Stderr:      cli.Stderr,
		ExtraFiles:  append([]*os.File{theirs}, cli.ExtraFiles...),
		SysProcAttr: supervisorAttr(cli.SysProcAttr),
		WaitDelay:   cli.WaitDelay,
	}
	return cmd, &Lifeline{f: ours, child: theirs, path: cli.Path}, nil
}

// socketpair returns a connected pair of Unix stream sockets, close-on-exec.
func socketpair() (ours, theirs *os.File, err error) {
	// The fork lock keeps other goroutines' children from inheriting the
	// sockets between their creation and close-on-exec (macOS has no
	// SOCK_CLOEXEC).
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), "lifeline"), os.NewFile(uintptr(fds[1]), "lifeline (supervisor)"), nil
}

// Started must be called once the command returned by Command has been
// started (p is its Process; unused on Unix). It waits for the supervisor to
// start the CLI and returns the CLI's pid, or a *StartError saying why the
// CLI did not start (the supervisor then exits with ExitNoStart). An error
// that is not a *StartError means the supervisor did not report (it was not
// started, or died); Close and Wait the command then.
func (l *Lifeline) Started(p *os.Process) (int, error) {
	if l.child != nil {
		l.child.Close()
		l.child = nil
	}
	var msg []byte
	buf := make([]byte, 256)
	for len(msg) < maxStartMsg && !bytes.HasSuffix(msg, []byte("\n")) {
		n, err := l.f.Read(buf)
		msg = append(msg, buf[:n]...)
		if err != nil {
			break
		}
	}
	return decodeStart(msg, l.path)
}

// Close closes the lifeline: the supervisor kills the CLI and every process
// the CLI started, if any is left, then exits. Close does not wait for that;
// Wait for the command. Calls after the first do nothing.
func (l *Lifeline) Close() error {
	if l.child != nil {
		l.child.Close()
		l.child = nil
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Interrupt sends SIGINT to process group pgid (the supervisor's, which the
// CLI shares).
func Interrupt(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		return os.NewSyscallError("kill", err)
	}
	return nil
}
