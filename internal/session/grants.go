package session

import (
	"slices"
	"sync"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// Grants are a session's "always" answers: what the user allowed, or
// rejected, for the rest of the session (New Conversation keeps them). A
// front end asks its user only about a request no grant covers. Safe for
// concurrent use; the zero value has none.
type Grants struct {
	mu            sync.Mutex
	allow, reject []backend.Grant
}

// Decided reports whether a grant covers the request: allowed by an
// "always allow", rejected by an "always reject" (a rejection wins, and a
// command rejected inside the sandbox is rejected outside it too).
func (g *Grants) Decided(a itemmap.Approval) (allowed, rejected bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rejected = slices.ContainsFunc(g.reject, func(gr backend.Grant) bool { return gr.Rejects(a) })
	return !rejected && slices.ContainsFunc(g.allow, func(gr backend.Grant) bool { return gr.Allows(a) }), rejected
}

// Allow adds an "always allow".
func (g *Grants) Allow(gr backend.Grant) {
	g.mu.Lock()
	g.allow = append(g.allow, gr)
	g.mu.Unlock()
}

// Reject adds an "always reject".
func (g *Grants) Reject(gr backend.Grant) {
	g.mu.Lock()
	g.reject = append(g.reject, gr)
	g.mu.Unlock()
}

// Grants are the session's "always" answers.
func (s *Session) Grants() *Grants { return &s.grants }
