package session

import (
	"fmt"
	"slices"
	"testing"

	"spbridge/internal/archive"
)

// TestQueue: the conversation's queued messages follow the queue — a
// message queued when the conversation was last saved stays first and is
// never taken for a turn; next takes the first waiting message, drop hands
// one back, handBack hands back the rest and clears the queued list, and
// Forget leaves the saved list as it is.
func TestQueue(t *testing.T) {
	s := &Session{pkg: &archive.Package{Conv: &archive.Conversation{Queued: []any{"saved earlier"}}}}
	texts := func(v []any) []string {
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	check := func(when string, queued, unsent []string) {
		t.Helper()
		conv := s.pkg.Conv
		if !slices.Equal(texts(conv.Queued), queued) || !slices.Equal(texts(conv.Unsent), unsent) {
			t.Errorf("%s: queued %q, unsent %q; want %q, %q", when, conv.Queued, conv.Unsent, queued, unsent)
		}
	}
	s.queueLocked(Request{Text: "a"})
	s.queueLocked(Request{Text: "b"})
	b := s.waiting[1]
	s.queueLocked(Request{Text: "c"})
	check("queued", []string{"saved earlier", "a", "b", "c"}, nil)
	if q, ok := s.nextLocked(); !ok || q.Text != "a" {
		t.Fatalf("next: %v %v", q, ok)
	}
	check("after next", []string{"saved earlier", "b", "c"}, nil)
	if !s.dropLocked(b) || s.dropLocked(b) {
		t.Error("drop: not exactly once")
	}
	check("after drop", []string{"saved earlier", "c"}, []string{"b"})
	if qs := s.handBackLocked(); len(qs) != 1 || qs[0].Text != "c" {
		t.Errorf("hand back: %v", qs)
	}
	check("after hand back", nil, []string{"b", "c"})
	if qs := s.handBackLocked(); qs != nil {
		t.Errorf("hand back of nothing: %v", qs)
	}
	s.queueLocked(Request{Text: "d"})
	if qs := s.Forget(); len(qs) != 1 {
		t.Errorf("forget: %v", qs)
	}
	check("after forget", []string{"d"}, []string{"b", "c"})
	if _, ok := s.nextLocked(); ok {
		t.Error("next after forget")
	}
}
