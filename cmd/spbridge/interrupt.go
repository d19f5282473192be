package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"spbridge/internal/holdexit"
)

// Exit codes of a command ended by a signal: 128 and the signal's number,
// as a shell reports it.
const (
	exitSIGINT  = 130 // Ctrl-C
	exitSIGTERM = 143
)

// signalError is why a command's context was cancelled: spbridge got
// SIGINT or SIGTERM.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string {
	if e.sig == syscall.SIGTERM {
		return "terminated (SIGTERM)"
	}
	return "interrupted"
}

func (e *signalError) code() int {
	if e.sig == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}

// interrupts is how spbridge ends on SIGINT and SIGTERM. The first signal
// cancels the command's context, with a *signalError as its cause. A
// command then exits at once (after any state file being replaced:
// internal/holdexit), unless it ends itself (serve, login and auth stop
// their CLIs; run once it holds its package, see takeInterrupts) or is
// writing a package: that is done in a write section (see writing), whose
// code watches the context and leaves the package whole or untouched; the
// command then returns and exits as the signal says. A second signal
// during a write section exits at once, as kill would.
type interrupts struct {
	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	atOnce  bool // the command may be ended at once outside write sections
	writing int  // write sections running
	got     *signalError
	stderr  io.Writer
	exitFn  func(code int) // os.Exit
}

type interruptsKey struct{}

// ownInterrupts are the commands that end themselves on a signal: they
// stop their CLIs and save what they hold.
var ownInterrupts = map[string]bool{"serve": true, "login": true, "auth": true}

// catchInterrupts catches SIGINT and SIGTERM for the command that args
// (spbridge's arguments) name, until stop is called.
func catchInterrupts(args []string, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, in := newInterrupts(args, stderr, os.Exit)
	cancel := in.cancel
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				in.signal(s)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// newInterrupts returns the context of the command args name and what
// takes its signals; exit ends the process.
func newInterrupts(args []string, stderr io.Writer, exit func(int)) (context.Context, *interrupts) {
	ctx, cancel := context.WithCancelCause(context.Background())
	in := &interrupts{cancel: cancel, atOnce: true, stderr: stderr, exitFn: exit}
	for _, a := range args {
		if a == "--" || !isFlag(a) {
			in.atOnce = !ownInterrupts[a]
			break
		}
	}
	return context.WithValue(ctx, interruptsKey{}, in), in
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// signal takes one signal.
func (in *interrupts) signal(s os.Signal) {
	in.mu.Lock()
	first := in.got == nil
	if first {
		in.got = &signalError{s}
		in.cancel(in.got)
	}
	// No write section starts once got is set.
	exitNow := in.atOnce && (!first || in.writing == 0)
	in.mu.Unlock()
	switch {
	case !exitNow:
	case first:
		holdexit.Exit(in.exit) // a state file being replaced is replaced first
	default:
		in.exit()
	}
}

// exit ends the process for the signal it got, saying so.
func (in *interrupts) exit() {
	fmt.Fprintf(in.stderr, "spbridge: %v\n", in.got)
	in.exitFn(in.got.code())
}

// writing runs fn as a write section: a signal does not end the process
// while fn runs (ctx is cancelled, and fn is to return soon after, having
// left what it writes whole or untouched). A signal that came before
// returns its error without running fn.
func writing(ctx context.Context, fn func() error) error {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	if in == nil {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		return fn()
	}
	in.mu.Lock()
	if in.got != nil {
		in.mu.Unlock()
		return in.got
	}
	in.writing++
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		in.writing--
		in.mu.Unlock()
	}()
	return fn()
}

// takeInterrupts makes the command end itself on a signal from now on (run,
// once its session is open: it interrupts the turn and saves), instead of
// being ended at once; a signal that came before returns its error.
func takeInterrupts(ctx context.Context) error {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.got != nil {
		return in.got
	}
	in.atOnce = false
	return nil
}

// interruptError is err as the signal that cancelled ctx explains it: a
// command that returns the context's plain error (context.Canceled) ends
// with the signal's exit code too.
func interruptError(ctx context.Context, err error) error {
	var se *signalError
	if err == nil || errors.As(err, &se) || !errors.Is(err, context.Canceled) {
		return err
	}
	if errors.As(context.Cause(ctx), &se) {
		return fmt.Errorf("%w (%w)", err, se)
	}
	return err
}
