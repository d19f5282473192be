package acp

import (
	"context"
	"fmt"
	"sync"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// betweenHost hears what a session's CLI does between turns (a background
// subagent's calls, the turn Claude Code runs to pass on its report): each
// change is brought into the conversation and sent to the client at once,
// as session/update (and _spbridge/item) like a turn's; a permission
// request is asked like a turn's; the end of a turn the CLI ran on its own
// brings its history, usage and cost in and sends a usage_update. The
// backend never tells it while a turn of the session runs (runTurn holds
// the backend from before the turn to after its prompt is answered), so
// nothing of it lands inside a turn's updates. It is the host of one
// backend: once the session moved to another (a new conversation) or
// closed, what the old one tells is dropped. A panic in it ends the
// session, as a panic in a turn does, and never the server.
type betweenHost struct {
	ss *acpSession
	be backend.Backend

	mu    sync.Mutex
	h     *acpHost       // the notifications; no turn
	dead  bool           // a panic ended the session
	items []archive.Item // added since the last turn the CLI ran on its own, for its audit record
}

// watchBetween attaches a between-turn host for the session's backend, be;
// ss.conv is set.
func (ss *acpSession) watchBetween(be backend.Backend) {
	ss.conv.Watch(&betweenHost{ss: ss, be: be, h: &acpHost{ss: ss}})
}

// current reports whether the host's backend is still the session's and
// the session is open; ss.mu is held.
func (b *betweenHost) current() bool {
	ss := b.ss
	return ss.conv != nil && !ss.closed && ss.conv.CurrentBackend() == b.be
}

// host returns the notifier, or nil once a panic ended the session.
func (b *betweenHost) host() *acpHost {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead {
		return nil
	}
	return b.h
}

// Change tells the client of a change and brings it into the
// conversation; a change the client could not be told of (a panic) ends
// the session and stays out of the conversation it saves.
func (b *betweenHost) Change(c itemmap.Change) {
	defer b.recover("a change between turns")
	h := b.host()
	if h == nil || !b.open() {
		return
	}
	h.Change(c) // the notifications, and the copy a save during a turn writes
	if why := h.panic(); why != "" {
		b.fail(why)
		return
	}
	ss := b.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if b.current() && (c.Op != itemmap.OpUpdate || c.OutputDelta == "") {
		ss.conv.ApplyChange(c)
		if c.Op == itemmap.OpAdd {
			b.mu.Lock()
			b.items = append(b.items, c.Item)
			b.mu.Unlock()
		}
	}
}

// open reports whether the host's backend is still the session's and the
// session is open.
func (b *betweenHost) open() bool {
	b.ss.mu.Lock()
	defer b.ss.mu.Unlock()
	return b.current()
}

// Approve asks the client, as in a turn (the session's "always" answers
// apply).
func (b *betweenHost) Approve(ctx context.Context, a itemmap.Approval) (d backend.Decision) {
	defer b.recover("a permission request between turns")
	h := b.host()
	if h == nil {
		return backend.Decision{Message: "The session ended."}
	}
	if !b.open() {
		return backend.Decision{Message: "The session ended."}
	}
	d = h.Approve(ctx, a)
	b.check(h)
	return d
}

// End brings in a turn the CLI ran on its own and sends the usage.
func (b *betweenHost) End(end *itemmap.TurnEnd) {
	defer b.recover("the end of a turn between turns")
	h := b.host()
	if h == nil || end == nil {
		return
	}
	ss := b.ss
	ss.mu.Lock()
	if !b.current() {
		ss.mu.Unlock()
		return
	}
	b.mu.Lock()
	items := b.items
	b.items = nil
	b.mu.Unlock()
	if err := ss.conv.ApplyOwnTurn(end, items); err != nil {
		ss.srv.cfg.Log.Printf("session %s: audit: %v", ss.id, err)
	}
	keep := ss.conv.Keep()
	ss.mu.Unlock()
	ss.usage(end)
	if keep {
		ss.edited()
	}
	// The next changes between turns are news again.
	b.mu.Lock()
	b.h = &acpHost{ss: ss}
	b.mu.Unlock()
}

// recover ends the session after a panic in what happened between turns.
func (b *betweenHost) recover(where string) {
	if r := recover(); r != nil {
		b.fail(b.ss.srv.recovered(where+" of session "+b.ss.id, r))
	}
}

// check ends the session when a callback of h recovered from a panic.
func (b *betweenHost) check(h *acpHost) {
	if why := h.panic(); why != "" {
		b.fail(why)
	}
}

// fail ends the session once, on a goroutine of its own: the backend's
// goroutine, which calls the host, is not held up by the close.
func (b *betweenHost) fail(why string) {
	b.mu.Lock()
	if b.dead {
		b.mu.Unlock()
		return
	}
	b.dead = true
	b.mu.Unlock()
	ss := b.ss
	ss.srv.wg.Add(1)
	go func() {
		defer ss.srv.wg.Done()
		jobs := ss.fail(why)
		ss.endJobs(jobs, fmt.Sprintf("session %q ended after an internal error: %s", ss.id, why))
	}()
}
