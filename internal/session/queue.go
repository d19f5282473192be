package session

import (
	"slices"

	"spbridge/internal/backend"
)

// Queued is a message waiting behind the running turn.
type Queued struct {
	Text   string
	Images []backend.Image
	// Tag is the front end's own (the request the message answers), nil
	// for none; Drop finds a message by it.
	Tag any
}

// Queue puts a message behind the running turn. Until a turn's end takes
// it (Next) or hands it back (HandBack, Drop), the conversation holds its
// text among its queued messages, which a save writes.
func (s *Session) Queue(q Queued) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = append(s.waiting, q)
	s.Pkg.Conv.Queued = append(s.Pkg.Conv.Queued, q.Text)
	s.changes++
}

// Next takes the first queued message, for the turn that follows; false
// when none waits.
func (s *Session) Next() (Queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) == 0 {
		return Queued{}, false
	}
	q := s.waiting[0]
	s.changes++
	s.removeQueued(0)
	s.waiting = s.waiting[1:]
	return q, true
}

// HandBack hands every queued message back to the composer (the
// conversation's unsent messages), as a cancelled turn does, and returns
// them. The conversation then holds no queued message. With none queued
// it changes nothing.
func (s *Session) HandBack() []Queued {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.waiting
	if len(qs) == 0 {
		return nil
	}
	s.changes++
	conv := s.Pkg.Conv
	for _, q := range qs {
		conv.Unsent = append(conv.Unsent, q.Text)
	}
	conv.Queued = nil
	s.waiting = nil
	return qs
}

// Drop hands the queued message tagged tag back to the composer; false
// when none waits (a turn took it first).
func (s *Session) Drop(tag any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slices.IndexFunc(s.waiting, func(q Queued) bool { return q.Tag == tag })
	if k < 0 {
		return false
	}
	s.changes++
	s.Pkg.Conv.Unsent = append(s.Pkg.Conv.Unsent, s.waiting[k].Text)
	s.removeQueued(k)
	s.waiting = slices.Delete(s.waiting, k, k+1)
	return true
}

// Forget empties the queue and returns what waited, leaving the
// conversation's queued messages as they are (a closing session keeps
// them in the document).
func (s *Session) Forget() []Queued {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.waiting
	s.waiting = nil
	return qs
}

// QueuedTags are the tags of the queued messages, in order.
func (s *Session) QueuedTags() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tags []any
	for _, q := range s.waiting {
		if q.Tag != nil {
			tags = append(tags, q.Tag)
		}
	}
	return tags
}

// removeQueued takes the k-th waiting message's text out of the
// conversation's queued messages, which end with the texts of waiting
// (those before them were queued when the conversation was last saved by
// an earlier session); s.mu is held.
func (s *Session) removeQueued(k int) {
	conv := s.Pkg.Conv
	if at := len(conv.Queued) - len(s.waiting) + k; at >= 0 && at < len(conv.Queued) {
		conv.Queued = slices.Delete(conv.Queued, at, at+1)
	}
}
