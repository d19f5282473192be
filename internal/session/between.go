package session

import (
	"context"
	"fmt"
	"runtime/debug"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/checkpoint"
	"spbridge/internal/itemmap"
)

// Between is a front end's side of what the session's CLI does on its own
// between turns (Claude Code's background subagents go on after the
// turn's result, and claude runs a turn of its own to pass on a
// subagent's report). The session brings each change into the
// conversation and then tells it; it is called on the backend's
// goroutine, never while a turn runs (see Hold) and never with a lock of
// the session held.
type Between interface {
	// ItemChanged tells a change the CLI made between turns, once it is in
	// the conversation.
	ItemChanged(c itemmap.Change)
	// OwnTurnEnded tells that a turn the CLI ran on its own ended: its
	// history, usage and cost are in the conversation; auditErr is why its
	// audit record could not be written, or nil.
	OwnTurnEnded(end *itemmap.TurnEnd, auditErr error)
	// Asker is asked about a permission request the CLI made between
	// turns that no grant answers, as in a turn.
	Asker
	// BetweenFailed tells that what the CLI did between turns could not be
	// handled (a panic, told to Panicked with its stack): the session hears
	// no more of this backend, and the front end should end it.
	BetweenFailed(why string)
}

// Hold keeps the backend from telling what its CLI does between turns
// until release is called, where the backend tells it at all
// (backend.Background); Send holds it for its turn. A caller that does
// more around a turn (answers its prompt, saves) may hold it for longer.
func (s *Session) Hold() (release func()) {
	if bg, ok := s.currentBackend().(backend.Background); ok {
		return bg.Hold()
	}
	return func() {}
}

// Watch makes the session the host of what its backend's CLI does between
// turns, telling f, and reports whether the backend tells that
// (backend.Background). Each change is brought into the conversation and
// then told to f.ItemChanged; the end of a turn the CLI ran on its own
// brings its history, usage and cost in (Apply) and gets an audit record
// (written with no lock held), then f.OwnTurnEnded is told; a permission
// request is f's to answer. The session watches each backend it gets
// (NewConversation) with the same f; what a backend it no longer runs on,
// or a closed session's, tells is dropped. Without Watch the backend
// keeps what happens between turns for the next turn.
func (s *Session) Watch(f Between) bool {
	s.mu.Lock()
	s.between = f
	be := s.be
	s.mu.Unlock()
	return s.watchBackend(be)
}

// watchBackend attaches a between-turn host of its own to be, when the
// session watches (Watch) and be tells.
func (s *Session) watchBackend(be backend.Backend) bool {
	bg, ok := be.(backend.Background)
	s.mu.Lock()
	watching := s.between != nil
	s.mu.Unlock()
	if ok && watching {
		bg.Watch(&betweenHost{s: s, be: be})
	}
	return ok
}

// betweenHost hears one backend between turns for its session.
type betweenHost struct {
	s  *Session
	be backend.Backend
	// Under s.mu: dead once it failed; items are the items the CLI added
	// since the last turn it ran on its own, for that turn's audit record.
	dead  bool
	items []archive.Item
}

// frontLocked is the front end to tell, nil when the host's backend is not
// the session's any more, the session closed or the host failed; s.mu is
// held.
func (b *betweenHost) frontLocked() Between {
	s := b.s
	if b.dead || s.closed || s.be != b.be {
		return nil
	}
	return s.between
}

func (b *betweenHost) front() Between {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.frontLocked()
}

// Change brings a change into the conversation and tells the front end. A
// running command's output alone changes no item.
func (b *betweenHost) Change(c itemmap.Change) {
	defer b.recover("a change between turns")
	if f := b.apply(c); f != nil {
		f.ItemChanged(c)
		b.s.used() // the CLI works: its idle time starts over
	}
}

// apply brings c into the conversation, and returns the front end to tell,
// nil when it is dropped.
func (b *betweenHost) apply(c itemmap.Change) Between {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	f := b.frontLocked()
	if f == nil {
		return nil
	}
	if c.Op != itemmap.OpUpdate || c.OutputDelta == "" {
		s.applyLocked(c, 0)
		if c.Op == itemmap.OpAdd {
			b.items = append(b.items, c.Item)
		}
		if c.Delta == "" {
			// A text that grows is saved once it stops, with its item's
			// next change or the CLI's turn's end.
			s.autoSaveLocked()
		}
	}
	return f
}

// Approve decides a permission request as in a turn (Grants.Decide),
// asking the front end.
func (b *betweenHost) Approve(ctx context.Context, a itemmap.Approval) (d backend.Decision) {
	defer func() {
		if v := recover(); v != nil {
			b.fail("a permission request between turns", v)
			d = backend.Decision{Message: "spbridge could not ask about this request."}
		}
	}()
	f := b.front()
	if f == nil {
		return backend.Decision{Message: "The session ended."}
	}
	return b.s.approve(ctx, a, f)
}

// End brings the end of a turn the CLI ran on its own into the
// conversation like a turn's: its history after what is there, its usage
// and cost into the totals (Apply). There is no user message: the CLI
// wrote its own. Like every turn it gets an audit record, with the items
// the CLI added between turns, an empty user line and origin "cli".
func (b *betweenHost) End(end *itemmap.TurnEnd) {
	defer b.recover("the end of a turn between turns")
	if end == nil {
		return
	}
	archive.CompactHistory(end.History)
	s := b.s
	s.mu.Lock()
	f := b.frontLocked()
	if f == nil {
		s.mu.Unlock()
		return
	}
	items := b.items
	b.items = nil
	s.changes++
	itemmap.Apply(s.pkg.Conv, end, s.provider)
	identity := s.pkg.Conv.AuditLog()
	s.autoSaveLocked()
	s.recoverLaterLocked()
	s.mu.Unlock()
	var auditErr error
	if s.auditDir != "" {
		auditErr = s.audit(b.be, identity, "", archive.Message{}, items, end, OriginCLI, checkpoint.ChangeSet{})
	}
	f.OwnTurnEnded(end, auditErr)
	s.used()
}

// OriginCLI is the audit record's origin of a turn the CLI ran on its own
// (a record without an origin is a turn the user's message began).
const OriginCLI = "cli"

// recover ends the host after a panic in what happened between turns.
func (b *betweenHost) recover(where string) {
	if v := recover(); v != nil {
		b.fail(where, v)
	}
}

// fail stops the host, once, and tells the front end why.
func (b *betweenHost) fail(where string, v any) {
	s := b.s
	s.mu.Lock()
	f := b.frontLocked()
	b.dead = true
	s.mu.Unlock()
	if s.panicked != nil {
		s.panicked(where, v, debug.Stack())
	}
	if f != nil {
		f.BetweenFailed(fmt.Sprint(v))
	}
}
