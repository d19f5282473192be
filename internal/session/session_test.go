package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/claude"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// fakeBackend records what it was sent and answers with a fixed reply; it
// "establishes" a session unless it fails before the CLI takes the turn.
type fakeBackend struct {
	name     string
	sent     []string
	failOnce bool
	started  bool
}

func (f *fakeBackend) Name() string { return f.name }
func (f *fakeBackend) Turn(_ context.Context, msg claude.Message, h claude.Host) *itemmap.TurnEnd {
	f.sent = append(f.sent, msg.Text)
	if f.failOnce {
		f.failOnce = false
		it := archive.NewItem(archive.TypeFailure)
		it.Set("text", "not installed")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
		return &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	}
	f.started = true
	it := archive.NewItem(archive.TypeAssistant)
	it.Set("text", "reply "+f.name)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "m", SessionID: "s", CostUSD: "0.5",
		Usage:   archive.Usage{Input: "10", Output: "2", ReportedCost: "0.5"},
		History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("reply " + f.name)}}}}
}
func (f *fakeBackend) Interrupt()               {}
func (f *fakeBackend) Close() error             { return nil }
func (f *fakeBackend) Started() bool            { return f.started }
func (f *fakeBackend) Program() (string, error) { return "/usr/bin/" + f.name, nil }
func (f *fakeBackend) Version() string          { return "1.0" }
func (f *fakeBackend) StderrTail() string       { return "" }
func (f *fakeBackend) ExitStatus() string       { return "" }

type nopHost struct{}

func (nopHost) Change(itemmap.Change) {}
func (nopHost) Approve(context.Context, itemmap.Approval) claude.Decision {
	return claude.Decision{}
}

func TestRestoredSession(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	first := &fakeBackend{name: "claude"}
	s := &Session{Pkg: p, Backend: first, Provider: "claude-code"}
	s.Send(context.Background(), "MARK-first", nil, nopHost{})
	if first.sent[0] != "MARK-first" {
		t.Fatalf("a new conversation sent %q", first.sent[0])
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}

	// Reopen: the prefix goes to the CLI until a session is established.
	p, _ = archive.Open(pkg, archive.KindDocument, true)
	state := t.TempDir()
	be := &fakeBackend{name: "claude", failOnce: true}
	s = &Session{Pkg: p, Backend: be, Provider: "claude-code", Restore: restore.Restored(p.Conv.Items), AuditDir: state}
	for _, msg := range []string{"second", "third", "fourth"} {
		if _, err := s.Send(context.Background(), msg, nil, nopHost{}); err != nil {
			t.Fatal(err)
		}
	}
	prefix := "# Conversation so far\nUser: MARK-first\n\nAssistant: reply claude\n\n"
	want := []string{prefix + "second", prefix + "third", "fourth"}
	for i := range want {
		if be.sent[i] != want[i] {
			t.Errorf("turn %d sent %q, want %q", i+1, be.sent[i], want[i])
		}
	}
	// A switch of backend is like a reopen.
	codex := &fakeBackend{name: "codex"}
	s.Backend = codex
	s.Send(context.Background(), "fifth", nil, nopHost{})
	if !strings.HasPrefix(codex.sent[0], "# Conversation so far\n") || !strings.Contains(codex.sent[0], "User: fourth") || !strings.HasSuffix(codex.sent[0], "\n\nfifth") {
		t.Errorf("after the switch: %q", codex.sent[0])
	}

	// The prefix is nowhere but in what the CLI got.
	p.Save(true)
	data, _ := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	path, _ := audit.Path(state, p.Conv.Identity())
	log, _ := os.ReadFile(path)
	for name, b := range map[string][]byte{"conversation": data, "audit log": log} {
		if strings.Contains(string(b), "Conversation so far") || strings.Contains(string(b), "User: MARK-first") {
			t.Errorf("the prefix is in the %s", name)
		}
	}
	if r, err := audit.Verify(path); err != nil || !r.OK() || r.Records != 4 {
		t.Errorf("audit: %+v, %v", r, err)
	}
	recs, _ := audit.Read(path)
	if recs[0]["user"] != "second" || recs[0]["status"] != itemmap.TurnFailed || recs[3]["backend"] != "codex" {
		t.Errorf("audit records: %v / %v", recs[0], recs[3])
	}
	// Usage and cost add up; the provider follows the backend.
	c := p.Conv
	if c.Usage.Input != "40" || c.EstimatedCost.Kind != archive.CostReported || c.EstimatedCost.Dollars != "2" {
		t.Errorf("usage %+v cost %+v", c.Usage, c.EstimatedCost)
	}
}

func TestKeepOffStillAudits(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, false)
	state := t.TempDir()
	s := &Session{Pkg: p, Backend: &fakeBackend{name: "claude"}, AuditDir: state}
	res, err := s.Send(context.Background(), "hello", nil, nopHost{})
	if err != nil || res.AuditErr != nil {
		t.Fatal(err, res.AuditErr)
	}
	p.Save(false)
	if _, err := os.Stat(filepath.Join(pkg, "agent")); !os.IsNotExist(err) {
		t.Error("keep off wrote agent/")
	}
	path, _ := audit.Path(state, p.Conv.Identity())
	if r, err := audit.Verify(path); err != nil || r.Records != 1 {
		t.Errorf("audit with keep off: %+v, %v", r, err)
	}
}

func TestApplyCost(t *testing.T) {
	u := archive.Usage{Input: "1000000", Output: "100000"}
	tests := []struct {
		name  string
		ends  []*itemmap.TurnEnd
		kind  string
		total string
	}{
		{"reported", []*itemmap.TurnEnd{{Status: "completed", Usage: u, CostUSD: "0.5"}, {Status: "completed", Usage: u, CostUSD: "0.25"}}, archive.CostReported, "0.75"},
		{"estimated from the table", []*itemmap.TurnEnd{{Status: "completed", Usage: u, Model: "gpt-5"}}, archive.CostEstimated, "2.25"},
		{"reported then estimated", []*itemmap.TurnEnd{{Status: "completed", Usage: u, CostUSD: "0.5"}, {Status: "completed", Usage: u, Model: "gpt-5"}}, archive.CostEstimated, "2.75"},
		{"a model not in the table", []*itemmap.TurnEnd{{Status: "completed", Usage: u, Model: "gpt-5.5"}}, archive.CostUnknown, ""},
		{"unknown stays unknown", []*itemmap.TurnEnd{{Status: "completed", Usage: u, Model: "gpt-5.5"}, {Status: "completed", Usage: u, CostUSD: "1"}}, archive.CostUnknown, ""},
	}
	for _, tt := range tests {
		c := &archive.Conversation{}
		for _, e := range tt.ends {
			Apply(c, e, "codex")
		}
		if c.EstimatedCost.Kind != tt.kind || string(c.EstimatedCost.Dollars) != tt.total {
			t.Errorf("%s: cost %+v, want %s %s", tt.name, c.EstimatedCost, tt.kind, tt.total)
		}
	}
}
