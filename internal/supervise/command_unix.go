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
	f     *os.File // our end of the socket; nil once Status has read it
	child *os.File // the supervisor's end, ours to close after Start
	path  string   // the CLI, for errors
	shut  bool     // Close has shut our side for writing
	rest  []byte   // what the supervisor wrote after its start message
	layer Layer
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
// On Linux the supervisor starts in a PID namespace of its own where the
// system allows it (see Layer; the first Command finds out, once per
// process).
//
// The caller starts the returned command, then calls Started; it must call
// Close on every path, and keep the Lifeline reachable meanwhile (a
// finalizer would close it). After the command's Wait, Status says how the
// CLI ended.
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
	return command(exe, cli, argv, "")
}

// command is Command, with extra options for the supervisor (optProbe).
func command(exe string, cli *exec.Cmd, argv []string, opts string) (*exec.Cmd, *Lifeline, error) {
	ours, theirs, err := socketpair()
	if err != nil {
		return nil, nil, fmt.Errorf("supervise: lifeline: %w", err)
	}
	m := mode{extra: len(cli.ExtraFiles), secret: newSecret()}
	// The socket is empty and holds far more: the write does not block.
	if _, err := ours.Write(hello(m.secret)); err != nil {
		ours.Close()
		theirs.Close()
		return nil, nil, fmt.Errorf("supervise: lifeline: %w", err)
	}
	attr, nsOpts := supervisorAttr(cli.SysProcAttr)
	m.opts = nsOpts + opts
	env := cli.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(withoutVar(env, EnvVar), EnvVar+"="+encodeMode(m))
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        append([]string{exe, cli.Path}, argv...),
		Env:         env,
		Dir:         cli.Dir,
		Stdin:       cli.Stdin,
		Stdout:      cli.Stdout,
		Stderr:      cli.Stderr,
		ExtraFiles:  append([]*os.File{theirs}, cli.ExtraFiles...),
		SysProcAttr: attr,
		WaitDelay:   cli.WaitDelay,
	}
	return cmd, &Lifeline{f: ours, child: theirs, path: cli.Path}, nil
}

// Probe starts a supervisor from exe as Command would, but with no CLI,
// and returns the layer it reports: what holds a CLI that this process
// starts under supervision.
func Probe(exe string) (Layer, error) {
	cmd, life, err := command(exe, &exec.Cmd{Stderr: os.Stderr}, nil, string(optProbe))
	if err != nil {
		return Layer{}, err
	}
	if err := cmd.Start(); err != nil {
		life.Close()
		return Layer{}, err
	}
	_, err = life.Started(cmd.Process)
	life.Close()
	cmd.Wait()
	life.Status(cmd.ProcessState) // releases the lifeline
	return life.layer, err
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
// start the CLI and returns the CLI's pid (as the supervisor sees it: in a
// PID namespace, its pid there), or a *StartError saying why the CLI did not
// start (the supervisor then exits with ExitNoStart). An error that is not a
// *StartError means the supervisor did not report (it was not started, or
// died); Close and Wait the command then.
func (l *Lifeline) Started(p *os.Process) (int, error) {
	if l.child != nil {
		l.child.Close()
		l.child = nil
	}
	if l.f == nil {
		return 0, errNoReport
	}
	var msg []byte
	buf := make([]byte, 256)
	for len(msg) < maxStartMsg && bytes.IndexByte(msg, '\n') < 0 {
		n, err := l.f.Read(buf)
		msg = append(msg, buf[:n]...)
		if err != nil {
			break
		}
	}
	// A CLI that ends at once may have its end message read with this one.
	if i := bytes.IndexByte(msg, '\n'); i >= 0 {
		msg, l.rest = msg[:i+1], append([]byte(nil), msg[i+1:]...)
	}
	pid, layer, err := decodeStart(msg, l.path)
	l.layer = layer
	return pid, err
}

// Layer returns what holds the CLI, as the supervisor reported it to
// Started.
func (l *Lifeline) Layer() Layer { return l.layer }

// Close closes the lifeline: the supervisor kills the CLI and every process
// the CLI started, if any is left, then exits. Close does not wait for that;
// Wait for the command. After Started, our end stays open for reading until
// Status reads the supervisor's last word (or garbage collection closes
// it). Calls after the first do nothing.
func (l *Lifeline) Close() error {
	if l.child != nil {
		// Before Started: nothing to read later.
		l.child.Close()
		l.child = nil
		if l.f != nil {
			err := l.f.Close()
			l.f = nil
			return err
		}
	}
	if l.f == nil || l.shut {
		return nil
	}
	l.shut = true
	// The supervisor reads end of file, as at our death.
	if err := syscall.Shutdown(int(l.f.Fd()), syscall.SHUT_WR); err != nil {
		return os.NewSyscallError("shutdown", err)
	}
	return nil
}

// Status returns how the CLI ended, once the supervisor has exited and ps
// is its state (the command's ProcessState after Wait): the CLI's wait
// status as the supervisor reported it, or, when it did not report (it was
// killed, or never started the CLI), the supervisor's own. Without a PID
// namespace the two agree (the supervisor exits as the CLI did); a
// supervisor that is a namespace's init cannot die by a signal it sends
// itself, so only its report tells a CLI killed by a signal. Status closes
// the lifeline; later calls return ps's status.
func (l *Lifeline) Status(ps *os.ProcessState) syscall.WaitStatus {
	own, _ := ps.Sys().(syscall.WaitStatus)
	if l.f == nil {
		return own
	}
	msg := l.rest
	l.rest = nil
	// The supervisor has exited and nothing else holds its end (it is
	// close-on-exec there): what it wrote is all here, and nothing more
	// can come. Do not wait anyway.
	fd := int(l.f.Fd())
	buf := make([]byte, 256)
	for len(msg) < maxStartMsg {
		n, _, err := syscall.Recvfrom(fd, buf, syscall.MSG_DONTWAIT)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		msg = append(msg, buf[:n]...)
	}
	l.f.Close()
	l.f = nil
	if ws, ok := decodeEnd(msg); ok {
		return syscall.WaitStatus(ws)
	}
	return own
}

// Interrupt sends SIGINT to process group pgid (the supervisor's, which the
// CLI shares).
func Interrupt(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		return os.NewSyscallError("kill", err)
	}
	return nil
}
