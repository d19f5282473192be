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
	keep = nil
	runtime.GC()
	defer debug.SetGCPercent(100)
	defer debug.SetMemoryLimit(-1)
	var peak uint64
	var ms runtime.MemStats
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
	live := uint64(len(keep)) << 20
	// Objects allocated while a collection marks count as live for it:
	// the bounds allow for that.
	if peak > live+headroom+16<<20 {
		t.Errorf("the heap reached %d MB holding at most %d MB with %d MB headroom", peak>>20, live>>20, headroom>>20)
	}
	if ms.NumGC < 10 {
		t.Errorf("%d collections for 400 MB allocated", ms.NumGC)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	var s setting
	for s = range settings {
		if s.cycles >= uint64(ms.NumGC) {
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
