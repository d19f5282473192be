package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
)

// TestOpenImport: Open with a conversation to import saves it into the
// empty package before the backend is made, calls Imported once, and the
// session restores it as one read from disk; a package that holds a
// conversation already is refused with ErrHoldsConversation and left as
// it was; Remove removes a package no process holds, and refuses one an
// open session holds.
func TestOpenImport(t *testing.T) {
	dir := t.TempDir()
	conv := &archive.Conversation{}
	conv.Items = append(conv.Items, userItem("earlier words"))
	imported := 0
	var savedSeen bool
	open := func(c *archive.Conversation) (*Session, error) {
		return Open(Options{Dir: dir, Keep: true, Import: c, Imported: func() { imported++ },
			CLIs: rows(func(string, backend.Options) backend.Backend {
				_, err := os.Stat(filepath.Join(dir, "agent", "conversation.json"))
				savedSeen = err == nil
				return &fakeBackend{name: "claude"}
			}), Settings: Settings{CLI: "claude"}})
	}
	s, err := open(conv)
	if err != nil {
		t.Fatal(err)
	}
	if imported != 1 || !savedSeen {
		t.Errorf("Imported called %d times; saved before the backend: %v", imported, savedSeen)
	}
	if s.restore == nil {
		t.Error("the imported conversation is not restored like one read from disk")
	}
	if err := Remove(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("Remove of an open package: %v", err)
	}
	s.Close()
	p, err := archive.Open(dir, archive.KindDocument, true)
	if err != nil || len(p.Conv.Items) != 1 || p.Conv.Items[0].String("text") != "earlier words" {
		t.Fatalf("saved: %v %v", err, p)
	}
	again := &archive.Conversation{}
	again.Items = append(again.Items, userItem("other words"))
	if _, err := open(again); !errors.Is(err, ErrHoldsConversation) {
		t.Errorf("a second import: %v", err)
	}
	if p, _ := archive.Open(dir, archive.KindDocument, true); len(p.Conv.Items) != 1 || p.Conv.Items[0].String("text") != "earlier words" || imported != 1 {
		t.Errorf("the refused import changed the package (imported %d)", imported)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the package is still there: %v", err)
	}
}

func userItem(text string) archive.Item {
	it := archive.NewItem(archive.TypeUser)
	it.Set("text", text)
	return it
}
