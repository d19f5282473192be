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
// the live heap.
func TestHeadroom(t *testing.T) {
	const headroom = 16 << 20
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
	if limit := debug.SetMemoryLimit(-1); limit < int64(live) || limit > int64(live)+3*headroom {
		t.Errorf("memory limit %d MB with %d MB live", limit>>20, live>>20)
	}
	if gogc := debug.SetGCPercent(-1); gogc < 10 || gogc > 100*headroom/int(live) {
		t.Errorf("GOGC %d with %d MB live and %d MB headroom", gogc, live>>20, headroom>>20)
	}
}
