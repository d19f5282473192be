package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// clearingBackend is a fakeBackend whose CLI resets its context on
// "/clear", as Claude Code does: the turn shows the reset's notice.
type clearingBackend struct{ fakeBackend }

func (c *clearingBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	if msg.Text != "/clear" {
		return c.fakeBackend.Turn(ctx, msg, h)
	}
	c.sent, c.texts = append(c.sent, msg.CLIText()), append(c.texts, msg.Text)
	it := archive.NewItem(archive.TypeNotice)
	it.Set("text", itemmap.ClaudeResetText)
	it.Set(archive.ContextReset, "clear")
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, SessionID: "after-clear"}
}

// TestResetThenReopen: a reset of the CLI's context is a saved notice; the
// items before it stay in the conversation, and after a reopen the CLI is
// told only what came after it.
func TestResetThenReopen(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	be := &clearingBackend{fakeBackend{name: "claude"}}
	s := &Session{pkg: p, be: be, provider: "claude-code"}
	for _, msg := range []string{"PRE-MARK", "/clear", "POST-MARK"} {
		if _, err := s.Send(context.Background(), msg, nil, nopHost{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if !strings.Contains(string(data), `"contextReset" : "clear"`) || !strings.Contains(string(data), "PRE-MARK") {
		t.Errorf("the saved conversation lacks the reset's notice or what came before it:\n%s", data)
	}

	p, _ = archive.Open(pkg, archive.KindDocument, true)
	if i := archive.LastReset(p.Conv.Items); i != 3 {
		t.Fatalf("the reset's notice is item %d of %d, want 3 (after PRE-MARK, its reply and /clear)", i, len(p.Conv.Items))
	}
	after := &fakeBackend{name: "claude"}
	s = &Session{pkg: p, be: after, provider: "claude-code", restore: restore.Restored(p.Conv.Items)}
	if _, err := s.Send(context.Background(), "next", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	want := restore.Heading + "User: POST-MARK\n\nAssistant: reply claude" + restore.Closing + "next"
	if after.sent[0] != want {
		t.Errorf("after the reopen the CLI got %q, want %q", after.sent[0], want)
	}
}
