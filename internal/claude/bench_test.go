package claude

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// latencyHost measures, for each streamed delta, the time from the fake CLI
// writing its line to the host seeing the item change.
type latencyHost struct {
	mu    sync.Mutex
	delay []time.Duration
}

func (h *latencyHost) Change(c itemmap.Change) {
	now := time.Now().UnixNano()
	if c.Delta == "" {
		return
	}
	// One time per line; several when lines read together were joined.
	for _, f := range strings.Fields(c.Delta) {
		if ns, err := strconv.ParseInt(f, 10, 64); err == nil {
			h.mu.Lock()
			h.delay = append(h.delay, time.Duration(now-ns))
			h.mu.Unlock()
		}
	}
}

func (h *latencyHost) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}

// BenchmarkLineToItemLatency measures the delay from a line written by a
// (fake) CLI to the item change the caller of Turn sees, over 1,000 lines a
// turn; it reports p50 and p99 in microseconds.
func BenchmarkLineToItemLatency(b *testing.B) {
	be := fakeBackendTB(b, "latency", Options{})
	h := &latencyHost{}
	for b.Loop() {
		if end := be.Turn(context.Background(), backend.Message{Text: "go"}, h); end.Status != itemmap.TurnCompleted {
			b.Fatalf("turn %s", end.Status)
		}
	}
	slices.Sort(h.delay)
	if len(h.delay) == 0 {
		b.Fatal("no deltas seen")
	}
	q := func(p float64) float64 { return float64(h.delay[int(p*float64(len(h.delay)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(h.delay))/float64(b.N), "lines/op")
}
