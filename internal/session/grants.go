package session

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// Grants are a session's "always" answers: what the user allowed, or
// rejected, for the rest of the session (New Conversation keeps them). The
// session decides every permission request by them (Decide), for its
// turns and between them, and asks its front end only about a request no
// grant covers. Safe for concurrent use; the zero value has none.
type Grants struct {
	mu            sync.Mutex
	allow, reject []backend.Grant
}

// Asker is a front end's side of the session's approvals.
type Asker interface {
	// Ask asks the user about a permission request no grant covers, and
	// returns the answer. It may block; ctx ends when the request is taken
	// back (the turn is interrupted or ends, the CLI exits).
	Ask(ctx context.Context, q Question) Answer
	// Granted tells that a grant answered the request without asking:
	// allowed, or rejected.
	Granted(a itemmap.Approval, allowed bool)
}

// Question is a permission request put to a front end, with the
// "always" answers it may offer.
type Question struct {
	Approval itemmap.Approval
	// Always is what an "always" answer covers (backend.GrantFor: a
	// command by its prefix or as exactly itself, in its folder; an edit by
	// its tool and file; any other tool by its name); CanAlways is false
	// for a request with nothing to scope it by, which offers none.
	Always    backend.Grant
	CanAlways bool
	// Edits covers every edit inside the session's folders
	// (backend.EditsGrant), offered when CanEdits.
	Edits    backend.Grant
	CanEdits bool

	grants *Grants
}

// Decided reports whether a grant covers the request by now: a front end
// that asks one question at a time answers, without asking, a request an
// answer given meanwhile covers.
func (q Question) Decided() (allowed, rejected bool) {
	if q.grants == nil {
		return false, false
	}
	return q.grants.Decided(q.Approval)
}

// Answer is a front end's answer to a Question.
type Answer struct {
	Allow bool
	// Always keeps the answer for the rest of the session (the question's
	// Always grant, allowed or rejected), when the question offered it.
	Always bool
	// Edits, with Allow, allows every edit inside the session's folders
	// (the question's Edits grant), when the question offered it.
	Edits bool
	// Message is what the model hears of a denial; UpdatedInput, with
	// Allow, replaces the tool's input (a question's answers).
	Message      string
	UpdatedInput json.RawMessage
}

// RejectedForSession is what the model hears of a request an "always
// reject" covers.
const RejectedForSession = "The user rejected this for the rest of the session."

// Decide decides a permission request of a CLI whose tool vocabulary is
// tools: a grant that covers it answers it (told to f.Granted; a rejection
// wins, and a command rejected inside the sandbox is rejected outside it
// too); else f is asked, offered an "always" where the request can be
// scoped and every edit inside roots (the session's folders) for an edit
// there, and an "always" answer is kept. The CLI is told an allowed grant (Decision.Always; each backend
// passes it on only where its own rule means exactly the same).
func (g *Grants) Decide(ctx context.Context, a itemmap.Approval, roots []string, tools backend.Tools, f Asker) backend.Decision {
	switch allowed, rejected := g.Decided(a); {
	case rejected:
		f.Granted(a, false)
		return backend.Decision{Message: RejectedForSession}
	case allowed:
		f.Granted(a, true)
		return backend.Decision{Allow: true}
	}
	q := Question{Approval: a, grants: g}
	q.Always, q.CanAlways = backend.GrantFor(a, tools)
	q.Edits, q.CanEdits = backend.EditsGrant(a, roots, tools)
	ans := f.Ask(ctx, q)
	d := backend.Decision{Allow: ans.Allow, Message: ans.Message, UpdatedInput: ans.UpdatedInput}
	switch {
	case ans.Allow && ans.Edits && q.CanEdits:
		g.Allow(q.Edits)
		d.Always = &q.Edits
	case ans.Allow && ans.Always && q.CanAlways:
		g.Allow(q.Always)
		d.Always = &q.Always
	case !ans.Allow && ans.Always && q.CanAlways:
		g.Reject(q.Always)
	}
	return d
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

// approve decides a permission request of the session's CLI, in a turn or
// between turns, asking f (Grants.Decide, in the session's folders, by
// its CLI's tool vocabulary).
func (s *Session) approve(ctx context.Context, a itemmap.Approval, f Asker) backend.Decision {
	s.mu.Lock()
	roots := append([]string{s.cwd}, s.set.Backend.AddDirs...)
	tools := s.row.Tools
	s.mu.Unlock()
	return s.grants.Decide(ctx, a, roots, tools, f)
}
