package claude

import (
	"context"
	"unsafe"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// merger is the host a turn's lines are applied through: it joins the
// text deltas of one item that come one after another in the lines of one
// read into one change, so that a reply that claude streamed faster than
// it is read goes to the editor in a few large updates rather than one
// per delta, with no delay: what a read brought goes out before the next
// read, whole (a merged change is exactly an item whose text grew by the
// joined deltas, as Change.Delta allows). Any other change, a permission
// request, and the end of a read's lines first send what was joined.
type merger struct {
	h       backend.Host
	pending itemmap.Change
	has     bool
	text    []byte // the joined deltas of pending
}

func (g *merger) Change(c itemmap.Change) {
	if c.Op == itemmap.OpUpdate && c.Delta != "" && c.Tool == nil && c.Plan == nil && c.OutputDelta == "" {
		if g.has && g.pending.Item.ID() == c.Item.ID() {
			g.text = append(g.text, c.Delta...)
			g.pending.Item = c.Item
			return
		}
		g.flush()
		// The delta is borrowed until the next line: kept as a copy.
		g.pending, g.has = c, true
		g.text = append(g.text[:0], c.Delta...)
		return
	}
	g.flush()
	g.h.Change(c)
}

func (g *merger) Approve(ctx context.Context, a itemmap.Approval) backend.Decision {
	g.flush()
	return g.h.Approve(ctx, a)
}

// Idle sends what was joined, then tells the host.
func (g *merger) Idle() {
	g.flush()
	backend.Idle(g.h)
}

// flush sends the joined deltas, if any. The change's Delta is valid only
// during the host's Change, like every delta.
func (g *merger) flush() {
	if !g.has {
		return
	}
	c := g.pending
	c.Delta = unsafe.String(unsafe.SliceData(g.text), len(g.text))
	g.has, g.pending = false, itemmap.Change{}
	g.h.Change(c)
}
