package archive

import (
	"errors"
	"strings"
	"testing"
)

// TestConversationFork: a fork at an item keeps the items up to it and
// the history of the turns of the user items kept (a tool's result, also
// of role user, does not begin a turn); a fork shares no item with the
// conversation, and leaves the composer's messages behind; an unknown item
// is ErrNoItem.
func TestConversationFork(t *testing.T) {
	c := &Conversation{}
	item := func(typ, text string) Item {
		it := NewItem(typ)
		it.Set("text", text)
		c.Items = append(c.Items, it)
		return it
	}
	msg := func(role string, b Block) { c.History = append(c.History, Message{Role: role, Content: []Block{b}}) }
	item(TypeUser, "first")
	msg("user", NewTextBlock("first"))
	msg("assistant", NewToolCallBlock("c1", "Bash", "{}"))
	msg("user", NewToolResultBlock("c1", "Bash", "out", false))
	answer := item(TypeAssistant, "one")
	msg("assistant", NewTextBlock("one"))
	item(TypeUser, "second")
	msg("user", NewTextBlock("second"))
	item(TypeAssistant, "two")
	msg("assistant", NewTextBlock("two"))
	c.Unsent = []any{"draft"}

	f, err := c.Fork(answer.ID())
	if err != nil {
		t.Fatal(err)
	}
	var texts, roles []string
	for _, it := range f.Items {
		texts = append(texts, it.String("text"))
	}
	for _, m := range f.History {
		roles = append(roles, m.Role)
	}
	if strings.Join(texts, ",") != "first,one" || strings.Join(roles, ",") != "user,assistant,user,assistant" {
		t.Errorf("fork at %q: items %q, history %q", answer.ID(), texts, roles)
	}
	f.Items[0].Set("text", "changed")
	if c.Items[0].String("text") != "first" || len(c.Items) != 4 || len(c.History) != 6 {
		t.Error("the fork shares what its conversation may change")
	}
	if len(f.Unsent) != 0 {
		t.Errorf("the fork took the composer's messages: %q", f.Unsent)
	}
	whole, err := c.Fork("")
	if err != nil || len(whole.Items) != 4 || len(whole.History) != 6 {
		t.Errorf("a whole fork: %v, %d items, %d messages", err, len(whole.Items), len(whole.History))
	}
	if _, err := c.Fork("nope"); !errors.Is(err, ErrNoItem) {
		t.Errorf("an unknown item: %v", err)
	}
}

// TestForkCompactedCut: a fork of a conversation holding a /compact (a
// user item the history has no message for, as an imported Claude Code
// session has it) keeps the history cut at the same turn as its items;
// the ratings of the turns cut go, those kept stay.
func TestForkCompactedCut(t *testing.T) {
	c := &Conversation{Feedback: map[string]Feedback{}}
	item := func(typ, text string) Item {
		it := NewItem(typ)
		it.Set("text", text)
		c.Items = append(c.Items, it)
		return it
	}
	msg := func(role, text string) {
		c.History = append(c.History, Message{Role: role, Content: []Block{NewTextBlock(text)}})
	}
	item(TypeUser, "first")
	msg("user", "first")
	one := item(TypeAssistant, "one")
	msg("assistant", "one")
	c.Feedback[one.ID()] = Feedback{Rating: "good"}
	item(TypeUser, "/compact")
	notice := item(TypeNotice, "Claude Code compacted the conversation.")
	item(TypeUser, "second")
	msg("user", "second")
	two := item(TypeAssistant, "two")
	msg("assistant", "two")
	c.Feedback[two.ID()] = Feedback{Rating: "bad"}

	f, err := c.Fork(notice.ID())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range f.History {
		texts = append(texts, m.Role+" "+m.Content[0].String("text"))
	}
	if got := strings.Join(texts, ","); got != "user first,assistant one" {
		t.Errorf("history %q", got)
	}
	if _, ok := f.Feedback[one.ID()]; !ok || len(f.Feedback) != 1 {
		t.Errorf("ratings %v", f.Feedback)
	}
	if len(c.Feedback) != 2 {
		t.Error("the fork changed the conversation's ratings")
	}
}
