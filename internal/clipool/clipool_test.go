package clipool

import (
	"sync"
	"testing"
)

// member is a CLI that runs until put to sleep, unless busy.
type member struct {
	mu          sync.Mutex
	awake, busy bool
	slept       int
}

func (m *member) Awake() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.awake }
func (m *member) Sleep() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.awake || m.busy {
		return false
	}
	m.awake = false
	m.slept++
	return true
}

func (m *member) use(p *Pool) {
	m.mu.Lock()
	m.awake = true
	m.mu.Unlock()
	p.Used(m)
	p.Wait()
}

// TestLimit: the least recently used go to sleep first, never the one
// just used, a busy one passed over; a forgotten one no longer counts.
func TestLimit(t *testing.T) {
	p := New(2)
	a, b, c, d := &member{}, &member{}, &member{}, &member{}
	a.use(p)
	b.use(p)
	c.use(p)
	if a.Awake() || !b.Awake() || !c.Awake() {
		t.Fatalf("awake %v %v %v, want the least recently used asleep", a.Awake(), b.Awake(), c.Awake())
	}
	b.mu.Lock()
	b.busy = true
	b.mu.Unlock()
	a.use(p) // b is the least recently used, busy: c goes
	if !a.Awake() || !b.Awake() || c.Awake() {
		t.Errorf("awake %v %v %v, want the busy one kept", a.Awake(), b.Awake(), c.Awake())
	}
	p.Forget(b)
	d.use(p)
	if !a.Awake() || !d.Awake() || b.slept != 0 {
		t.Errorf("after forgetting b: a %v d %v, b slept %d", a.Awake(), d.Awake(), b.slept)
	}
	var none *Pool
	none.Used(a) // no pool: nothing happens
	if none.Max() != 0 || New(0).Max() != 0 {
		t.Error("no limit reads as one")
	}
	q := New(0)
	a.use(q)
	b.use(q)
	if !a.Awake() || !b.Awake() {
		t.Error("a pool without a limit put a CLI to sleep")
	}
}
