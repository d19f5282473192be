package backend

import (
	"context"
	"unsafe"

	"spbridge/internal/itemmap"
)

// Merger is a Host a turn's lines are applied through: it joins the text
// deltas of one item that come one after another in the lines of one read
// into one change, so that a reply that a CLI streamed faster than it is
// read goes to the editor in a few large updates rather than one per
// delta, with no delay: what a read brought goes out before the next read,
// whole (a merged change is exactly an item whose text grew by the joined
// deltas, as Change.Delta allows). Any other change, a permission request,
// Idle (the end of a read's lines) and Flush first send what was joined.
// A Merger is used by one goroutine, the turn's.
type Merger struct {
	h       Host
	pending itemmap.Change
	has     bool
	text    []byte // the joined deltas of pending
}

// NewMerger returns a Merger in front of h.
func NewMerger(h Host) *Merger { return &Merger{h: h} }

// Change joins a text delta to the one before it, or sends what was
// joined and then c.
func (g *Merger) Change(c itemmap.Change) {
	if c.Op == itemmap.OpUpdate && c.Delta != "" && c.Tool == nil && c.Plan == nil && c.OutputDelta == "" {
		if g.has && g.pending.Item.ID() == c.Item.ID() {
			g.text = append(g.text, c.Delta...)
			g.pending.Item = c.Item
			return
		}
		g.Flush()
		// The delta is borrowed until the next line: kept as a copy.
		g.pending, g.has = c, true
		g.text = append(g.text[:0], c.Delta...)
		return
	}
	g.Flush()
	g.h.Change(c)
}

// Approve sends what was joined, then asks h.
func (g *Merger) Approve(ctx context.Context, a itemmap.Approval) Decision {
	g.Flush()
	return g.h.Approve(ctx, a)
}

// Compaction sends what was joined, then tells the host.
func (g *Merger) Compaction(c itemmap.Compaction) {
	g.Flush()
	Compacted(g.h, c)
}

// Idle sends what was joined, then tells the host.
func (g *Merger) Idle() {
	g.Flush()
	Idle(g.h)
}

// Flush sends the joined deltas, if any. The change's Delta is valid only
// during the host's Change, like every delta.
func (g *Merger) Flush() {
	if !g.has {
		return
	}
	c := g.pending
	c.Delta = unsafe.String(unsafe.SliceData(g.text), len(g.text))
	g.has, g.pending = false, itemmap.Change{}
	g.h.Change(c)
}
