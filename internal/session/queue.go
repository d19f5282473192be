package session

import (
	"context"
	"slices"

	"spbridge/internal/backend"
)

// Request is a message from the user for a turn of the conversation.
type Request struct {
	Text   string
	Images []backend.Image
	// Ctx is the request's own: once it is done, the request's turn is
	// interrupted, or, while the request waits in the queue, it goes back
	// to the composer (Front.HandedBack). Nil: only Cancel and Stop end
	// its turn.
	Ctx context.Context
	// Tag is the front end's own (the request the message answers); the
	// session only hands it back.
	Tag any
}

// waiting is a request queued behind the running turn.
type waiting struct {
	Request
	// stop ends the watch on the request's context (see watch).
	stop func()
}

// The queue: the requests waiting behind the running turn, in order. The
// conversation holds their texts among its queued messages (a save writes
// them) until a turn takes them (next) or they go back to the composer as
// unsent (handBack, drop). s.mu is held by every method below.

// queueLocked puts r behind the running turn.
func (s *Session) queueLocked(r Request) {
	w := &waiting{Request: r}
	if r.Ctx != nil {
		// A request cancelled while it waits leaves the queue at once.
		w.stop = s.watch(r.Ctx, func() { s.dropCancelled(w) })
	}
	s.waiting = append(s.waiting, w)
	s.pkg.Conv.Queued = append(s.pkg.Conv.Queued, r.Text)
	s.changes++
	s.autoSaveLocked()
}

// nextLocked takes the first queued request, for the turn that follows;
// false when none waits.
func (s *Session) nextLocked() (Request, bool) {
	if len(s.waiting) == 0 {
		return Request{}, false
	}
	w := s.waiting[0]
	w.unwatch()
	s.changes++
	s.removeQueued(0)
	s.waiting = s.waiting[1:]
	s.autoSaveLocked()
	return w.Request, true
}

// handBackLocked hands every queued request back to the composer (the
// conversation's unsent messages), as a cancelled turn does, and returns
// them. The conversation then holds no queued message. With none queued it
// changes nothing.
func (s *Session) handBackLocked() []Request {
	ws := s.waiting
	if len(ws) == 0 {
		return nil
	}
	s.changes++
	conv := s.pkg.Conv
	rs := make([]Request, len(ws))
	for i, w := range ws {
		w.unwatch()
		conv.Unsent = append(conv.Unsent, w.Text)
		rs[i] = w.Request
	}
	conv.Queued = nil
	s.waiting = nil
	s.autoSaveLocked()
	return rs
}

// dropLocked hands the queued request w back to the composer; false when
// it no longer waits (a turn took it, or it was handed back).
func (s *Session) dropLocked(w *waiting) bool {
	k := slices.Index(s.waiting, w)
	if k < 0 {
		return false
	}
	w.unwatch()
	s.changes++
	s.pkg.Conv.Unsent = append(s.pkg.Conv.Unsent, w.Text)
	s.removeQueued(k)
	s.waiting = slices.Delete(s.waiting, k, k+1)
	s.autoSaveLocked()
	return true
}

// Forget empties the queue and returns what waited, leaving the
// conversation's queued messages as they are: a closing session keeps them
// in the document, and its front end answers them.
func (s *Session) Forget() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := make([]Request, 0, len(s.waiting))
	for _, w := range s.waiting {
		w.unwatch()
		rs = append(rs, w.Request)
	}
	s.waiting = nil
	return rs
}

// removeQueued takes the k-th waiting request's text out of the
// conversation's queued messages, which end with the texts of waiting
// (those before them were queued when the conversation was last saved by
// an earlier session).
func (s *Session) removeQueued(k int) {
	conv := s.pkg.Conv
	if at := len(conv.Queued) - len(s.waiting) + k; at >= 0 && at < len(conv.Queued) {
		conv.Queued = slices.Delete(conv.Queued, at, at+1)
	}
}

func (w *waiting) unwatch() {
	if w.stop != nil {
		w.stop()
	}
}
