package session

import (
	"maps"
	"slices"

	"spbridge/internal/archive"
	"spbridge/internal/transcript"
)

// The front ends' intents: each changes (or reads) the conversation under
// the session's lock, the way the conversation's rules say, and a change
// counts as one (the conversation is unsaved until the next save; SaveAuto
// saves it).

// AddFailure adds a failure item of the front end's own to the
// conversation (text, and detail when not ""), after every item there,
// and returns it: a front end that ends the session after an internal
// error says so where the conversation is read.
func (s *Session) AddFailure(text, detail string) archive.Item {
	f := archive.NewItem(archive.TypeFailure)
	f.Set("text", text)
	if detail != "" {
		f.Set("detail", detail)
	}
	s.change(func(conv *archive.Conversation) { conv.Items = append(conv.Items, f) })
	return f
}

// Rate records the user's rating of an item ("good" or "bad", with the
// reasons chosen), replacing an earlier one.
func (s *Session) Rate(itemID, rating string, reasons []string) {
	if reasons == nil {
		reasons = []string{}
	}
	fb := archive.Feedback{Rating: rating, Reasons: slices.Clone(reasons)}
	s.change(func(conv *archive.Conversation) {
		if conv.Feedback == nil {
			conv.Feedback = make(map[string]archive.Feedback)
		}
		conv.Feedback[itemID] = fb
	})
}

// AnswerCard records how the approval of a toolApproval item was answered:
// its card (say {"state": "allowed"}), replacing an earlier one.
func (s *Session) AnswerCard(itemID string, card map[string]any) {
	if itemID == "" {
		return
	}
	card = maps.Clone(card)
	s.change(func(conv *archive.Conversation) {
		if conv.ApprovalCards == nil {
			conv.ApprovalCards = make(map[string]any)
		}
		conv.ApprovalCards[itemID] = card
	})
}

// change runs f on the conversation under the session's lock as one
// change; f must not change a stored item in place, and must not block.
func (s *Session) change(f func(conv *archive.Conversation)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes++
	f(s.pkg.Conv)
	s.autoSaveLocked()
}

// ItemCount is how many items the conversation holds.
func (s *Session) ItemCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pkg.Conv.Items)
}

// Cost is the conversation's cost so far.
func (s *Session) Cost() archive.Cost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pkg.Conv.EstimatedCost
}

// Replay is the conversation as a front end shows it again from its
// start: its items (shared, see Session), the approval cards by item id,
// and for each user item that had images (by its index in Items) the
// history message it was sent as.
type Replay struct {
	Items []archive.Item
	Cards map[string]any
	Sent  map[int]archive.Message
}

// Replay is the conversation as it stands, to show it again.
func (s *Session) Replay() Replay {
	s.mu.Lock()
	defer s.mu.Unlock()
	conv := s.pkg.Conv
	r := Replay{Items: slices.Clone(conv.Items), Cards: maps.Clone(conv.ApprovalCards)}
	if slices.ContainsFunc(r.Items, func(it archive.Item) bool { return it.Type() == archive.TypeUser && it.Bool("hasImage") }) {
		r.Sent = transcript.UserMessages(r.Items, conv.History)
	}
	return r
}

// Fork is a copy of the conversation that ends with the item atItem (""
// for all of it), made under the session's lock (archive.Conversation.Fork).
func (s *Session) Fork(atItem string) (archive.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pkg.Conv.Fork(atItem)
}

// ReplayTail is Replay of the conversation's last n items only (those an
// undone rewind put back, to show them again).
func (s *Session) ReplayTail(n int) Replay {
	r := s.Replay()
	from := max(len(r.Items)-n, 0)
	r.Items = r.Items[from:]
	if r.Sent != nil {
		sent := make(map[int]archive.Message, len(r.Sent))
		for i, m := range r.Sent {
			if i >= from {
				sent[i-from] = m
			}
		}
		r.Sent = sent
	}
	return r
}
