// Package gcpace paces the garbage collector of a long-running process by
// a headroom over its live heap, instead of Go's default of a multiple of
// it: a collection runs once the heap reaches the live heap of the last
// collection plus the headroom, and the runtime's memory limit (which
// makes it return freed memory to the system) sits half a headroom above
// that. The headroom is fixed until the live heap is Growth times it, and a
// Growth-th of the live heap beyond. A process that holds a large value
// for long (serve holds each open conversation whole) then peaks near its
// size plus the headroom, not at one and a half or twice its size; one
// with a small live heap collects far less often than a multiple of it
// would make it; and one with a large live heap does not spend its time
// marking it again and again for a few megabytes each time (a fixed 16 MB
// over 370 MB made serve collect a thousand times on a 1 GB stream).
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Min is the least memory limit Start sets, whatever the live heap.
const Min = 16 << 20

// Growth is how many times the headroom the live heap grows to before the
// headroom grows with it (as a Growth-th of it).
const Growth = 4

var once sync.Once

// Start makes the collector run when the heap reaches the live heap (as
// the last collection found it) plus headroom: it sets GOGC and the memory
// limit again after every collection. It does so once per process; later
// calls do nothing.
func Start(headroom int64) {
	once.Do(func() {
		p := &pacer{headroom: headroom, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}}
		p.adjust()
		p.arm()
	})
}

type pacer struct {
	headroom int64
	sample   []metrics.Sample
}

// sentinel is an object whose finalizer runs after each collection. It
// holds a pointer so that it is not one of the tiny objects the allocator
// packs together (their finalizers may never run).
type sentinel struct {
	p *pacer
}

// arm sets a finalizer on a new unreachable object: the next collection
// runs it, and it arms the next one before it adjusts (so that once a
// setting is made, the sentinel the next collection finds is there).
func (p *pacer) arm() {
	s := &sentinel{p: p}
	runtime.SetFinalizer(s, func(s *sentinel) {
		s.p.arm()
		s.p.adjust()
	})
}

// adjust sets GOGC for a heap goal of the live heap plus the headroom, and
// the memory limit half a headroom above.
func (p *pacer) adjust() {
	metrics.Read(p.sample)
	var live int64
	if v := p.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = int64(v.Uint64())
	}
	gogc, limit := settings(live, p.headroom)
	debug.SetGCPercent(gogc)
	debug.SetMemoryLimit(limit)
	if f := observe.Load(); f != nil {
		var cycles uint64
		if v := p.sample[1].Value; v.Kind() == metrics.KindUint64 {
			cycles = v.Uint64()
		}
		(*f)(setting{cycles: cycles, live: live, gogc: gogc, limit: limit})
	}
}

// settings returns GOGC and the memory limit for a live heap of live bytes
// and a headroom of at least headroom bytes.
func settings(live, headroom int64) (gogc int, limit int64) {
	headroom = max(headroom, live/Growth)
	gogc = int(max(headroom*100/max(live, 1<<20), 10))
	limit = max(live+headroom*3/2, Min)
	return gogc, limit
}

// setting is what one adjust found and set.
type setting struct {
	cycles uint64 // collections completed when it ran
	live   int64
	gogc   int
	limit  int64
}

// observe, when set, is told each setting (tests watch the pacer with it).
var observe atomic.Pointer[func(setting)]
