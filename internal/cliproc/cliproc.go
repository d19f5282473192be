// Package cliproc starts a command-line program in its own process group,
// feeds its stdin, reads its stdout as lines and keeps the tail of its
// stderr, and always reaps it and everything it started.
//
// A Proc's life: Start starts the program; the caller writes with Write,
// takes stdout lines with Next whenever Ready says they wait, until Ready
// is closed, and calls Close (also after a normal exit) to end the program
// if it still runs and to make sure nothing of its process group is left. Done is closed once the
// program has exited, has been reaped, and its stdout and stderr have been
// read to the end; then ExitCode, Err and StderrTail give the outcome.
//
// In a binary that called supervise.Main (spbridge does, and so do the tests
// of the packages that start CLIs), the program runs under a supervisor
// (internal/supervise): when the program ends, when Close ends it, or when
// this process dies, even by SIGKILL, every process the program started is
// killed, including those that left its process group (setsid, nohup …&,
// double forks). Elsewhere the program is started directly, and only its
// process group is reached.
//
// The process group is the unit: signals go to the whole group (on Windows,
// SIGINT is CTRL_BREAK to the group, and any other signal ends the program
// and its Job Object). Unsupervised on Linux, when the program (the group's
// leader) exits, whatever it left running in its group is killed with
// SIGKILL before the leader is reaped, while the leader's zombie still pins
// the group's id, so a signal can never reach an unrelated group that reused
// the number.
//
// What depends on the OS is behind the system interface: proc_unix.go (with
// exit_linux.go and exit_other_unix.go) and proc_windows.go.
package cliproc

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"spbridge/internal/supervise"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxLine    = 64 << 20
	DefaultStderrTail = 64 << 10
	DefaultWaitDelay  = time.Second
)

// groupGoneWait bounds how long Close waits for the killed members of the
// process group to disappear. Members that were not this process's children
// are reaped by their new parent (init or a subreaper), which some inits do
// only every few seconds.
const groupGoneWait = 5 * time.Second

// lifelineWait bounds how long Close waits for the supervisor to kill the
// program and everything it started once the lifeline is closed, before it
// kills the group itself (which would kill the supervisor before it cleaned
// up: a last resort).
const lifelineWait = 5 * time.Second

// supervisorExe returns the binary to run the supervisor from, or an error
// when there is none (supervise.ErrNoMain): the program is then started
// directly. Tests replace it to try the unsupervised path.
var supervisorExe = supervise.Executable

// system is what a Proc needs of the OS; sys is this OS's.
type system interface {
	// attr returns the SysProcAttr that starts the program in a process
	// group of its own.
	attr() *syscall.SysProcAttr
	// awaitExit waits until the child pid has exited, without reaping it,
	// and returns true; where the OS cannot do that, it returns false at
	// once and the caller's Wait waits.
	awaitExit(pid int) bool
	// signal sends sig to p's process group; p.mu is held.
	signal(p *Proc, sig syscall.Signal) error
	// kill kills p's process group at once, supervisor included; p.mu is
	// held.
	kill(p *Proc)
	// groupGone waits up to limit until process group pgid, whose leader
	// has been reaped, has no member left, reaping those that are this
	// process's children; it reports whether the group is gone.
	groupGone(pgid int, limit time.Duration) bool
}

// Config says what to start and how to read it. The zero value of each
// optional field selects its default.
type Config struct {
	// Path is the program: a name looked up on this process's PATH (not the
	// PATH in Env), or a path, resolved against Dir when relative.
	Path string
	// Args are the arguments, not including the program itself.
	Args []string
	// Dir is the working folder; empty means this process's.
	Dir string
	// Env is the program's complete environment; nil inherits os.Environ().
	Env []string
	// MaxLine is the longest stdout line, in bytes without its "\n", that is
	// delivered; a longer one is skipped and reported as Line.Oversize.
	// Default DefaultMaxLine.
	MaxLine int
	// StderrTail is how many bytes of the end of stderr are kept. Default
	// DefaultStderrTail.
	StderrTail int
	// WaitDelay bounds reading after the program has exited: stdout and
	// stderr are read until end of file, but no longer than until they have
	// been silent for WaitDelay (a process outside the group may hold them
	// open forever). Default DefaultWaitDelay.
	WaitDelay time.Duration
}

