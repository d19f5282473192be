package archive

import (
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countdownCtx is a context that is done from its n+1th Err call on, so
// that a save is given up at each of its checks in turn, deterministically.
type countdownCtx struct {
	calls, n int64
	done     chan struct{}
}

var errGivenUp = errors.New("given up")

func (c *countdownCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *countdownCtx) Done() <-chan struct{}       { return c.done }
func (c *countdownCtx) Value(any) any               { return nil }
func (c *countdownCtx) Err() error {
	if atomic.AddInt64(&c.calls, 1) > c.n {
		return errGivenUp
	}
	return nil
}

// TestSaveContextGivenUpLeavesPackageAsItWas: a save whose context is done
// at any point before its conversation.json is in place leaves the package
// exactly as it was (no image, folder or temporary file of its own left),
// whether the package held no conversation or an older one; at the first
// point past it, the new conversation is whole.
func TestSaveContextGivenUpLeavesPackageAsItWas(t *testing.T) {
	for _, older := range []bool{false, true} {
		given := 0
		for n := int64(0); ; n++ {
			pkg := newPackage(t)
			if older {
				p := mustOpen(t, pkg)
				addTurn(p.Conv, "first", "First.", image(t, "old", 5000))
				mustSave(t, p)
			}
			before := snapshot(t, pkg)
			p := mustOpen(t, pkg)
			addTurn(p.Conv, "second", strings.Repeat("A long reply. ", 20000), image(t, "one", 4000), image(t, "two", 4000), image(t, "three", 4000))
			ctx := &countdownCtx{n: n, done: make(chan struct{})}
			r, err := p.SaveContext(ctx, true)
			if err == nil {
				if given < 4 {
					t.Errorf("older %v: given up only %d times before the save went through", older, given)
				}
				q := mustOpen(t, pkg)
				if q.Unreadable != "" || len(q.Conv.Items) != len(p.Conv.Items) {
					t.Errorf("older %v: the save that went through reads back as %d items (%s)", older, len(q.Conv.Items), q.Unreadable)
				}
				break
			}
			given++
			if !errors.Is(err, errGivenUp) {
				t.Fatalf("older %v, check %d: %v", older, n, err)
			}
			if after := snapshot(t, pkg); !maps.Equal(before, after) {
				t.Fatalf("older %v, given up at check %d: the package changed\nbefore %v\nafter  %v", older, n, before, after)
			}
			if len(r.Written) != 0 {
				t.Errorf("older %v, check %d: the report lists %v as written", older, n, r.Written)
			}
		}
	}
}
