package backend

import (
	"context"
	"sync"

	"spbridge/internal/itemmap"
)

// Answer is the host's decision on one permission request.
type Answer struct {
	RequestID string
	Decision  Decision
}

// Approvals asks the host about a turn's permission requests, each in a
// goroutine of its own so that the turn goes on reading its CLI, and keeps
// which of them still wait for an answer. Its methods are for the turn's
// own goroutine, which receives from Answers in its select.
type Approvals struct {
	ctx     context.Context
	cancel  context.CancelFunc
	host    Host
	answers chan Answer
	waiting map[string]bool
	asking  sync.WaitGroup
}

// NewApprovals returns the approvals of a turn run under ctx, asking h.
// The turn calls Close when it ends.
func NewApprovals(ctx context.Context, h Host) *Approvals {
	ctx, cancel := context.WithCancel(ctx)
	return &Approvals{ctx: ctx, cancel: cancel, host: h, answers: make(chan Answer), waiting: make(map[string]bool)}
}

// Ask asks the host about a; its answer arrives on Answers.
func (a *Approvals) Ask(ap itemmap.Approval) {
	a.waiting[ap.RequestID] = true
	a.asking.Add(1)
	go func() {
		defer a.asking.Done()
		d := a.host.Approve(a.ctx, ap)
		select {
		case a.answers <- Answer{ap.RequestID, d}:
		case <-a.ctx.Done():
		}
	}()
}

// Answers delivers the host's answers.
func (a *Approvals) Answers() <-chan Answer { return a.answers }

// Take reports whether ans answers a request that still waits; that
// request then waits no more.
func (a *Approvals) Take(ans Answer) bool {
	if !a.waiting[ans.RequestID] {
		return false
	}
	delete(a.waiting, ans.RequestID)
	return true
}

// Pending is how many requests wait for the host.
func (a *Approvals) Pending() int { return len(a.waiting) }

// Withdraw takes every question back from the host (the context its
// Approve calls got is cancelled) and returns the ids of the requests that
// were waiting, which wait no more; the turn answers them itself.
func (a *Approvals) Withdraw() []string {
	a.cancel()
	ids := make([]string, 0, len(a.waiting))
	for id := range a.waiting {
		ids = append(ids, id)
	}
	clear(a.waiting)
	return ids
}

// Close takes back every question still open (the context of the Approve
// calls is cancelled, so a host that still asks stops asking) and waits
// until every Approve call the host was given has returned, so that none
// reaches the host after the turn.
func (a *Approvals) Close() {
	a.cancel()
	a.asking.Wait()
}
