package jsonrpc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// stalledOutputGrace is how long, once the server shuts down, one write
// may wait for the client to take the output. A client that takes nothing
// for that long (its pipe full, not read) is given up: what is left to send
// is dropped, and shutdown goes on without it.
const stalledOutputGrace = time.Second

// errOutputClosed is the error of a write after the server ended.
var errOutputClosed = errors.New("the server has ended")

// output is where the writer's buffer goes: the client. A write completes,
// fails (the client is gone: its pipe closed) or, once drain was called,
// is given up after stalledOutputGrace without completing. After a failure
// or a give-up nothing more is written and gone is closed: the server
// takes that as the client's end, as it takes the end of its input.
//
// A writer that takes write deadlines (a pipe or socket in Go's poller, as
// spbridge serve makes its standard output) is written to directly, and
// a deadline gives up. Any other is written to on a goroutine of the
// output's own, which the caller waits for until the write ends or is
// given up: the caller goes on, and the write, should it ever end, writes
// to a client that was given up.
type output struct {
	w        io.Writer
	deadline interface{ SetWriteDeadline(time.Time) error } // w's, nil when it has none

	draining  atomic.Bool
	drained   chan struct{} // closed by drain
	drainOnce sync.Once

	goneCh   chan struct{} // closed when the output failed, was given up or closed
	goneOnce sync.Once
	goneErr  error // why; set before goneCh is closed
	// onGone, when set before the first write, is told why the output
	// failed or was given up, once.
	onGone func(error)

	// Without deadlines: the goroutine that writes, started at the first
	// write, takes each write on reqs and answers on res.
	startOnce sync.Once
	reqs      chan []byte
	res       chan writeResult
}

type writeResult struct {
	n   int
	err error
}

// newOutput returns an output to w.
func newOutput(w io.Writer) *output {
	o := &output{w: w, drained: make(chan struct{}), goneCh: make(chan struct{})}
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Time{}) == nil {
		o.deadline = d
	}
	return o
}

// gone returns a channel closed when nothing more is written.
func (o *output) gone() <-chan struct{} { return o.goneCh }

// isGone reports whether nothing more is written.
func (o *output) isGone() bool {
	select {
	case <-o.goneCh:
		return true
	default:
		return false
	}
}

// end makes the output gone for err, once.
func (o *output) end(err error) {
	first := false
	o.goneOnce.Do(func() {
		o.goneErr = err
		close(o.goneCh)
		first = true
	})
	if first && o.onGone != nil && err != errOutputClosed {
		o.onGone(err)
	}
}

// drain starts the bound on writes: from now on a write (the one under way
// included) that the client does not take within stalledOutputGrace is
// given up.
func (o *output) drain() {
	o.drainOnce.Do(func() {
		o.draining.Store(true)
		close(o.drained)
		if o.deadline != nil {
			o.deadline.SetWriteDeadline(time.Now().Add(stalledOutputGrace))
		}
	})
}

// close ends the output: later writes write nothing.
func (o *output) close() { o.end(errOutputClosed) }

// Write writes p to the client, or gives up (see output).
func (o *output) Write(p []byte) (int, error) {
	if o.isGone() {
		return 0, o.goneErr
	}
	if o.deadline != nil {
		return o.writeDeadline(p)
	}
	return o.handOff(p)
}

func (o *output) writeDeadline(p []byte) (int, error) {
	if o.draining.Load() {
		o.deadline.SetWriteDeadline(time.Now().Add(stalledOutputGrace))
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.end(o.why(err))
	}
	return n, err
}

// why says why a write failed.
func (o *output) why(err error) error {
	if o.draining.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return ErrStalled
	}
	return fmt.Errorf("the client is gone: %w", err)
}

// ErrStalled is the error of a write given up (told to NewWriter's
// onGone).
var ErrStalled = fmt.Errorf("the client took no output for %v after shutdown began", stalledOutputGrace)

func (o *output) handOff(p []byte) (int, error) {
	o.startOnce.Do(func() {
		o.reqs = make(chan []byte)
		o.res = make(chan writeResult, 1)
		go o.run()
	})
	select {
	case o.reqs <- p:
	case <-o.goneCh:
		return 0, o.goneErr
	}
	drained := o.drained
	var expired <-chan time.Time
	for {
		select {
		case r := <-o.res:
			if r.err != nil {
				o.end(o.why(r.err))
			}
			return r.n, r.err
		case <-drained:
			drained = nil
			t := time.NewTimer(stalledOutputGrace)
			defer t.Stop()
			expired = t.C
		case <-expired:
			o.end(ErrStalled)
			return 0, ErrStalled
		case <-o.goneCh:
			return 0, o.goneErr
		}
	}
}

// run does the writes handed off, until the output is gone.
func (o *output) run() {
	for {
		select {
		case p := <-o.reqs:
			n, err := o.w.Write(p)
			o.res <- writeResult{n, err}
		case <-o.goneCh:
			return
		}
	}
}
