package session

import (
	"context"
	"slices"
	"testing"

	"spbridge/internal/archive"
)

// TestIntentsSaved: a front end's intents (a rating, an approval card, a
// failure item of its own) change the conversation as changes that the
// next save writes, and Replay and ItemCount read it as it stands.
func TestIntentsSaved(t *testing.T) {
	pkg, state := newPackage(t)
	s := openPolicy(t, pkg, state, SaveByCaller, true, &fakeBackend{name: "claude"})
	defer s.Close()
	if _, err := s.Send(context.Background(), "hello", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	reply := s.Replay().Items[1].ID()
	s.Rate(reply, "bad", []string{"wrong"})
	if !s.Unsaved() {
		t.Error("a rating left the conversation saved")
	}
	s.AnswerCard(reply, map[string]any{"state": "allowed"})
	s.AnswerCard("", map[string]any{"state": "rejected"}) // no item: nothing
	f := s.AddFailure("it broke", "why")
	if n := s.ItemCount(); n != 3 {
		t.Errorf("ItemCount = %d, want 3", n)
	}
	r := s.Replay()
	if len(r.Items) != 3 || r.Items[2].ID() != f.ID() || r.Cards[reply] == nil || len(r.Cards) != 1 {
		t.Errorf("Replay = %+v", r)
	}
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	conv := onDisk(t, pkg)
	if fb := conv.Feedback[reply]; fb.Rating != "bad" || !slices.Equal(fb.Reasons, []string{"wrong"}) {
		t.Errorf("saved feedback %+v", conv.Feedback)
	}
	if c, _ := conv.ApprovalCards[reply].(map[string]any); c["state"] != "allowed" || len(conv.ApprovalCards) != 1 {
		t.Errorf("saved cards %v", conv.ApprovalCards)
	}
	last := conv.Items[len(conv.Items)-1]
	if last.Type() != archive.TypeFailure || last.String("text") != "it broke" || last.String("detail") != "why" {
		t.Errorf("saved last item %v", last.Map())
	}
	if cost := s.Cost(); cost.Dollars != "0.5" {
		t.Errorf("Cost = %+v", cost)
	}
	fork, err := s.Fork(reply)
	if err != nil || len(fork.Items) != 2 {
		t.Errorf("Fork(%s) = %d items, %v", reply, len(fork.Items), err)
	}
}
