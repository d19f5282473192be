package session

import (
	"fmt"
	"slices"
	"testing"

	"spbridge/internal/archive"
)

// TestQueue: the conversation's queued messages follow the queue — a
// message queued when the conversation was last saved stays first and is
// never taken for a turn; Next takes the first waiting message, Drop hands
// one back by its tag, HandBack hands back the rest and clears the queued
// list, and Forget leaves the saved list as it is.
func TestQueue(t *testing.T) {
	s := &Session{Pkg: &archive.Package{Conv: &archive.Conversation{Queued: []any{"saved earlier"}}}}
	texts := func(v []any) []string {
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	check := func(when string, queued, unsent []string) {
		t.Helper()
		conv := s.Pkg.Conv
		if !slices.Equal(texts(conv.Queued), queued) || !slices.Equal(texts(conv.Unsent), unsent) {
			t.Errorf("%s: queued %q, unsent %q; want %q, %q", when, conv.Queued, conv.Unsent, queued, unsent)
		}
	}
	tagB := new(int)
	s.Queue(Queued{Text: "a"})
	s.Queue(Queued{Text: "b", Tag: tagB})
	s.Queue(Queued{Text: "c"})
	check("queued", []string{"saved earlier", "a", "b", "c"}, nil)
	if tags := s.QueuedTags(); len(tags) != 1 || tags[0] != tagB {
		t.Errorf("tags %v", tags)
	}
	if q, ok := s.Next(); !ok || q.Text != "a" {
		t.Fatalf("next: %v %v", q, ok)
	}
	check("after next", []string{"saved earlier", "b", "c"}, nil)
	if !s.Drop(tagB) || s.Drop(tagB) {
		t.Error("drop: not exactly once")
	}
	check("after drop", []string{"saved earlier", "c"}, []string{"b"})
	if qs := s.HandBack(); len(qs) != 1 || qs[0].Text != "c" {
		t.Errorf("hand back: %v", qs)
	}
	check("after hand back", nil, []string{"b", "c"})
	if qs := s.HandBack(); qs != nil {
		t.Errorf("hand back of nothing: %v", qs)
	}
	s.Queue(Queued{Text: "d"})
	if qs := s.Forget(); len(qs) != 1 {
		t.Errorf("forget: %v", qs)
	}
	check("after forget", []string{"d"}, []string{"b", "c"})
	if _, ok := s.Next(); ok {
		t.Error("next after forget")
	}
}
