package codex

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// realCodex is a Backend on the real codex against a fake Responses API
// with these replies, in a throwaway folder.
func realCodex(t *testing.T, transport string, replies ...fakeapi.ResponsesReply) (*Backend, *fakeapi.OpenAIServer) {
	t.Helper()
	path := fakeapi.CodexPath(t)
	srv, err := fakeapi.NewOpenAI(replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	b := New(Options{Options: backend.Options{Program: path, Dir: work, Env: srv.CodexEnv(t, root), Grace: 2 * time.Second, IdleTimeout: time.Minute, NewID: itemmap.SequentialIDs()}, Transport: transport})
	t.Cleanup(func() { b.Close() })
	return b, srv
}

// approver allows every request and records the items.
type approver struct {
	mu        sync.Mutex
	items     []archive.Item
	streaming chan struct{} // closed when the assistant's text streams
	once      sync.Once
}

func (a *approver) Change(c itemmap.Change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.Op == itemmap.OpAdd {
		a.items = append(a.items, c.Item)
	}
	if c.Item.Type() == archive.TypeAssistant {
		a.once.Do(func() { close(a.streaming) })
	}
	for i, it := range a.items {
		if it.ID() == c.Item.ID() {
			a.items[i] = c.Item.Clone()
		}
	}
}

func (a *approver) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{Allow: true}
}
