package session

import (
	"context"
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

// convWatcher brings what it hears into a session's conversation, as a
// host of the between-turn events does.
type convWatcher struct {
	s    *Session
	seen []itemmap.Change
	ends int
}

func (w *convWatcher) Change(c itemmap.Change) {
	itemmap.ApplyChange(w.s.Pkg.Conv, c)
	w.seen = append(w.seen, c)
}
func (w *convWatcher) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}
func (w *convWatcher) End(end *itemmap.TurnEnd) {
	var items []archive.Item
	for _, c := range w.seen {
		if c.Op == itemmap.OpAdd {
			items = append(items, c.Item)
		}
	}
	if err := w.s.ApplyOwnTurn(end, items); err != nil {
		panic(err)
	}
	w.ends++
}

// TestBetweenTurnsSaved: what a backend tells between turns is not told
// while Send runs, and once brought in with ApplyChange and ApplyOwnTurn it
// is saved with the conversation: the items after the turn's, the report
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
	s := &Session{Pkg: p, Backend: be, Provider: "claude-code", AuditDir: auditDir}
	w := &convWatcher{s: s}
	if !s.Watch(w) {
		t.Fatal("Watch = false for a backend.Background")
	}
	if _, err := s.Send(context.Background(), "look", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(be.heldIn, []int{1}) {
		t.Errorf("holds during Turn = %v, want [1]: Send holds the backend", be.heldIn)
	}
	if w.ends != 1 || len(w.seen) != 2 {
		t.Fatalf("watcher heard %d changes and %d ends", len(w.seen), w.ends)
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
