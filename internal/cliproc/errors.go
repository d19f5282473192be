package cliproc

import (
	"errors"
	"fmt"
	"syscall"
)

var (
	// ErrStdinClosed is matched (through errors.Is) by the error Write returns
	// after CloseStdin, Close, or the program's exit closed its stdin.
	ErrStdinClosed = errors.New("stdin closed")

	// ErrWaitDelay is matched by the error Err returns when the program
	// exited with status 0 but its stdout or stderr stayed open and silent
	// for Config.WaitDelay afterwards (held by a process that left its
	// process group), so reading them was cut short.
	ErrWaitDelay = errors.New("output still open after exit")
)

// StartError reports a program that could not be started. A program that is
// not found gives an Err that errors.Is matches to exec.ErrNotFound (a name
// looked up on PATH) or to fs.ErrNotExist (a path).
type StartError struct {
	Path string // the program, as given in Config.Path
	Err  error
}

func (e *StartError) Error() string { return fmt.Sprintf("start %s: %v", e.Path, e.Err) }

// Unwrap returns the underlying error.
func (e *StartError) Unwrap() error { return e.Err }

// ExitError reports a program that exited with a non-zero status or was
// killed by a signal.
type ExitError struct {
	Code   int            // exit status; -1 when killed by a signal
	Signal syscall.Signal // the signal that killed it, or 0
	Stderr []byte         // the tail of its stderr (at most Config.StderrTail bytes)
}

// Error returns "exit status 3" or "killed by signal 9 (killed)". It does
// not quote stderr, which may hold what the program was told or its
// credentials: Stderr is there for whoever shows it with care.
func (e *ExitError) Error() string {
	if e.Signal != 0 {
		return fmt.Sprintf("killed by signal %d (%v)", int(e.Signal), e.Signal)
	}
	return fmt.Sprintf("exit status %d", e.Code)
}
