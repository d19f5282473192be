package session

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"

	"spbridge/internal/itemmap"
)

// Front is what a front end does around the turns a session runs for it
// (Prompt, Queue): it shows a turn and answers its request. The session
// calls it on the turn's goroutine, or on a goroutine of its own for a
// request cancelled while it waited, never with a lock of its held, so it
// may call any method of the session except WaitTurns.
type Front interface {
	// Host is the host of r's turn: it is told the turn's changes and
	// asked about its permission requests no grant answers.
	Host(r Request) Host
	// Ended tells how r's turn ended. The session's next turn (a queued
	// request's) has begun already when there is one; the save at the
	// turn's end (when the conversation was saved while it ran) follows.
	Ended(r Request, o Outcome)
	// HandedBack tells that r, queued, went back to the composer as an
	// unsent message without a turn: it was cancelled, or the turn it
	// waited behind was.
	HandedBack(r Request)
	// Changed tells that the conversation changed around a turn (a
	// request queued, taken or handed back, a turn's end) while the
	// document keeps it: a front end may tell its editor.
	Changed()
}

// Outcome is how a turn ended.
type Outcome struct {
	// Result is the turn's, nil when it did not start.
	Result *TurnResult
	// Err is why the turn did not start (it matches ErrNotStarted), nil
	// when it started or was cancelled first.
	Err error
	// Cancelled is set when the request was cancelled (its Ctx, Cancel or
	// Stop), whether the CLI had finished or not.
	Cancelled bool
	// Host is the turn's, as Front.Host gave it.
	Host Host
	// Panic is what a panic in the turn left, nil when none: the session
	// runs no more turns (as after Stop) and its queue was handed back.
	Panic any
	Stack []byte
}

// ErrClosed is the error of Prompt and Queue on a session that was stopped
// or closed.
var ErrClosed = errors.New("the session is closing")

// ErrCancelled is the error of Prompt and Queue when the request was
// cancelled while it waited for the turn before it to end.
var ErrCancelled = errors.New("the request was cancelled before its turn began")

// turn is the running turn.
type turn struct {
	ctx    context.Context // the request's, cancelled also by Cancel and Stop
	cancel context.CancelFunc
	stop   func()        // ends the watch that interrupts the CLI on cancel
	done   chan struct{} // closed when the turn and the save at its end are over
	// ending is set once the turn's end took no queued request: a request
	// that comes now waits for done and starts its own turn.
	ending bool
	once   sync.Once
}

// finish marks the turn over for whoever waits for it.
func (t *turn) finish() { t.once.Do(func() { close(t.done) }) }

// Prompt runs r as the conversation's next turn, on a goroutine of the
// session's own, or queues it behind the running turn (queued). When the
// running turn was cancelled or is ending, Prompt waits for it to end and
// then starts r's (ErrCancelled when r's Ctx ends first). After Stop or
// Close it fails with ErrClosed. The turn's end is told to front.Ended;
// each request queued meanwhile then runs as a turn of its own, in order,
// unless the turn was cancelled, failed or the session stops: then they go
// back to the composer (Front.HandedBack).
func (s *Session) Prompt(front Front, r Request) (queued bool, err error) {
	return s.submit(front, r, false)
}

// Queue is Prompt for a message the user queued on purpose: it is queued
// also behind a running turn that was cancelled and has not ended yet,
// which then hands it back with the rest.
func (s *Session) Queue(front Front, r Request) (queued bool, err error) {
	return s.submit(front, r, true)
}

func (s *Session) submit(front Front, r Request, toCancelled bool) (bool, error) {
	if r.Ctx == nil {
		r.Ctx = context.Background()
	}
	for {
		s.mu.Lock()
		if s.stopping || s.closed {
			s.mu.Unlock()
			return false, ErrClosed
		}
		t := s.turn
		switch {
		case t == nil:
			s.front = front
			t = s.beginLocked(r.Ctx)
			s.chains.Add(1)
			s.mu.Unlock()
			go s.run(t, r)
			return false, nil
		case !t.ending && (t.ctx.Err() == nil || toCancelled):
			s.queueLocked(r)
			keep := s.keep
			s.mu.Unlock()
			if keep {
				front.Changed()
			}
			return true, nil
		}
		s.mu.Unlock()
		select {
		case <-t.done:
		case <-r.Ctx.Done():
			return false, ErrCancelled
		}
	}
}

