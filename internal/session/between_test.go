package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// bgBackend is a fakeBackend whose CLI goes on after each turn: once the
// turn is released, it tells its watcher a subagent's call, a report and
// the end of the turn it ran for it.
type bgBackend struct {
	fakeBackend
	mu      sync.Mutex
	holds   int
	watcher backend.Between
	heldIn  []int // holds seen by each Turn
}

func (f *bgBackend) Watch(h backend.Between) { f.watcher = h }

func (f *bgBackend) Hold() func() {
	f.mu.Lock()
	f.holds++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.holds--
			last := f.holds == 0
			f.mu.Unlock()
			if last && f.watcher != nil && len(f.sent) > 0 {
				f.between()
			}
		})
	}
}

func (f *bgBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	f.mu.Lock()
	f.heldIn = append(f.heldIn, f.holds)
	f.mu.Unlock()
	return f.fakeBackend.Turn(ctx, msg, h)
}

func (f *bgBackend) between() {
	child := archive.NewItem(archive.TypeTool)
	child.Set("name", "Read")
	child.Set("status", archive.StatusSucceeded)
	f.watcher.Change(itemmap.Change{Op: itemmap.OpAdd, Item: child})
	report := archive.NewItem(archive.TypeAssistant)
	report.Set("text", "the report")
	f.watcher.Change(itemmap.Change{Op: itemmap.OpAdd, Item: report})
	f.watcher.End(&itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "m", CostUSD: "0.25",
		Usage:   archive.Usage{Input: "5", Output: "1", ReportedCost: "0.25"},
		History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("the report")}}}})
}

// convWatcher is a front end that hears what the CLI does between turns.
type convWatcher struct {
	seen []itemmap.Change
	ends int
	errs []error
}

func (w *convWatcher) ItemChanged(c itemmap.Change)         { w.seen = append(w.seen, c) }
func (w *convWatcher) Ask(context.Context, Question) Answer { return Answer{} }
func (w *convWatcher) Granted(itemmap.Approval, bool)       {}
func (w *convWatcher) OwnTurnEnded(end *itemmap.TurnEnd, auditErr error) {
	if auditErr != nil {
		w.errs = append(w.errs, auditErr)
	}
	w.ends++
}
func (w *convWatcher) BetweenFailed(why string) { w.errs = append(w.errs, errors.New(why)) }