// Proc is a running (or finished) program started by Start. Its methods are
// safe for concurrent use.
type Proc struct {
	cmd       *exec.Cmd
	pid       int
	life      *supervise.Lifeline // nil when unsupervised; closed with mu held
	waitDelay time.Duration

	stdin  *os.File // our write end; closed by CloseStdin, Close or exit
	stdout *os.File // our read end; closed by the stdout reader
	stderr *os.File // our read end; closed by the stderr reader

	// The lines read from stdout, for Ready and Next (batch.go).
	qmu         sync.Mutex
	queue       []*batch // read, not yet taken, oldest first
	cur         *batch   // the batch Next takes lines from
	pool        []*batch // batches to fill again
	discard     bool     // Close gave up on the receiver
	readyClosed bool
	ready       chan struct{} // capacity 1; see Ready
	space       chan struct{} // capacity 1; the receiver took a batch or every line
	batchSize   int

	tail    *tailBuffer
	readers sync.WaitGroup

	mu          sync.Mutex
	reaped      bool // the leader was reaped: its pid may be reused, signal nothing
	exited      bool // reading switched to the WaitDelay idle bound
	stopped     bool // Close gave up on the receiver of the lines
	stdinClosed bool
	cut         bool // output was cut after WaitDelay of silence

	stop       chan struct{} // closed when stopped is set
	exitedCh   chan struct{} // closed after the leader was reaped
	done       chan struct{} // closed after exitedCh and the readers' end
	stderrTail []byte        // snapshot taken when done is closed

	status syscall.WaitStatus // how the program ended, once done is closed

	closeOnce sync.Once

	wmu     sync.Mutex
	wq      []writeReq // writes queued for stdin, oldest first
	writing bool       // a goroutine is writing the queue
}

// writeReq is one queued write and where its outcome goes.
type writeReq struct {
	b    []byte
	done chan error
}

// Start starts the program described by cfg in a new process group, with
// pipes to its stdin, stdout and stderr, and starts reading stdout (into
// Ready and Next) and stderr (into a ring of the last StderrTail bytes) at once, so
// neither can fill up and stall the program.
//
// Supervised (supervise.Executable answers), the program's parent is the
// supervisor, which leads the process group, and Pid is the supervisor's.
// If this process dies without calling Close, the supervisor kills the
// program and everything it started.
//
// Unsupervised on Linux, the program gets Pdeathsig SIGKILL: if this process
// dies without calling Close, the kernel kills the program (its leader only;
// members of its group that it started survive such a crash). Go ties
// Pdeathsig to the OS thread that started the child, not to the process, so
// Start then starts the program from a goroutine locked to its thread, which
// stays locked (blocked in waitid) until the program has been reaped.
//
// On failure Start returns a *StartError, and nothing is left to close.
// Otherwise the caller must take lines with Next until Ready is closed, or call
// Close, for the Proc's goroutines to end.
func Start(cfg Config) (*Proc, error) {
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = DefaultStderrTail
	}
	if cfg.WaitDelay <= 0 {
		cfg.WaitDelay = DefaultWaitDelay
	}

	// The child's ends are made blocking by exec (through Fd); ours stay
	// non-blocking, so that deadlines and Close can interrupt a blocked Read
	// or Write.
	var files []*os.File // all six ends, for cleanup on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, &StartError{Path: cfg.Path, Err: err}
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, &StartError{Path: cfg.Path, Err: err}
	}
	growPipe(outR)
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, &StartError{Path: cfg.Path, Err: err}
	}

	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = sys.attr()
	var life *supervise.Lifeline
	if exe, err := supervisorExe(); err == nil {
		if cmd, life, err = supervise.Command(exe, cmd); err != nil {
			closeAll()
			return nil, &StartError{Path: cfg.Path, Err: err}
		}
	}

	p := &Proc{
		cmd:       cmd,
		life:      life,
		waitDelay: cfg.WaitDelay,
		stdin:     inW,
		stdout:    outR,
		stderr:    errR,
		ready:     make(chan struct{}, 1),
		space:     make(chan struct{}, 1),
		batchSize: batchSize,
		tail:      newTailBuffer(cfg.StderrTail),
		stop:      make(chan struct{}),
		exitedCh:  make(chan struct{}),
		done:      make(chan struct{}),
	}
	started := make(chan error)
	go p.run(started)
	if err := <-started; err != nil {
		closeAll()
		return nil, &StartError{Path: cfg.Path, Err: err}
	}
	// The child has its copies; ours of its ends would keep the pipes open.
	inR.Close()
	outW.Close()
	errW.Close()
	go p.readStdout(cfg.MaxLine)
	go p.readStderr()
	return p, nil
}

