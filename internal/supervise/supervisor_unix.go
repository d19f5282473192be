//go:build unix

package supervise

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// lifelineFD is the supervisor's file descriptor of its end of the lifeline
// (the first of the command's ExtraFiles).
const lifelineFD = 3

// reaper is what the supervisor needs of the OS to find and end the CLI's
// descendants. On Linux the supervisor is a PID namespace's init or a
// subreaper (reap_linux.go), macOS walks the process table (reap_darwin.go),
// other systems reach only the CLI.
type reaper interface {
	// layer names what holds the CLI's processes (a Layer's Name).
	layer() string
	// attr returns the SysProcAttr the CLI is started with.
	attr() *syscall.SysProcAttr
	// env returns the CLI's environment, given the supervisor's minus
	// EnvVar.
	env(env []string) []string
	// started is told the CLI's pid right after it started.
	started(pid int)
	// wait waits until the CLI has exited, reaps it (and, meanwhile, any
	// other child that ends) and returns its status.
	wait() syscall.WaitStatus
	// kill sends SIGKILL to every descendant known now, the CLI included if
	// it has not been reaped. It is safe to call concurrently with wait.
	kill()
	// finish, called after wait, kills every descendant left and returns
	// when none is left.
	finish()
}

// Main runs the supervisor and exits the process when this process was
// started as one by Command, and returns at once otherwise. Call it first
// thing in main, or in an init function, or in TestMain, of any binary that
// Command is given as exe.
//
// A supervisor is recognised by EnvVar together with its lifeline: fd 3 must
// be a socket on which the secret that EnvVar's value names waits. EnvVar
// alone, inherited from whatever started this process, does nothing: Main
// returns and the program runs as itself. In every case Main removes EnvVar
// from the process's environment.
//
// In supervisor mode the process starts the CLI named by its arguments as its
// child, in its own process group (which Command's caller set up), with the
// supervisor's stdin, stdout and stderr and the environment minus EnvVar. It
// then waits until the CLI exits or the lifeline closes (end of file, or any
// byte); in the second case it kills the CLI. Either way it kills every
// descendant of the CLI it can find, with SIGKILL, until none is left, writes
// the CLI's wait status on the lifeline (see Lifeline.Status), and exits:
// with the CLI's exit status; when a signal ended the CLI, by the same
// signal for SIGHUP, SIGINT, SIGTERM and SIGKILL (so the parent reads the
// same wait status as without a supervisor; SIGKILL too when the lifeline
// closed), and with status 128+n for another signal n (as a shell reports
// it); as a PID namespace's init, which a signal it sends itself does not
// kill, with 128+n for every signal. ExitSetup and ExitNoStart are the
// supervisor's own failures.
//
// The supervisor catches SIGINT, SIGTERM, SIGHUP and SIGQUIT and does
// nothing with them: sent to the group, they reach the CLI directly, whose
// handlers are reset to the default as usual at exec.
//
// Should the supervisor itself be killed with SIGKILL: in a PID namespace,
// the kernel kills every process in it. Otherwise, on Linux the CLI dies
// with it (PR_SET_PDEATHSIG), but what the CLI detached survives, adopted by
// the nearest subreaper or init: the parent must end a supervised CLI by
// closing the lifeline, never by SIGKILL to its group.
func Main() {
	v, ok := os.LookupEnv(EnvVar)
	os.Unsetenv(EnvVar)
	if ok {
		if m, ok := verify(v); ok {
			os.Exit(supervise(m, os.Args[1:]))
		}
	}
	mainCalled.Store(true)
}

// verify reports whether this process is a supervisor that Command started:
// v is a mode, and fd 3 a socket on which hello with v's secret waits. It
// then takes hello off the socket. Nothing is taken off a socket that holds
// anything else.
func verify(v string) (mode, bool) {
	m, err := decodeMode(v)
	if err != nil {
		return mode{}, false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(lifelineFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return mode{}, false
	}
	want := hello(m.secret)
	got := make([]byte, len(want))
	// The parent wrote hello before starting this process: it is there
	// now, whole, or this is no lifeline.
	n, err := peek(lifelineFD, got)
	if err != nil || n != len(want) || string(got) != string(want) {
		return mode{}, false
	}
	if n, err := take(lifelineFD, got); err != nil || n != len(want) {
		return mode{}, false
	}
	return m, true
}

func peek(fd int, b []byte) (int, error) {
	for {
		n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func take(fd int, b []byte) (int, error) {
	for {
		n, _, err := syscall.Recvfrom(fd, b, syscall.MSG_DONTWAIT)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func supervise(m mode, args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "spbridge supervisor: "+format+"\n", a...)
		return ExitSetup
	}
	syscall.CloseOnExec(lifelineFD)
	life := os.NewFile(lifelineFD, "lifeline")
	probe := m.has(optProbe)
	if !probe && len(args) < 2 {
		return fail("want the CLI's path and argv, have %q", args)
	}

	// Caught, so that they neither kill the supervisor nor stay ignored in
	// the CLI (an ignored signal would stay ignored across exec).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range sigs {
		}
	}()

	// Pdeathsig, and capabilities dropped by enterNamespace, belong to the
	// thread that starts the child: this one stays locked until the
	// process exits.
	runtime.LockOSThread()
	ownProc, err := enterNamespace(m)
	if err != nil {
		return fail("%v", err)
	}
	r, err := newReaper(m)
	if err != nil {
		return fail("%v", err)
	}
	layer := Layer{Name: r.layer(), OwnProc: ownProc}
	if probe {
		life.Write(encodeStart(0, layer, nil))
		return 0
	}
	path, argv := args[0], args[1:]
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := range m.extra {
		fd := uintptr(lifelineFD + 1 + i)
		syscall.CloseOnExec(int(fd))
		files = append(files, os.NewFile(fd, fmt.Sprintf("fd %d", fd)))
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   r.env(withoutVar(os.Environ(), EnvVar)),
		Files: files,
		Sys:   r.attr(),
	})
	if err != nil {
		life.Write(encodeStart(0, layer, err))
		return ExitNoStart
	}
	r.started(p.Pid)
	for _, f := range files[3:] {
		f.Close()
	}
	if _, err := life.Write(encodeStart(p.Pid, layer, nil)); err != nil {
		r.kill() // the lifeline is already gone
	}
	go func() {
		var b [1]byte
		life.Read(b[:])
		r.kill()
	}()
	ws := r.wait()
	r.finish()
	life.Write(encodeEnd(uint32(ws)))
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return raise(ws.Signal())
	}
	return ExitSetup
}

// raise ends the process by sig when the Go runtime lets a signal kill it
// the default way, and returns 128+sig otherwise.
func raise(sig syscall.Signal) int {
	if os.Getpid() == 1 {
		// A namespace's init ignores its own signals.
		return 128 + int(sig)
	}
	switch sig {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL:
		// Not notified any more, these make the runtime restore the
		// default action and raise the signal again: death by sig.
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig)
		select {} // the signal is on its way; other goroutines keep the runtime from reporting a deadlock
	}
	return 128 + int(sig)
}
