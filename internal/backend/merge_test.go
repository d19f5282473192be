package backend

import (
	"context"
	"testing"
	"unsafe"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// mergeHost records what it is told, in order.
type mergeHost struct{ got []string }

func (h *mergeHost) Change(c itemmap.Change) {
	h.got = append(h.got, c.Op.String()+" "+c.Item.ID()+" "+c.Delta)
}

func (h *mergeHost) Approve(context.Context, itemmap.Approval) Decision {
	h.got = append(h.got, "approve")
	return Decision{}
}

func (h *mergeHost) Idle() { h.got = append(h.got, "idle") }

// TestMergerJoinsDeltas checks that the text deltas of one item that come
// one after another become one change, sent before anything else and at
// Idle, with the deltas copied (they are borrowed from the line).
func TestMergerJoinsDeltas(t *testing.T) {
	a, b := archive.NewItem(archive.TypeAssistant), archive.NewItem(archive.TypeThinking)
	tool := archive.NewItem(archive.TypeTool)
	h := &mergeHost{}
	g := NewMerger(h)
	line := make([]byte, 0, 64) // one buffer for every line, as cliproc's
	delta := func(it archive.Item, s string) {
		line = append(line[:0], s...)
		g.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: it, Delta: unsafe.String(&line[0], len(line))})
	}
	g.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	delta(a, "one ")
	delta(a, "two ")
	delta(a, "three")
	delta(b, "think")                                       // another item: a's go first
	g.Change(itemmap.Change{Op: itemmap.OpAdd, Item: tool}) // not a delta: b's go first
	delta(a, "four")
	g.Approve(context.Background(), itemmap.Approval{})
	delta(a, "five")
	g.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a}) // an update that is not a delta
	delta(a, "six")
	delta(a, "seven")
	g.Idle()
	g.Idle() // nothing joined: only the host's Idle
	want := []string{
		"add " + a.ID() + " ",
		"update " + a.ID() + " one two three",
		"update " + b.ID() + " think",
		"add " + tool.ID() + " ",
		"update " + a.ID() + " four",
		"approve",
		"update " + a.ID() + " five",
		"update " + a.ID() + " ",
		"update " + a.ID() + " sixseven",
		"idle",
		"idle",
	}
	if len(h.got) != len(want) {
		t.Fatalf("got %q\nwant %q", h.got, want)
	}
	for i := range want {
		if h.got[i] != want[i] {
			t.Errorf("change %d = %q, want %q", i, h.got[i], want[i])
		}
	}
}