// run starts the program, waits for it to exit, kills what is left of its
// group, reaps it (the only place that does), and closes exitedCh and done.
// Unsupervised with Pdeathsig, it runs locked to its OS thread for the
// program's lifetime.
func (p *Proc) run(started chan<- error) {
	lock := p.life == nil && pdeathsigThread
	if lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if err := p.cmd.Start(); err != nil {
		if p.life != nil {
			p.life.Close()
		}
		started <- err
		return
	}
	if p.life != nil {
		if _, err := p.life.Started(p.cmd.Process); err != nil {
			// The supervisor exits by itself once the lifeline is closed;
			// on Windows the program runs outside its Job Object.
			if runtime.GOOS == "windows" {
				p.cmd.Process.Kill()
			}
			p.life.Close()
			p.cmd.Wait()
			p.life.Status(p.cmd.ProcessState) // releases the lifeline
			started <- err
			return
		}
	}
	pid := p.cmd.Process.Pid
	p.pid = pid
	// The readers are counted here, before Start launches them, so that the
	// Wait below cannot pass them.
	p.readers.Add(2)
	started <- nil

	// Wait for the exit without reaping where the OS allows: the zombie
	// keeps pid, and so the group's id, from being reused while the group is
	// killed. A supervisor has killed everything the program started before
	// it exits; this also catches what a supervisor killed by SIGKILL left.
	//
	// Where the exit cannot be awaited without reaping, the group's id is
	// pinned after the reaping only while the group has members: a signal
	// sent in between, or the kill of an unsupervised group below, would hit
	// a group that reused the id, which needs the pids to wrap around
	// within microseconds.
	pinned := sys.awaitExit(pid)
	if !pinned {
		p.cmd.Wait()
	}
	p.mu.Lock()
	if pinned {
		sys.kill(p)
		p.cmd.Wait() // the status is in p.cmd.ProcessState
	} else if p.life == nil {
		sys.kill(p)
	}
	p.status, _ = p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if p.life != nil {
		// The program's own status: a supervisor in a PID namespace
		// cannot die by the program's signal, so it reports it.
		p.status = p.life.Status(p.cmd.ProcessState)
	}
	p.reaped = true
	p.exited = true
	if p.life != nil {
		p.life.Close()
	}
	deadline := time.Now().Add(p.waitDelay)
	p.stdout.SetReadDeadline(deadline)
	p.stderr.SetReadDeadline(deadline)
	p.mu.Unlock()

	p.CloseStdin()
	close(p.exitedCh)
	p.readers.Wait()
	p.stderrTail = p.tail.bytes()
	close(p.done)
}

// idleReader reads a pipe end of p, applying the WaitDelay idle bound after
// the program's exit and refusing to read once Close has stopped reading.
type idleReader struct {
	p *Proc
	f *os.File
}