// TestBetweenTurnsSaved: what a backend tells between turns is not told
// while Send runs, and the session (Watch) brings it in: it is saved with the conversation: the items after the turn's, the report
// in the history after the turn's, its usage and cost in the totals.
func TestBetweenTurnsSaved(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	be := &bgBackend{fakeBackend: fakeBackend{name: "claude"}}
	auditDir := t.TempDir()
	s := &Session{pkg: p, be: be, provider: "claude-code", auditDir: auditDir}
	w := &convWatcher{}
	if !s.Watch(w) {
		t.Fatal("Watch = false for a backend.Background")
	}
	if _, err := s.Send(context.Background(), "look", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(be.heldIn, []int{1}) {
		t.Errorf("holds during Turn = %v, want [1]: Send holds the backend", be.heldIn)
	}
	if w.ends != 1 || len(w.seen) != 2 || w.errs != nil {
		t.Fatalf("watcher heard %d changes and %d ends, %v", len(w.seen), w.ends, w.errs)
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	back, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	conv := back.Conv
	var items []string
	for _, it := range conv.Items {
		items = append(items, it.Type()+":"+it.String("text")+it.String("name"))
	}
	if want := []string{"user:look", "assistant:reply claude", "tool:Read", "assistant:the report"}; !slices.Equal(items, want) {
		t.Errorf("saved items = %q, want %q", items, want)
	}
	var said []string
	for _, m := range conv.History {
		said = append(said, m.Role+":"+m.Content[0].String("text"))
	}
	if want := []string{"user:look", "assistant:reply claude", "assistant:the report"}; !slices.Equal(said, want) {
		t.Errorf("saved history = %q, want %q", said, want)
	}
	if conv.Usage.Input != "15" || conv.EstimatedCost.Dollars != "0.75" || conv.EstimatedCost.Kind != archive.CostReported {
		t.Errorf("usage %+v, cost %+v: the report's turn is not in the totals", conv.Usage, conv.EstimatedCost)
	}
	// Both turns are in the audit log: the user's, then the CLI's own with
	// what it showed between turns.
	path, err := audit.Path(auditDir, conv.Identity())
	if err != nil {
		t.Fatal(err)
	}
	records, err := audit.Read(path)
	if err != nil || len(records) != 2 {
		t.Fatalf("%d audit records, %v; want 2", len(records), err)
	}
	own := records[1]
	if fmt.Sprint(own["origin"]) != OriginCLI || fmt.Sprint(own["user"]) != "" || len(own["items"].([]any)) != 2 || fmt.Sprint(own["costUSD"]) != "0.25" || records[0]["origin"] != nil {
		t.Errorf("audit records: %v\n%v", records[0], own)
	}
}

// TestBetweenTurnsNewBackend: once New Conversation gave the session
// another backend, what the old one tells between turns is dropped, and
// the new one is heard by the same front end.
func TestBetweenTurnsNewBackend(t *testing.T) {
	pkg, state := newPackage(t)
	old := &bgBackend{fakeBackend: fakeBackend{name: "claude"}}
	fresh := &bgBackend{fakeBackend: fakeBackend{name: "claude"}}
	next := []backend.Backend{old, fresh} // the open's, then New Conversation's
	s, err := Open(Options{Dir: pkg, Keep: true, Saving: SaveByCaller, RecoveryDir: filepath.Join(state, "recovery"), Settings: Settings{CLI: "claude"},
		CLIs: rows(func(string, backend.Options) backend.Backend { be := next[0]; next = next[1:]; return be })})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := &convWatcher{}
	s.Watch(w)
	oldHost := old.watcher
	if _, err := s.NewConversation(); err != nil {
		t.Fatal(err)
	}
	if fresh.watcher == nil {
		t.Fatal("the new backend is not watched")
	}
	old.watcher = oldHost
	old.sent = []string{"x"}
	old.between()
	if len(w.seen) != 0 || w.ends != 0 || s.ItemCount() != 0 {
		t.Errorf("the old backend's work was taken: %d changes, %d ends, %d items", len(w.seen), w.ends, s.ItemCount())
	}
	fresh.sent = []string{"x"}
	fresh.between()
	if len(w.seen) != 2 || w.ends != 1 || s.ItemCount() != 2 {
		t.Errorf("the new backend's work: %d changes, %d ends, %d items", len(w.seen), w.ends, s.ItemCount())
	}
}

// TestBetweenTurnsPanic: a change the session cannot bring in (a zero
// item) fails the between-turn host: the front end is told once, nothing
// more is taken, and the session's lock is free.
func TestBetweenTurnsPanic(t *testing.T) {
	pkg, state := newPackage(t)
	be := &bgBackend{fakeBackend: fakeBackend{name: "claude"}}
	s := openPolicy(t, pkg, state, SaveByCaller, true, be)
	defer s.Close()
	var panicked []string
	s.panicked = func(where string, v any, stack []byte) { panicked = append(panicked, where) }
	w := &convWatcher{}
	s.Watch(w)
	be.watcher.Change(itemmap.Change{Op: itemmap.OpAdd, Item: archive.Item{}})
	if len(w.errs) != 1 || len(panicked) != 1 {
		t.Fatalf("front end told %v, Panicked %v", w.errs, panicked)
	}
	be.sent = []string{"x"}
	be.between()
	if len(w.seen) != 0 || w.ends != 0 || len(w.errs) != 1 {
		t.Errorf("after the failure: %d changes, %d ends, %v", len(w.seen), w.ends, w.errs)
	}
	if n := s.ItemCount(); n != 0 { // the lock is free
		t.Errorf("%d items", n)
	}
}
