// Package clipool bounds how many CLIs a serve keeps running at once: the
// sessions it holds are kept in the order they were last used, and when
// more of their CLIs run than the limit, the least recently used ones are
// put to sleep (ended; their session wakes them with its next turn). A
// session's own idle time puts its CLI to sleep too (internal/session);
// the pool adds the limit across sessions.
package clipool

import (
	"sync"
)

// Member is a session whose CLI the pool may put to sleep.
type Member interface {
	// Awake reports whether its CLI runs.
	Awake() bool
	// Sleep puts its CLI to sleep when it is idle, and reports whether it
	// did; a busy CLI goes on.
	Sleep() bool
}

// Pool keeps sessions in the order they were last used. The zero Pool
// has no limit. It is safe for concurrent use.
type Pool struct {
	max int

	mu      sync.Mutex
	order   []Member // least recently used first
	pending bool     // a check is to run after the one running
	running bool
	wg      sync.WaitGroup
}

// New returns a pool that keeps at most max CLIs running (0: no limit).
func New(max int) *Pool { return &Pool{max: max} }

// Max is the limit (0: none).
func (p *Pool) Max() int {
	if p == nil {
		return 0
	}
	return p.max
}

// Used marks m as the most recently used (its CLI runs, or is about to)
// and, when more CLIs run than the limit, puts the least recently used
// idle ones to sleep, on a goroutine of the pool's: Used never waits for a
// CLI.
func (p *Pool) Used(m Member) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.order = append(remove(p.order, m), m)
	if p.max <= 0 {
		return
	}
	if p.running {
		p.pending = true
		return
	}
	p.running = true
	p.wg.Add(1)
	go p.check()
}

// Forget takes m out of the pool (its session closed).
func (p *Pool) Forget(m Member) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.order = remove(p.order, m)
	p.mu.Unlock()
}

// Wait waits for the checks Used started.
func (p *Pool) Wait() {
	if p != nil {
		p.wg.Wait()
	}
}

// check puts the least recently used idle CLIs to sleep while more than
// max run, the most recently used one spared; it runs again when a Used
// came meanwhile.
func (p *Pool) check() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		order := append([]Member(nil), p.order...)
		p.mu.Unlock()
		if len(order) == 0 {
			break
		}
		awake := make([]Member, 0, len(order))
		for _, m := range order {
			if m.Awake() {
				awake = append(awake, m)
			}
		}
		newest := order[len(order)-1]
		excess := len(awake) - p.max
		for _, m := range awake {
			if excess <= 0 {
				break
			}
			// A busy CLI stays awake: the next one in order goes instead.
			if m != newest && m.Sleep() {
				excess--
			}
		}
		p.mu.Lock()
		if !p.pending {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.pending = false
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.running, p.pending = false, false
	p.mu.Unlock()
}

func remove(list []Member, m Member) []Member {
	for i, x := range list {
		if x == m {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}