// beginLocked makes a turn of a request with context parent the running
// one: cancelling it interrupts the CLI. s.mu is held.
func (s *Session) beginLocked(parent context.Context) *turn {
	ctx, cancel := context.WithCancel(parent)
	t := &turn{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	be := s.be
	t.stop = s.watch(ctx, func() {
		defer func() {
			// A CLI that fails to stop ends no process: it is told.
			if v := recover(); v != nil && s.panicked != nil {
				s.panicked("the interrupt", v, debug.Stack())
			}
		}()
		be.Interrupt()
	})
	s.turn = t
	return t
}

// watch runs f on a goroutine of its own once ctx is done, unless the
// returned stop is called first; WaitTurns waits for such goroutines.
func (s *Session) watch(ctx context.Context, f func()) (stop func()) {
	s.bg.Add(1)
	var once sync.Once
	done := func() { once.Do(s.bg.Done) }
	st := context.AfterFunc(ctx, func() {
		defer done()
		f()
	})
	return func() {
		if st() {
			done()
		}
	}
}

// dropCancelled takes a request cancelled while it waited out of the
// queue and hands it back to the composer; a turn that took it first
// answers it.
func (s *Session) dropCancelled(w *waiting) {
	s.mu.Lock()
	dropped := s.dropLocked(w)
	keep, front := s.keep, s.front
	s.mu.Unlock()
	if !dropped || front == nil {
		return
	}
	if keep {
		front.Changed()
	}
	front.HandedBack(w.Request)
}

// Cancel cancels the running turn: the CLI is asked to stop, and at its
// end the turn hands its queue back to the composer.
func (s *Session) Cancel() {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.cancel()
	}
}

// Stop ends the session's turns: no turn starts any more (Prompt and Queue
// fail with ErrClosed), and the running one is cancelled.
func (s *Session) Stop() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.Cancel()
}

// Running reports whether a turn runs that is not ending.
func (s *Session) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn != nil && !s.turn.ending
}

// WaitTurns waits until no turn runs (the save at its end included) and
// every goroutine the session started for its turns has ended. Call it
// after Stop, or when nothing can start a turn meanwhile.
func (s *Session) WaitTurns() {
	s.chains.Wait()
	s.bg.Wait()
}

// run runs t, a turn of r, and then the turns of the requests queued
// meanwhile, one at a time, until none is left.
func (s *Session) run(t *turn, r Request) {
	defer s.chains.Done()
	for t != nil {
		t, r = s.runOne(t, r)
	}
}

// runOne runs one turn and what follows it: the next queued request's turn
// begins (or the queue is handed back), the front end is told, and the
// turn's end is saved when a save ran during the turn. It returns the next
// turn, or nil.
func (s *Session) runOne(t *turn, r Request) (next *turn, nextReq Request) {
	front := s.front
	// What the CLI does between turns waits until the front end was told
	// how this turn ended.
	release := s.Hold()
	o := Outcome{Host: front.Host(r)}
	defer func() {
		// A panic in the front end's own calls: the turns stop, and
		// whoever waits for this one is let go.
		if p := recover(); p != nil {
			s.mu.Lock()
			s.stopping = true
			if s.turn == t || s.turn == next {
				s.turn = nil
			}
			s.mu.Unlock()
			release()
			t.finish()
			if next != nil {
				next.stop()
				next.cancel()
				next.finish()
			}
			next = nil
		}
	}()
	if t.ctx.Err() == nil {
		s.send(t.ctx, r, &o)
	}
	t.stop()
	o.Cancelled = t.ctx.Err() != nil
	t.cancel()

	s.mu.Lock()
	saved := s.savedInTurn
	s.savedInTurn = false
	started := o.Result != nil
	changed := started || saved
	interrupted := started && o.Result.End != nil && o.Result.End.Status == itemmap.TurnInterrupted
	if o.Panic != nil {
		s.stopping = true
	}
	var handed []Request
	if o.Cancelled || interrupted || s.stopping || s.closed {
		handed = s.handBackLocked()
	} else if q, ok := s.nextLocked(); ok {
		next, nextReq = s.beginLocked(q.Ctx), q
		changed = true
	}
	changed = changed || len(handed) > 0
	saveEnd := saved && !s.closed
	if next == nil {
		t.ending = true
	}
	keep := s.keep
	s.mu.Unlock()
	if next != nil {
		t.finish()
	}

	for _, h := range handed {
		front.HandedBack(h)
	}
	if changed && keep {
		front.Changed()
	}
	front.Ended(r, o)
	s.mu.Lock()
	saveEnd = saveEnd && !s.closed
	s.mu.Unlock()
	if saveEnd {
		// A save during the turn wrote it as it stood: write how it ended.
		// No lock of the session is held: a cancel, a new request and the
		// next turn's updates do not wait for the disk.
		if s.endSaving != nil {
			s.endSaving(false)
		}
		s.Save() // a failure stays unsaved: the next save, or the close, writes it
		if s.endSaving != nil {
			s.endSaving(true)
		}
	}
	release()
	if next == nil {
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
		t.finish()
	}
	return next, nextReq
}

// send runs Send for o's turn, turning a panic in it into the outcome's.
func (s *Session) send(ctx context.Context, r Request, o *Outcome) {
	defer func() {
		if v := recover(); v != nil {
			o.Result, o.Err, o.Panic, o.Stack = nil, nil, v, debug.Stack()
		}
	}()
	o.Result, o.Err = s.Send(ctx, r.Text, r.Images, o.Host)
}
