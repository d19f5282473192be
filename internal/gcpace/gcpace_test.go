package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var keep [][]byte

// TestHeadroom holds 40 MB while allocating 400 MB of garbage, and checks
// that the heap never held more than the live data plus the headroom (and
// what one allocation step adds) and that GOGC and the memory limit follow
// the live heap: the setting made after a last, explicit collection is
// the one checked (the pacer sets them from its finalizer, after the
// collection that ran it).
func TestHeadroom(t *testing.T) {
	const headroom = 16 << 20
	settings := make(chan setting, 1024)
	f := func(s setting) {
		select {
		case settings <- s:
		default:
		}
	}
	observe.Store(&f)
	defer observe.Store(nil)
	Start(headroom)
	defer debug.SetGCPercent(100)
	defer debug.SetMemoryLimit(-1)
	// The pacer sets GOGC from a finalizer, which a loaded machine may run
	// late, so the heap can overshoot once; without the pacer (GOGC 100)
	// it overshoots every time, so a pass in any of three runs tells them
	// apart.
	var peak, live uint64
	var ms runtime.MemStats
	for range 3 {
		keep = nil
		runtime.GC()
		runtime.ReadMemStats(&ms)
		gcs := ms.NumGC
		peak = 0
		for i := range 400 {
			b := make([]byte, 1<<20)
			b[0] = 1
			if i%10 == 0 {
				keep = append(keep, b) // 40 MB kept
			}
			if i%20 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
		runtime.ReadMemStats(&ms)
		live = uint64(len(keep)) << 20
		if ms.NumGC-gcs < 10 {
			t.Errorf("%d collections for 400 MB allocated", ms.NumGC-gcs)
		}
		// Objects allocated while a collection marks count as live for
		// it: the bound allows for that.
		if peak <= live+headroom+16<<20 {
			break
		}
	}
	if peak > live+headroom+16<<20 {
		t.Errorf("the heap reached %d MB holding at most %d MB with %d MB headroom, in each of three runs", peak>>20, live>>20, headroom>>20)
	}
	// The setting the pacer makes after a collection the test runs. Its
	// sentinel, armed by the last finalizer, is collected by that
	// collection unless that finalizer ran while it marked: the sentinel
	// then lives through it, and its finalizer would wait for a
	// collection nothing else asks for (the runtime's forced one, two
	// minutes later). So a collection of the test's own comes before each
	// setting it waits for, and one always comes: a finalizer queued or
	// running, or the one its collection queues (a finalizer arms the next
	// sentinel before it makes its setting, so once a setting is taken,
	// the next collection finds a sentinel). Nothing else allocates: each
	// collection finds the same live heap.
	for drained := false; !drained; {
		select {
		case <-settings:
		default:
			drained = true
		}
	}
	var s setting
	for {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if s = <-settings; s.cycles >= uint64(ms.NumGC) {
			break
		}
	}
	// After a full collection with nothing else allocating, the live heap
	// is what the test keeps plus the runtime's and the test's own.
	if s.live < int64(live) || s.live > int64(live)+4<<20 {
		t.Errorf("the pacer saw %d bytes live while %d MB are kept", s.live, live>>20)
	}
	if s.limit < int64(live) || s.limit > int64(live)+3*headroom {
		t.Errorf("memory limit %d MB with %d MB live", s.limit>>20, live>>20)
	}
	if s.gogc < 10 || s.gogc > 100*headroom/int(live) {
		t.Errorf("GOGC %d with %d MB live and %d MB headroom", s.gogc, live>>20, headroom>>20)
	}
	if gogc := debug.SetGCPercent(-1); gogc != s.gogc {
		t.Errorf("GOGC is %d, the pacer set %d", gogc, s.gogc)
	}
}

// TestSettings: a fixed headroom over a small live heap, a Growth-th of a
// large one, so that a collection comes after a share of the heap has been
// allocated again, never after a sliver of it.
func TestSettings(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom int64
		gogc           int
		limit          int64
	}{
		{0, 16 * mb, 1600, 24 * mb}, // an empty heap counts as 1 MB for GOGC
		{1 * mb, 16 * mb, 1600, 25 * mb},
		{40 * mb, 16 * mb, 40, 64 * mb},   // serve on a 43 MB conversation
		{64 * mb, 16 * mb, 25, 88 * mb},   // where the headroom starts to grow
		{400 * mb, 16 * mb, 25, 550 * mb}, // serve on a 435 MB conversation
		{4000 * mb, 16 * mb, 25, 5500 * mb},
		{100 * mb, 1 * mb, 25, 137*mb + mb/2},
		{1 * mb, 1 * mb, 100, 16 * mb},        // the least limit
		{200 * mb, 1000 * mb, 500, 1700 * mb}, // a headroom larger than a Growth-th
		{10000 * mb, 1 * mb, 25, 13750 * mb},
		{1 << 40, 16 * mb, 25, 1<<40 + 3<<37}, // no overflow
		{3 * mb, 0, 25, 16 * mb},              // no headroom: a Growth-th alone
		{60 * mb, 16 * mb, 26, 84 * mb},       // GOGC rounds down
		{1000 * mb, 16 * mb, 25, 1375 * mb},
		{70 * mb, 16 * mb, 25, 70*mb + 26*mb + mb/4}, // 17.5 MB headroom
	} {
		gogc, limit := settings(c.live, c.headroom)
		if gogc != c.gogc || limit != c.limit {
			t.Errorf("settings(%d MB live, %d MB headroom) = GOGC %d, limit %d; want %d, %d", c.live/mb, c.headroom/mb, gogc, limit, c.gogc, c.limit)
		}
	}
}