func (r idleReader) Read(b []byte) (int, error) {
	r.p.mu.Lock()
	if r.p.stopped {
		r.p.mu.Unlock()
		return 0, errStopped
	}
	if r.p.exited {
		r.f.SetReadDeadline(time.Now().Add(r.p.waitDelay))
	}
	r.p.mu.Unlock()
	n, err := r.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		r.p.mu.Lock()
		if r.p.stopped {
			err = errStopped
		} else {
			r.p.cut = true
		}
		r.p.mu.Unlock()
	}
	return n, err
}

// errStopped ends a reader that Close stopped.
var errStopped = errors.New("reading stopped")

func (p *Proc) readStdout(maxLine int) {
	defer p.readers.Done()
	defer p.endLines()
	defer p.stdout.Close()
	readBatches(idleReader{p, p.stdout}, maxLine, p.newBatch, p.sendBatch)
}

func (p *Proc) readStderr() {
	defer p.readers.Done()
	defer p.stderr.Close()
	r := idleReader{p, p.stderr}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		p.tail.write(buf[:n])
		if err != nil {
			return
		}
	}
}

// Pid returns the process group's id: the supervisor's process id when the
// program is supervised, else the program's own. Once Done is closed the
// number may belong to another process.
func (p *Proc) Pid() int { return p.pid }

// Write writes b to the program's stdin, after everything sent before it,
// and blocks until all of b is written (the pipe holds 64 KiB; beyond that
// the program must read): only CloseStdin, Close or the program's exit end a
// write the program does not read. Writes and Sends do not interleave. After
// CloseStdin, Close or the program's exit it returns an error matching
// ErrStdinClosed; when the program closed its stdin first, an error matching
// syscall.EPIPE.
func (p *Proc) Write(b []byte) error { return <-p.Send(b) }

// Send queues b to be written to the program's stdin after everything sent
// or written before it, and returns at once, so that a caller is never
// held by a program that does not read its input. The returned channel
// (buffered) receives the write's outcome, as Write returns it, once all of
// b is written or the write failed. The caller must not change b until
// then. A write the program does not read ends only when stdin is closed
// (CloseStdin, Close, or the program's exit), which fails it and every
// write queued after it.
func (p *Proc) Send(b []byte) <-chan error {
	done := make(chan error, 1)
	p.wmu.Lock()
	p.wq = append(p.wq, writeReq{b, done})
	start := !p.writing
	p.writing = true
	p.wmu.Unlock()
	if start {
		go p.drainWrites()
	}
	return done
}

// drainWrites writes the queue in order and ends when it is empty; Send
// starts it again for the next write.
func (p *Proc) drainWrites() {
	for {
		p.wmu.Lock()
		if len(p.wq) == 0 {
			p.writing = false
			p.wmu.Unlock()
			return
		}
		req := p.wq[0]
		p.wq[0] = writeReq{}
		p.wq = p.wq[1:]
		p.wmu.Unlock()
		req.done <- p.write(req.b)
	}
}

func (p *Proc) write(b []byte) error {
	_, err := p.stdin.Write(b)
	if errors.Is(err, os.ErrClosed) {
		return ErrStdinClosed
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: "stdin", Err: unwrapPathError(err)}
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CloseStdin closes the program's stdin, so that it reads end of file; a
// Write blocked meanwhile returns ErrStdinClosed. Calls after the first, and
// after the program's exit (which closes stdin), return nil.
func (p *Proc) CloseStdin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stdinClosed {
		return nil
	}
	p.stdinClosed = true
	if err := p.stdin.Close(); err != nil {
		return &os.PathError{Op: "close", Path: "stdin", Err: unwrapPathError(err)}
	}
	return nil
}

// Signal sends sig to every process of the program's process group. Once the
// program has been reaped it sends nothing and returns os.ErrProcessDone,
// since the group's id may then belong to another group. SIGKILL to a
// supervised program closes its lifeline instead, so that the supervisor
// kills the program and everything it started (the program is then reported
// killed by SIGKILL); SIGKILL would kill the supervisor before it cleaned
// up. On Windows, SIGINT is CTRL_BREAK to the group, and any other signal
// ends the program (and its Job Object).
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	if sig == syscall.SIGKILL && p.life != nil {
		return p.life.Close()
	}
	return sys.signal(p, sig)
}

