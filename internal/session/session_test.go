package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// fakeBackend records what it was sent and answers with a fixed reply; it
// "establishes" a session unless it fails before the CLI takes the turn.
type fakeBackend struct {
	name     string
	sent     []string // what the CLI got (Context and text)
	texts    []string // the messages' Text: the user's words
	failOnce bool     // the next turn fails before the CLI takes it
	noEnd    bool     // turns end without a TurnEnd
	started  bool
}

func (f *fakeBackend) Name() string { return f.name }
func (f *fakeBackend) Turn(_ context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	f.sent, f.texts = append(f.sent, msg.CLIText()), append(f.texts, msg.Text)
	if f.failOnce {
		f.failOnce = false
		return backend.FailBeforeStart(nil, h, "not installed", "")
	}
	if f.noEnd {
		return nil
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

func (nopHost) Change(itemmap.Change)                {}
func (nopHost) Ask(context.Context, Question) Answer { return Answer{} }
func (nopHost) Granted(itemmap.Approval, bool)       {}

func TestRestoredSession(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	first := &fakeBackend{name: "claude"}
	s := &Session{pkg: p, be: first, provider: "claude-code"}
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
	s = &Session{pkg: p, be: be, provider: "claude-code", restore: restore.Restored(p.Conv.Items), auditDir: state}
	for i, msg := range []string{"second", "third", "fourth"} {
		_, err := s.Send(context.Background(), msg, nil, nopHost{})
		if i == 0 && !errors.Is(err, ErrNotStarted) {
			t.Fatalf("a turn that failed before the CLI took it: %v, want ErrNotStarted", err)
		}
		if i > 0 && err != nil {
			t.Fatal(err)
		}
	}
	prefix := "# Conversation so far\nUser: MARK-first\n\nAssistant: reply claude" + restore.Closing
	want := []string{prefix + "second", prefix + "third", "fourth"}
	for i := range want {
		if be.sent[i] != want[i] {
			t.Errorf("turn %d sent %q, want %q", i+1, be.sent[i], want[i])
		}
	}
	// A switch of backend is like a reopen.
	codex := &fakeBackend{name: "codex"}
	s.be = codex
	s.Send(context.Background(), "fifth", nil, nopHost{})
	if !strings.HasPrefix(codex.sent[0], "# Conversation so far\n") || !strings.Contains(codex.sent[0], "User: fourth") || !strings.HasSuffix(codex.sent[0], "\n\nfifth") {
		t.Errorf("after the switch: %q", codex.sent[0])
	}
	// The prefix travels apart from the user's words: a backend never
	// finds it in the message's text.
	if texts := append(be.texts, codex.texts...); !slices.Equal(texts, []string{"second", "third", "fourth", "fifth"}) {
		t.Errorf("the messages' texts = %q, want the user's words alone", texts)
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
	if r, err := audit.Verify(path); err != nil || !r.OK() || r.Records != 3 {
		t.Errorf("audit: %+v, %v", r, err)
	}
	recs, _ := audit.Read(path)
	if recs[0]["user"] != "third" || recs[0]["status"] != itemmap.TurnCompleted || recs[2]["backend"] != "codex" {
		t.Errorf("audit records: %v / %v", recs[0], recs[2])
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
	s := &Session{pkg: p, be: &fakeBackend{name: "claude"}, auditDir: state}
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

// recHost records the changes it is told about.
type recHost struct{ changes []itemmap.Change }

func (h *recHost) Change(c itemmap.Change)              { h.changes = append(h.changes, c) }
func (h *recHost) Ask(context.Context, Question) Answer { return Answer{} }
func (h *recHost) Granted(itemmap.Approval, bool)       {}

// detailBackend fails every turn before the CLI takes it, with a detail.
type detailBackend struct{ fakeBackend }

func (f *detailBackend) Turn(_ context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	f.sent, f.texts = append(f.sent, msg.CLIText()), append(f.texts, msg.Text)
	return backend.FailBeforeStart(nil, h, "Claude Code exited before the turn ended.", "line 1\nerror: unknown option --bogus")
}

// TestNotStartedChangesNothing: a turn that failed before the CLI took the
// message leaves a newer-format agent folder byte-identical, adds nothing to
// the conversation or the audit log, withdraws the user's item from the host
// and says why.
func TestNotStartedChangesNothing(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	agent := filepath.Join(pkg, "agent")
	os.MkdirAll(agent, 0o755)
	v2 := []byte(`{"formatVersion" : 2, "items": [], "newField": {"x": 1}}`)
	os.WriteFile(filepath.Join(agent, "conversation.json"), v2, 0o644)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil || p.Unreadable == "" {
		t.Fatalf("open: %v, unreadable %q", err, p.Unreadable)
	}
	before := slices.Clone(p.Conv.Items)
	state := t.TempDir()
	be := &detailBackend{fakeBackend{name: "claude"}}
	s := &Session{pkg: p, be: be, auditDir: state, cwd: pkg}
	h := &recHost{}
	res, err := s.Send(context.Background(), "hello", nil, h)
	if !errors.Is(err, ErrNotStarted) || res != nil {
		t.Fatalf("Send = %v, %v; want ErrNotStarted", res, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "Claude Code exited before the turn ended.") || !strings.Contains(msg, "unknown option --bogus") {
		t.Errorf("the error does not say why: %q", msg)
	}
	if len(be.sent) != 1 {
		t.Fatalf("the backend was asked %d times", len(be.sent))
	}
	if !slices.Equal(p.Conv.Items, before) || len(p.Conv.History) != 0 {
		t.Errorf("the conversation changed: %d items (want %d), %d history messages", len(p.Conv.Items), len(before), len(p.Conv.History))
	}
	var ops []string
	for _, c := range h.changes {
		ops = append(ops, c.Op.String()+" "+c.Item.Type())
	}
	if want := []string{"add user", "add failure", "remove user"}; !slices.Equal(ops, want) {
		t.Errorf("the host was told %q, want %q", ops, want)
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("the state folder holds %d entries: a turn that never started was audited", len(entries))
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(agent, "conversation.json")); !bytes.Equal(got, v2) {
		t.Errorf("the newer-format conversation was replaced:\n%s", got)
	}
}

// TestNotStartedPreflight: a working folder that is not there, or a
// program variable that names nothing runnable, stops the turn before the
// backend is asked, and the error names the cause.
func TestNotStartedPreflight(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	fake := &fakeBackend{name: "claude"}
	s := &Session{pkg: p, be: fake, cwd: missing}
	h := &recHost{}
	_, err := s.Send(context.Background(), "hello", nil, h)
	if !errors.Is(err, ErrNotStarted) || !strings.Contains(err.Error(), "the working folder "+missing+" does not exist") {
		t.Errorf("missing cwd: %v", err)
	}
	if len(fake.sent) != 0 || len(h.changes) != 0 || len(p.Conv.Items) != 0 {
		t.Errorf("missing cwd: backend asked %d times, host told %d changes, %d items", len(fake.sent), len(h.changes), len(p.Conv.Items))
	}

	t.Setenv("SPBRIDGE_CLAUDE", filepath.Join(missing, "claude"))
	s = &Session{pkg: p, be: claude.New(claude.Options{}), cwd: pkg}
	_, err = s.Send(context.Background(), "hello", nil, h)
	if !errors.Is(err, ErrNotStarted) || !strings.Contains(err.Error(), "SPBRIDGE_CLAUDE is set to ") {
		t.Errorf("bad SPBRIDGE_CLAUDE: %v", err)
	}
	if len(h.changes) != 0 || len(p.Conv.Items) != 0 {
		t.Errorf("bad SPBRIDGE_CLAUDE: host told %d changes, %d items", len(h.changes), len(p.Conv.Items))
	}
}

// TestNoTurnEnd: a backend that returns no TurnEnd gives a failed turn with
// a failure item; the user's message is kept and audited.
func TestNoTurnEnd(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	state := t.TempDir()
	s := &Session{pkg: p, be: &fakeBackend{name: "claude", noEnd: true}, auditDir: state}
	h := &recHost{}
	res, err := s.Send(context.Background(), "hello", nil, h)
	if err != nil {
		t.Fatal(err)
	}
	if res.End == nil || res.End.Status != itemmap.TurnFailed {
		t.Fatalf("end = %+v, want failed", res.End)
	}
	items := p.Conv.Items
	if len(items) != 2 || items[0].Type() != archive.TypeUser || items[1].Type() != archive.TypeFailure || items[1].String("text") == "" {
		t.Errorf("items = %v", items)
	}
	if len(p.Conv.History) != 1 || p.Conv.History[0].Role != "user" {
		t.Errorf("history = %v", p.Conv.History)
	}
	if n := len(h.changes); n != 2 || h.changes[1].Item.Type() != archive.TypeFailure {
		t.Errorf("the host was told %d changes", n)
	}
	path, _ := audit.Path(state, p.Conv.Identity())
	if recs, err := audit.Read(path); err != nil || len(recs) != 1 || recs[0]["status"] != itemmap.TurnFailed {
		t.Errorf("audit: %v, %v", recs, err)
	}
}

// TestAuditQueue checks that with an AuditQueue the turn's record is the
// one Send would write, on disk once the queue is flushed, even when the
// items changed after the turn ended.
func TestAuditQueue(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, false)
	state := t.TempDir()
	q := audit.NewQueue(func(path string, err error) { t.Errorf("audit %s: %v", path, err) })
	s := &Session{pkg: p, be: &fakeBackend{name: "claude"}, auditDir: state, auditQueue: q}
	for _, msg := range []string{"one", "two"} {
		res, err := s.Send(context.Background(), msg, nil, nopHost{})
		if err != nil || res.AuditErr != nil {
			t.Fatal(err, res.AuditErr)
		}
	}
	last := p.Conv.Items[len(p.Conv.Items)-1]
	text := last.String("text")
	last.Set("text", "changed after the turn")
	q.Flush()
	path, _ := audit.Path(state, p.Conv.Identity())
	if r, err := audit.Verify(path); err != nil || !r.OK() || r.Records != 2 {
		t.Fatalf("audit: %+v, %v", r, err)
	}
	recs, _ := audit.Read(path)
	items, _ := recs[1]["items"].([]any)
	got, _ := items[len(items)-1].(map[string]any)
	if recs[0]["user"] != "one" || recs[1]["user"] != "two" || got["text"] != text {
		t.Errorf("records: %v, %v; last item %v, want text %q", recs[0]["user"], recs[1]["user"], got, text)
	}
}

// removingBackend removes the conversation's first item during a turn that
// then fails before the CLI takes it.
type removingBackend struct {
	fakeBackend
	remove archive.Item
}

func (f *removingBackend) Turn(_ context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	if !f.remove.IsZero() {
		h.Change(itemmap.Change{Op: itemmap.OpRemove, Item: f.remove})
	}
	return backend.FailBeforeStart(nil, h, "Claude Code exited before the turn ended.", "")
}

// TestNotStartedPutsItemsBack: a turn that never started leaves the items
// as they were, also when it removed one of them on the way.
func TestNotStartedPutsItemsBack(t *testing.T) {
	for _, remove := range []bool{false, true} {
		pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
		os.MkdirAll(pkg, 0o755)
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{archive.TypeNotice, archive.TypeAssistant, archive.TypeNotice} {
			p.Conv.Items = append(p.Conv.Items, archive.NewItem(typ))
		}
		before := slices.Clone(p.Conv.Items)
		be := &removingBackend{fakeBackend: fakeBackend{name: "claude"}}
		if remove {
			be.remove = before[0]
		}
		if _, err := (&Session{pkg: p, be: be}).Send(context.Background(), "hello", nil, &recHost{}); !errors.Is(err, ErrNotStarted) {
			t.Fatalf("Send: %v, want ErrNotStarted", err)
		}
		if !slices.Equal(p.Conv.Items, before) {
			t.Errorf("remove %v: items %v after a turn that never started, want %v", remove, p.Conv.Items, before)
		}
		p.Conv.Items = append(p.Conv.Items, archive.NewItem(archive.TypeUser))
		if !slices.Equal(p.Conv.Items[:3], before) {
			t.Errorf("remove %v: an item appended after the turn changed the ones before", remove)
		}
	}
}

// rows are the CLIs' rows with their backends made by newBackend, which
// is given the row's name and the settings.
func rows(newBackend func(name string, o backend.Options) backend.Backend) []backend.Plugin {
	out := slices.Clone(clis.All)
	for i := range out {
		name := out[i].Name
		out[i].New = func(o backend.Options, _ map[string]string) backend.Backend { return newBackend(name, o) }
	}
	return out
}
