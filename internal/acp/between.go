package acp

import (
	"context"
	"fmt"
	"sync"

	"spbridge/internal/itemmap"
	"spbridge/internal/session"
)

// betweenFront is a session's side of what its CLI does between turns (a
// background subagent's calls, the turn Claude Code runs to pass on its
// report; session.Between): the session brings each change into the
// conversation, and it is sent to the client at once, as session/update
// (and _spbridge/item) like a turn's; a permission request no grant
// answers is asked like a turn's; the end of a turn the CLI ran on its own sends a
// usage_update. The session never tells it while a turn runs (session.Hold),
// so nothing of it lands inside a turn's updates. A panic in it ends the
// session, as a panic in a turn does, and never the server.
type betweenFront struct {
	ss *acpSession

	mu   sync.Mutex
	h    *acpHost // the notifications; no turn
	dead bool     // a panic ended the session
}

// watchBetween makes the session's conversation tell the client what its
// CLI does between turns; ss.conv is set.
func (ss *acpSession) watchBetween() {
	ss.conv.Watch(&betweenFront{ss: ss, h: &acpHost{ss: ss}})
}

// host returns the notifier, or nil once a panic ended the session or the
// session closed.
func (b *betweenFront) host() *acpHost {
	b.ss.mu.Lock()
	closed := b.ss.closed
	b.ss.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead || closed {
		return nil
	}
	return b.h
}

// ItemChanged tells the client of a change; one the client could not be
// told of (a panic) ends the session.
func (b *betweenFront) ItemChanged(c itemmap.Change) {
	defer b.recover("a change between turns")
	if h := b.host(); h != nil {
		h.Change(c)
		b.check(h)
	}
}

// Ask asks the client, as in a turn.
func (b *betweenFront) Ask(ctx context.Context, q session.Question) (ans session.Answer) {
	defer b.recover("a permission request between turns")
	h := b.host()
	if h == nil {
		return session.Answer{Message: "The session ended."}
	}
	ans = h.Ask(ctx, q)
	b.check(h)
	return ans
}

// Granted records the card of a request a grant answered, as in a turn.
func (b *betweenFront) Granted(a itemmap.Approval, allowed bool) {
	defer b.recover("a permission request between turns")
	if h := b.host(); h != nil {
		h.Granted(a, allowed)
		b.check(h)
	}
}

// OwnTurnEnded sends the usage of a turn the CLI ran on its own.
func (b *betweenFront) OwnTurnEnded(end *itemmap.TurnEnd, auditErr error) {
	defer b.recover("the end of a turn between turns")
	ss := b.ss
	if auditErr != nil {
		ss.srv.cfg.Log.Printf("session %s: audit: %v", ss.id, auditErr)
	}
	if b.host() == nil {
		return
	}
	ss.send.usage(end, ss.conv)
	if ss.conv.Keep() {
		ss.send.edited()
	}
	// The next changes between turns are news again.
	b.mu.Lock()
	b.h = &acpHost{ss: ss}
	b.mu.Unlock()
}

// BetweenFailed ends the session after the session's own handling of what
// happened between turns failed.
func (b *betweenFront) BetweenFailed(why string) { b.fail(why) }

// recover ends the session after a panic in what happened between turns.
func (b *betweenFront) recover(where string) {
	if r := recover(); r != nil {
		b.fail(b.ss.srv.recovered(where+" of session "+b.ss.id, r))
	}
}

// check ends the session when a callback of h recovered from a panic.
func (b *betweenFront) check(h *acpHost) {
	if why := h.panic(); why != "" {
		b.fail(why)
	}
}

// fail ends the session once, on a goroutine of its own: the backend's
// goroutine, which calls the front end, is not held up by the close.
func (b *betweenFront) fail(why string) {
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
		jobs := ss.work.fail(why)
		ss.work.endJobs(jobs, fmt.Sprintf("session %q ended after an internal error: %s", ss.id, why))
	}()
}