// Done returns a channel that is closed when the program has exited, has been
// reaped, whatever was left of its group has been sent SIGKILL, and its
// stdout and stderr have been read to the end (and every line taken
// with Next, unless Close gave up on the receiver).
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitCode returns the program's exit status once Done is closed: -1 when a
// signal killed it, and -1 before Done is closed.
func (p *Proc) ExitCode() int {
	select {
	case <-p.done:
		return p.status.ExitStatus()
	default:
		return -1
	}
}

// Err returns, once Done is closed, nil for a program that exited with status
// 0, a *ExitError for a non-zero status or a killing signal, and an error
// matching ErrWaitDelay when the status was 0 but reading its output was cut
// short after the exit. Before Done is closed it returns nil.
func (p *Proc) Err() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	ws := p.status
	switch {
	case ws.Signaled():
		return &ExitError{Code: -1, Signal: ws.Signal(), Stderr: p.StderrTail()}
	case ws.ExitStatus() != 0:
		return &ExitError{Code: ws.ExitStatus(), Stderr: p.StderrTail()}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return ErrWaitDelay
	}
	return nil
}

// StderrTail returns a copy of the last Config.StderrTail bytes the program
// has written to stderr so far.
func (p *Proc) StderrTail() []byte {
	select {
	case <-p.done:
		return append([]byte(nil), p.stderrTail...)
	default:
		return p.tail.bytes()
	}
}

// Close ends the program and returns Err (so an *ExitError when Close had to
// signal it). Unsupervised, it first kills what the program started that
// left its process group, while the program still runs and they can be
// found (KillEscaped); supervised, the supervisor does that. It closes stdin
// and waits up to grace for the program to exit; then sends SIGINT to the
// group and waits up to grace; SIGTERM and waits up to grace; then SIGKILL
// (supervised: it closes the lifeline, and the supervisor kills the program
// and everything it started). A program that ignores everything thus ends
// after about 3×grace. When the program has exited, whatever is left of its
// group is killed with SIGKILL, and the receiver of the lines gets up to
// grace to take the remaining lines; the rest are discarded and Ready is
// closed.
// Close then waits (up to 5 s) until no process of the group is left,
// reaping members that became this process's children (when it is a child
// subreaper or PID 1); members adopted by init are reaped by init.
//
// Close returns after the program has been reaped and the reading goroutines
// have ended. It is safe to call more than once and concurrently; every call
// waits for the first to finish.
func (p *Proc) Close(grace time.Duration) error {
	p.closeOnce.Do(func() { p.close(max(grace, 0)) })
	return p.Err()
}

func (p *Proc) close(grace time.Duration) {
	if p.life == nil {
		// What the program started and detached would outlive it, out of
		// reach.
		p.KillEscaped(false)
	}
	p.CloseStdin()
	if !p.waitExited(grace) {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			p.Signal(sig)
			if p.waitExited(grace) {
				break
			}
		}
		p.Signal(syscall.SIGKILL)
		if p.life != nil && !p.waitExited(max(grace, lifelineWait)) {
			p.mu.Lock()
			if !p.reaped {
				sys.kill(p)
			}
			p.mu.Unlock()
		}
		<-p.exitedCh
	}
	p.mu.Lock()
	if p.life != nil {
		p.life.Close() // ends what a program that exited by itself left
	}
	p.mu.Unlock()
	if !p.waitDone(grace) {
		p.mu.Lock()
		p.stopped = true
		now := time.Now()
		p.stdout.SetReadDeadline(now)
		p.stderr.SetReadDeadline(now)
		close(p.stop)
		p.mu.Unlock()
		p.Discard()
		<-p.done
	}
	sys.groupGone(p.pid, groupGoneWait)
}

func (p *Proc) waitExited(d time.Duration) bool { return waitFor(p.exitedCh, d) }
func (p *Proc) waitDone(d time.Duration) bool   { return waitFor(p.done, d) }

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
