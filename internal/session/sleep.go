package session

import (
	"context"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/clipool"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// Sleeping. A session whose CLI has been idle for Options.CLIIdle (no turn,
// nothing of the CLI's running in the background, no request of it
// waiting: backend.Sleeper decides the rest) has its CLI ended; so has the
// least recently used one when more run than Options.Pool allows. The
// session stays open as it was: its conversation, settings, and the
// models, modes and commands its CLI gave. The next turn starts the CLI
// again on its own session (claude --resume, codex thread/resume), with
// no "# Conversation so far": it is the same open. A change of the
// model, effort, mode or a switch starts it again too, in the
// background (backend.Controls' Prepare), so that it runs with them. A
// CLI that refuses its session when it starts again gets a new one,
// told the conversation so far, with a notice that says so.

// sleeper is the session's side of sleeping, under its own lock, which is
// never held across a call into the backend.
type sleeper struct {
	mu     sync.Mutex
	idle   time.Duration // Options.CLIIdle; 0 never puts the CLI to sleep
	pool   *clipool.Pool
	timer  *time.Timer
	slept  func(why string) // Options.CLISlept
	asleep bool             // the session put its CLI to sleep, and no turn or wake started it since
	ctx    context.Context  // the wakes', cancelled by Close
	cancel context.CancelFunc
	closed bool
}

// Why a CLI was put to sleep (Options.CLISlept).
const (
	SleptIdle  = "idle"  // idle for Options.CLIIdle
	SleptLimit = "limit" // the least recently used, more running than the pool allows
)

// armSleep starts the idle time over: once it passes with the CLI idle,
// the CLI is put to sleep.
func (s *Session) armSleep() {
	z := &s.sl
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.idle <= 0 || z.closed {
		return
	}
	if z.timer == nil {
		z.timer = time.AfterFunc(z.idle, s.idleOver)
		return
	}
	z.timer.Reset(z.idle)
}

// idleOver puts the CLI to sleep once its idle time passed; a CLI still
// awake (busy in the background) is looked at again after the idle time.
func (s *Session) idleOver() {
	if !s.sleepCLI(SleptIdle) && s.Awake() {
		s.armSleep()
	}
}

// Awake reports whether the session's CLI runs (clipool.Member).
func (s *Session) Awake() bool {
	sl, ok := s.currentBackend().(backend.Sleeper)
	return ok && sl.Awake()
}

// Sleep puts the session's CLI to sleep when it is idle, and reports
// whether it did (clipool.Member: the pool's limit).
func (s *Session) Sleep() bool { return s.sleepCLI(SleptLimit) }

// sleepCLI ends the session's CLI when no turn runs or waits and the
// backend finds it idle (backend.Sleeper), and tells Options.CLISlept.
func (s *Session) sleepCLI(why string) (slept bool) {
	defer func() {
		if v := recover(); v != nil {
			slept = false
			if s.panicked != nil {
				s.panicked("putting the CLI to sleep", v, debug.Stack())
			}
		}
	}()
	s.mu.Lock()
	if s.closed || s.stopping || s.turn != nil || s.running || len(s.waiting) > 0 {
		s.mu.Unlock()
		return false
	}
	be := s.be
	s.mu.Unlock()
	sl, ok := be.(backend.Sleeper)
	if !ok || !sl.Sleep() {
		return false
	}
	s.sl.mu.Lock()
	s.sl.asleep = true
	tell := s.sl.slept
	s.sl.mu.Unlock()
	s.logf("its CLI was put to sleep (%s)", why)
	if tell != nil {
		tell(why)
	}
	return true
}

// Asleep reports whether the session put its CLI to sleep and nothing
// started it since.
func (s *Session) Asleep() bool {
	s.sl.mu.Lock()
	defer s.sl.mu.Unlock()
	return s.sl.asleep
}

// using tells that the CLI runs, or is about to (a turn, a wake): it is
// the pool's most recently used, and no longer asleep.
func (s *Session) using() {
	s.sl.mu.Lock()
	s.sl.asleep = false
	pool := s.sl.pool
	s.sl.mu.Unlock()
	pool.Used(s)
}

// used is a turn's end, or the CLI's between turns: the idle time starts
// over.
func (s *Session) used() {
	s.sl.pool.Used(s)
	s.armSleep()
}

// wake starts a CLI the session put to sleep again, in the background,
// after a change of its settings: it runs with them (Prepare), resuming
// its session.
func (s *Session) wake() {
	z := &s.sl
	z.mu.Lock()
	if !z.asleep || z.closed {
		z.mu.Unlock()
		s.armSleep()
		return
	}
	if z.ctx == nil {
		z.ctx, z.cancel = context.WithCancel(context.Background())
	}
	ctx := z.ctx
	z.mu.Unlock()
	c, ok := s.currentBackend().(backend.Controls)
	if !ok {
		return
	}
	s.ctl.mu.Lock()
	if s.ctl.prepClosed {
		s.ctl.mu.Unlock()
		return
	}
	s.ctl.preparing.Add(1) // Close waits for it
	s.ctl.mu.Unlock()
	s.using()
	go func() {
		defer s.ctl.preparing.Done()
		defer func() {
			if v := recover(); v != nil && s.panicked != nil {
				s.panicked("waking the CLI", v, debug.Stack())
			}
		}()
		if err := c.Prepare(ctx); err != nil && ctx.Err() == nil {
			s.logf("wake the CLI: %v", err)
		}
		s.used()
	}()
}

// stopSleeping ends the idle timer and the wakes, for Close.
func (s *Session) stopSleeping() {
	z := &s.sl
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	if z.timer != nil {
		z.timer.Stop()
	}
	if z.cancel != nil {
		z.cancel()
	}
	z.pool.Forget(s)
}

// ResumeRefusedText is the notice of a CLI that would not go on with its
// own session once started again after it was put to sleep.
const ResumeRefusedText = "The CLI could not go on with its session after it was put to sleep: this turn starts a new one, told the conversation so far."

// resumeRefused reports whether be's CLI refused its session after a
// sleep (backend.Sleeper.ResumeRefused): the conversation so far is owed
// to the new session it starts.
func resumeRefused(be backend.Backend) bool {
	sl, ok := be.(backend.Sleeper)
	return ok && sl.ResumeRefused()
}

// restoreAfterRefusal makes the next turn tell a new CLI session the
// conversation so far, items, as after a reopen; s.mu is held.
func (s *Session) restoreAfterRefusal(items []archive.Item) {
	s.restore = restore.Restored(slices.Clone(items))
}

// refusedNotice is the notice item of a refused resume.
func refusedNotice() itemmap.Change {
	it := archive.NewItem(archive.TypeNotice)
	it.Set("text", ResumeRefusedText)
	return itemmap.Change{Op: itemmap.OpAdd, Item: it}
}

// turnAfterRefusal runs the turn again after its CLI, started again to
// resume its session after a sleep, refused it: what the refused start
// showed is taken back, a notice says what happened, and a new CLI session
// is told the conversation so far with the same message.
func (s *Session) turnAfterRefusal(ctx context.Context, be backend.Backend, msg backend.Message, ap *applier, user archive.Item) *itemmap.TurnEnd {
	s.mu.Lock()
	conv := s.pkg.Conv
	var shown []archive.Item
	if at := findItem(conv.Items, user.ID(), ap.first); at >= 0 {
		shown = slices.Clone(conv.Items[at+1:])
	}
	conv.Items = append(ap.before(), user)
	ap.kept = nil
	s.changes++
	earlier := conv.Items[:ap.first]
	s.restoreAfterRefusal(earlier)
	msg.Context = s.restore.Context(be.Name(), earlier, conv.History)
	s.mu.Unlock()
	for _, it := range shown {
		delete(ap.latest, it.ID())
		ap.host.Change(itemmap.Change{Op: itemmap.OpRemove, Item: it})
	}
	ap.Change(refusedNotice())
	return be.Turn(ctx, msg, ap)
}
