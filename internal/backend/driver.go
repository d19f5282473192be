package backend

import (
	"context"
	"fmt"
	"time"

	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Conn is one turn's protocol: what a CLI backend supplies the Driver
// that runs the turn, in the manner of a storage client under the policy
// that uses it. It speaks the CLI's protocol (stream-json and the control
// protocol for Claude Code, codex exec's JSON events, the app-server's
// JSON-RPC) and knows nothing of timeouts, interrupts or approvals but how
// to say them. Its methods are called on the turn's goroutine, one at a
// time.
type Conn interface {
	// Line handles one line the CLI printed, borrowed until Line returns:
	// it maps it, hands its item changes to h and answers what the CLI
	// asks that the turn does not serve. It returns the permission
	// requests the line brings, for the driver to ask, and the turn's end
	// when the line reports it.
	Line(data []byte, h Host) (asks []itemmap.Approval, end *itemmap.TurnEnd)
	// Answer tells the mapper and the CLI the answer d to permission
	// request id; the changes it brings go to h.
	Answer(id string, d Decision, h Host)
	// Written is told how the message's write (Driver.Sent) ended. A
	// non-nil return ends the turn: the CLI never took the message.
	Written(err error) error
	// Interrupt asks the CLI to stop the turn.
	Interrupt()
	// Escalate takes step n (1, 2, …) of an interrupt the CLI did not
	// heed within the grace, and reports whether it took one; with none
	// left the driver closes the process.
	Escalate(n int) bool
	// Settled reports whether a turn whose end the CLI reported is over:
	// nothing else of it is awaited.
	Settled() bool
	// Ended is given the end the CLI reported, as the turn is over, and
	// returns the turn's end; interrupted says whether the turn was
	// interrupted.
	Ended(end *itemmap.TurnEnd, interrupted bool, h Host) *itemmap.TurnEnd
	// Drained is told that the CLI's output ended, before the process is
	// reaped: what it left to say elsewhere (codex exec: what it refused,
	// in its log) goes to h.
	Drained(h Host)
	// Finish closes a turn the CLI did not end (it exited, or was stopped
	// for the idle timeout): the mapper's Finish.
	Finish(interrupted bool, text, detail string) itemmap.Result
	// Reap ends the process for good and returns the end of its stderr as
	// a failure's detail may show it.
	Reap() (detail string)
}

// Driver runs one turn of a CLI that took (or is taking) the message: the
// turn policy every backend shares, over the protocol its Conn speaks.
// Claude Code, codex exec and the codex app-server each supply a Conn;
// the policy is here once:
//
//   - Lines. Each read's lines are handled in order; a line over the
//     length limit becomes a notice and the turn goes on. What a read
//     brought goes out together: the turn's changes go through a Merger,
//     and the host hears Idle after each read (and from the turn's start
//     on), after an answer and after an interrupt.
//   - The idle timeout (Options.IdleTimeout) counts from the last read,
//     and while the message is written; it is stopped while a permission
//     request waits for the host (the turn's, or one asked before the turn
//     that it may answer: Asked). When it fires the process is reaped and
//     the turn fails ("printed nothing", or "did not read the message"
//     while the write has not ended well); a turn the CLI never began is
//     marked NotStarted, and one whose end the CLI already reported (a
//     codex exec that does not exit) is that end.
//   - Interrupt (the Interrupt channel, or ctx cancelled) is taken once:
//     the requests that wait are taken back from the host and denied, the
//     CLI is asked to stop (Conn.Interrupt), and each further Grace
//     without the turn's end takes the CLI's next step (Conn.Escalate),
//     then closes the process (its input closed, SIGINT, SIGTERM,
//     SIGKILL). A request that comes after the interrupt is denied at once.
//   - Approvals. Each permission request is asked of the host on its own
//     goroutine (Approvals) after what came before it went out, so the
//     turn goes on reading; each answer reaches the CLI in the turn, and
//     none reaches the host after it.
//   - The end. The CLI's reported end ends the turn once the Conn is
//     Settled (codex exec: at its exit; the app-server: once the commands
//     an interrupt stopped are said to be stopped). A process whose output
//     ends first is reaped; the mapper closes the turn, and a turn that
//     never began is marked NotStarted: interrupted, or failed with how
//     the process ended.
//
// Where the three differ is theirs to say: Claude Code takes the message
// before the turn's lines are read (AwaitWrite), and is sent SIGINT as the
// first escalation; codex exec's and the app-server's message is written
// while the lines are read (Sent); codex exec is interrupted with SIGINT
// and ends at its exit; the app-server's end waits for the answer that
// the interrupted commands are stopped.
//
// What the three loops did differently before they became one and is now
// the same: codex exec's changes are batched like the others' (a Merger,
// Idle after each read); the idle timeout restarts after each read rather
// than each line; the host hears Idle after each answer and interrupt; a
// line over the limit names the limit; and an interrupted turn whose
// Claude Code exited with no word of it ends "Interrupted." rather than
// failed, as codex's did.
type Driver struct {
	Conn Conn
	// Proc is the process whose lines the turn reads.
	Proc *cliproc.Proc
	// Opts gives IdleTimeout, Grace, MaxLine and NewID.
	Opts Options
	// Who is the CLI as failures name it (Claude Code, codex), and
	// Process its process when that is another ("codex app-server"; ""
	// for Who).
	Who, Process string
	// Interrupt signals an interrupt (CLI.BeginTurn).
	Interrupt <-chan struct{}
	// Sent delivers how the message's write ended, while it goes on; nil
	// when the message was written before.
	Sent <-chan error
	// Asked are permission requests asked before the turn that the turn
	// may answer (Claude Code's between turns); nil for none.
	Asked *Approvals
}

// interruptedText is the denial of a permission request the interrupt
// took back.
const interruptedText = "The turn was interrupted."

// drive is the state of a Driver's turn.
type drive struct {
	*Driver
	ctx         context.Context
	h           Host // the merger in front of the turn's host
	mh          *Merger
	approvals   *Approvals
	idle        *time.Timer
	written     bool
	interrupted bool
	escalate    <-chan time.Time
	step        int
	end         *itemmap.TurnEnd // the end the CLI reported, until the Conn is settled
}

// Run runs the turn to its end, reporting to h; it always returns a
// non-nil TurnEnd.
func (d *Driver) Run(ctx context.Context, h Host) *itemmap.TurnEnd {
	t := &drive{Driver: d, ctx: ctx, written: d.Sent == nil}
	t.approvals = NewApprovals(ctx, h)
	defer t.approvals.Close()
	t.mh = NewMerger(h)
	defer t.mh.Flush()
	t.h = t.mh
	// Nothing the turn's lines bring needs to go out before the rest of
	// their read: the host holds it until the Idle after each read's
	// lines, from the turn's first line on.
	Idle(t.h)
	t.idle = time.NewTimer(d.Opts.IdleTimeout)
	defer t.idle.Stop()
	return t.loop()
}

// loop waits for what comes next until the turn ends.
func (t *drive) loop() *itemmap.TurnEnd {
	var asked <-chan Answer
	if t.Asked != nil {
		asked = t.Asked.Answers()
	}
	sent, ctxDone := t.Sent, t.ctx.Done()
	for {
		select {
		case err := <-sent:
			sent = nil
			t.written = err == nil
			if err := t.Conn.Written(err); err != nil {
				detail := t.Conn.Reap()
				return t.notStarted(fmt.Sprintf("%s did not take the message (%v).", t.process(), err), detail)
			}
		case _, open := <-t.Proc.Ready():
			if end, over := t.lines(open); over {
				return end
			}
		case a := <-t.approvals.Answers():
			if t.approvals.Take(a) {
				t.answered(a)
			}
		case a := <-asked:
			if t.Asked.Take(a) {
				t.answered(a)
			}
		case <-t.Interrupt:
			t.interrupt()
		case <-ctxDone:
			ctxDone = nil
			t.interrupt()
		case <-t.escalate:
			t.step++
			if t.Conn.Escalate(t.step) {
				t.escalate = time.After(t.Opts.Grace)
			} else {
				t.escalate = nil
				go t.Proc.Close(t.Opts.Grace) // stdin closed, then SIGINT, SIGTERM, SIGKILL; the lines end
			}
		case <-t.idle.C:
			if t.pending() {
				continue // the host is asked: its time is not the CLI's silence
			}
			return t.silent()
		}
	}
}

// lines handles every line read so far; over says the turn is over, with
// end. open is false when the process's output ended.
func (t *drive) lines(open bool) (end *itemmap.TurnEnd, over bool) {
	for line, ok := t.Proc.Next(); ok; line, ok = t.Proc.Next() {
		if line.Oversize > 0 {
			Notice(nil, t.h, fmt.Sprintf("Skipped a line of %d bytes from %s: longer than the %d-byte limit.", line.Oversize, t.Who, maxLine(t.Opts.MaxLine)))
			continue
		}
		asks, end := t.Conn.Line(line.Data, t.h)
		if len(asks) > 0 {
			t.mh.Flush() // the changes before the request
		}
		for _, a := range asks {
			if t.interrupted {
				t.Conn.Answer(a.RequestID, Decision{Message: interruptedText}, t.h)
				continue
			}
			t.approvals.Ask(a)
		}
		if end != nil {
			t.end = end
		}
		if t.end != nil && t.Conn.Settled() {
			return t.Conn.Ended(t.end, t.interrupted, t.h), true
		}
	}
	if !open {
		return t.exited(), true
	}
	t.resetIdle()
	Idle(t.h) // what the lines brought may go out now
	return nil, false
}

// answered passes the host's answer on to the CLI.
func (t *drive) answered(a Answer) {
	t.Conn.Answer(a.RequestID, a.Decision, t.h)
	Idle(t.h) // an answered question's change goes out now
	t.resetIdle()
}

// interrupt starts the interrupt, once.
func (t *drive) interrupt() {
	if t.interrupted {
		return
	}
	t.interrupted = true
	for _, id := range t.approvals.Withdraw() {
		t.Conn.Answer(id, Decision{Message: interruptedText}, t.h)
	}
	t.Conn.Interrupt()
	t.escalate = time.After(t.Opts.Grace)
	Idle(t.h)
}

// pending reports whether a permission request waits for the host.
func (t *drive) pending() bool {
	return t.approvals.Pending() > 0 || (t.Asked != nil && t.Asked.Pending() > 0)
}

// resetIdle starts the idle timeout again, unless a request waits.
func (t *drive) resetIdle() {
	ResetIdle(t.idle, t.Opts.IdleTimeout, !t.pending())
}

// silent ends a turn whose CLI printed nothing, or did not read the
// message, for the idle timeout: the process is stopped.
func (t *drive) silent() *itemmap.TurnEnd {
	if t.end != nil {
		// The CLI reported the turn's end, then neither exited nor said
		// more (a codex exec that does not exit): the turn is what it
		// reported, and the process is stopped.
		t.Conn.Drained(t.h)
		t.Conn.Reap()
		return t.Conn.Ended(t.end, t.interrupted, t.h)
	}
	text := fmt.Sprintf("%s printed nothing for %v; it was stopped.", t.Who, t.Opts.IdleTimeout)
	if !t.written {
		text = fmt.Sprintf("%s did not read the message for %v; it was stopped.", t.process(), t.Opts.IdleTimeout)
	}
	detail := t.Conn.Reap() // closes stdin: a write the CLI does not read ends
	r := t.Conn.Finish(false, text, detail)
	for _, c := range r.Changes {
		t.h.Change(c)
	}
	if r.End == nil {
		// Not a word of the turn: the CLI never started it.
		return FailBeforeStart(t.Opts.NewID, t.h, text, detail)
	}
	return r.End
}

// exited ends a turn whose process's output ended: it exited, crashed or
// was stopped. The failure's text says how it ended; its stderr goes in
// the detail only.
func (t *drive) exited() *itemmap.TurnEnd {
	t.Conn.Drained(t.h)
	<-t.Proc.Done()
	text := ExitedText(t.process(), t.Proc)
	detail := t.Conn.Reap()
	if t.end != nil {
		return t.Conn.Ended(t.end, t.interrupted, t.h)
	}
	r := t.Conn.Finish(t.interrupted, text, detail)
	for _, c := range r.Changes {
		t.h.Change(c)
	}
	if r.End == nil {
		return t.notStarted(text, detail)
	}
	return r.End
}

// notStarted ends a turn the CLI never began.
func (t *drive) notStarted(text, detail string) *itemmap.TurnEnd {
	if t.interrupted {
		return InterruptedBeforeStart(t.Opts.NewID, t.h)
	}
	return FailBeforeStart(t.Opts.NewID, t.h, text, detail)
}

// process names the CLI's process in failures.
func (d *Driver) process() string {
	if d.Process != "" {
		return d.Process
	}
	return d.Who
}

// AwaitWrite waits for the message's write, sent, to end, for a CLI that
// must take the message before its turn's lines are read (Claude Code: a
// write that fails means a process that died, started again). It returns
// the write's error, or, when the CLI did not read the message for the
// idle timeout or the turn was interrupted meanwhile, the turn's end, with
// the process reaped (it holds part of a line).
func (d *Driver) AwaitWrite(ctx context.Context, sent <-chan error, h Host) (*itemmap.TurnEnd, error) {
	idle := time.NewTimer(d.Opts.IdleTimeout)
	defer idle.Stop()
	select {
	case err := <-sent:
		return nil, err
	case <-idle.C:
		detail := d.Conn.Reap() // closes stdin: the write ends
		return FailBeforeStart(d.Opts.NewID, h, fmt.Sprintf("%s did not read the message for %v; it was stopped.", d.process(), d.Opts.IdleTimeout), detail), nil
	case <-d.Interrupt:
	case <-ctx.Done():
	}
	d.Conn.Reap()
	return InterruptedBeforeStart(d.Opts.NewID, h), nil
}

// maxLine is the line limit MaxLine n sets.
func maxLine(n int) int {
	if n <= 0 {
		return cliproc.DefaultMaxLine
	}
	return n
}
