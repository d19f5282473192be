package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/codex"
)

// ctlBackend is a fakeBackend with controls: the modes default and plan,
// the models default, opus (efforts low and high) and haiku (none).
type ctlBackend struct {
	*fakeBackend
	opts backend.Options

	mu      sync.Mutex
	mode    string
	model   string
	efforts []string // every SetEffort, in order
}

func newCtl(name string, o backend.Options) *ctlBackend {
	b := &ctlBackend{fakeBackend: &fakeBackend{name: name}, opts: o, mode: "default", model: o.Model}
	if o.Mode != "" {
		b.mode = o.Mode
	}
	return b
}

func (b *ctlBackend) Modes() []backend.Mode {
	return []backend.Mode{{ID: "default", Name: "Default"}, {ID: "plan", Name: "Plan"}}
}
func (b *ctlBackend) Mode() string { b.mu.Lock(); defer b.mu.Unlock(); return b.mode }
func (b *ctlBackend) SetMode(_ context.Context, id string) error {
	if !slices.ContainsFunc(b.Modes(), func(m backend.Mode) bool { return m.ID == id }) {
		return backend.ErrUnknownMode
	}
	b.mu.Lock()
	b.mode = id
	b.mu.Unlock()
	b.opts.Events.ModeChanged(id)
	return nil
}
func (b *ctlBackend) Commands() []backend.Command {
	return []backend.Command{{Name: "review"}}
}
func (b *ctlBackend) Prepare(context.Context) error { return nil }
func (b *ctlBackend) Models() []backend.Model {
	return []backend.Model{{ID: "default"}, {ID: "opus", Efforts: []string{"low", "high"}}, {ID: "haiku"}}
}
func (b *ctlBackend) Effort() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.efforts) == 0 {
		return ""
	}
	return b.efforts[len(b.efforts)-1]
}
func (b *ctlBackend) SetEffort(e string) {
	b.mu.Lock()
	b.efforts = append(b.efforts, e)
	b.mu.Unlock()
}
func (b *ctlBackend) SetModel(m string) { b.mu.Lock(); b.model = m; b.mu.Unlock() }
func (b *ctlBackend) state() (model, mode string, efforts []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.model, b.mode, slices.Clone(b.efforts)
}

// openCtl opens pkg with set, on rows whose backends are ctlBackends; it
// returns the session, the backends as they are made, and what Changed
// was told.
func openCtl(t *testing.T, pkg string, set Settings) (*Session, func() []*ctlBackend, func() []What) {
	t.Helper()
	var mu sync.Mutex
	var made []*ctlBackend
	var told []What
	s, err := Open(Options{Dir: pkg, Keep: true, Settings: set,
		CLIs: rows(func(name string, o backend.Options) backend.Backend {
			b := newCtl(name, o)
			mu.Lock()
			made = append(made, b)
			mu.Unlock()
			return b
		}),
		Changed: func(w What) { mu.Lock(); told = append(told, w); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, func() []*ctlBackend { mu.Lock(); defer mu.Unlock(); return slices.Clone(made) },
		func() []What { mu.Lock(); defer mu.Unlock(); return slices.Clone(told) }
}

// TestCarryOver: the model, effort and mode chosen in a session are the
// next backend's at New Conversation (its options, and SetEffort); an
// effort the new model does not take goes back to the CLI's own; what the
// old backend tells after it was replaced is dropped.
func TestCarryOver(t *testing.T) {
	pkg, _ := newPackage(t)
	s, made, told := openCtl(t, pkg, Settings{CLI: "claude", Model: "opus"})
	if list, current := s.Models(); current != "opus" || len(list) != 3 {
		t.Fatalf("Models %v %q", list, current)
	}
	if err := s.SetEffort("max"); !errors.Is(err, ErrUnknownEffort) {
		t.Errorf("an effort opus does not take: %v", err)
	}
	if err := s.SetEffort("high"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(context.Background(), "plan"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(context.Background(), "yolo"); !errors.Is(err, backend.ErrUnknownMode) {
		t.Errorf("an unknown mode: %v", err)
	}
	if got := told(); !slices.Equal(got, []What{ModeChanged}) {
		t.Errorf("Changed was told %v, want the mode once", got)
	}
	if _, err := s.NewConversation(); err != nil {
		t.Fatal(err)
	}
	bs := made()
	if len(bs) != 2 {
		t.Fatalf("%d backends made, want 2", len(bs))
	}
	next := bs[1]
	if model, mode, efforts := next.state(); model != "opus" || mode != "plan" || !slices.Equal(efforts, []string{"high"}) {
		t.Errorf("the new conversation's backend: model %q, mode %q, efforts %q; want opus, plan, high", model, mode, efforts)
	}
	if levels, effort := s.Efforts(); effort != "high" || !slices.Equal(levels, []string{"low", "high"}) {
		t.Errorf("Efforts %v %q", levels, effort)
	}
	if _, mode := s.Modes(); mode != "plan" {
		t.Errorf("mode %q", mode)
	}
	// The old backend's word counts no more.
	bs[0].opts.Events.ModeChanged("default")
	if _, mode := s.Modes(); mode != "plan" {
		t.Errorf("the old backend changed the mode to %q", mode)
	}
	// A model without efforts: the effort goes back to the CLI's own, and
	// the next new conversation's backend is asked for none.
	s.SetModel("haiku")
	if model, _, efforts := next.state(); model != "haiku" || !slices.Equal(efforts, []string{"high", ""}) {
		t.Errorf("after SetModel haiku: model %q, efforts %q", model, efforts)
	}
	if err := s.SetEffort("low"); !errors.Is(err, ErrNoEffort) {
		t.Errorf("an effort on a model without: %v", err)
	}
	if _, err := s.NewConversation(); err != nil {
		t.Fatal(err)
	}
	if model, mode, efforts := made()[2].state(); model != "haiku" || mode != "plan" || len(efforts) != 0 {
		t.Errorf("the third backend: model %q, mode %q, efforts %q", model, mode, efforts)
	}
}

// TestReopenRule: a session whose front end names no CLI goes on with the
// one its conversation last ran on, else the default; a CLI named wins;
// a CLI session to resume is resumed only on its own CLI (another is told
// the conversation so far).
func TestReopenRule(t *testing.T) {
	for _, c := range []struct {
		provider, named, resumeCLI string
		want                       string
		resumed                    bool
	}{
		{provider: codex.Provider, want: "codex"},
		{provider: "claude-code", want: "claude"},
		{provider: "", want: "claude"},
		{provider: codex.Provider, named: "claude", want: "claude"},
		{provider: codex.Provider, resumeCLI: "codex", want: "codex", resumed: true},
		{provider: codex.Provider, named: "claude", resumeCLI: "codex", want: "claude"},
	} {
		pkg, _ := newPackage(t)
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			t.Fatal(err)
		}
		p.Conv.Items = append(p.Conv.Items, userItem("earlier words"))
		p.Conv.Provider = c.provider
		if _, err := p.Save(true); err != nil {
			t.Fatal(err)
		}
		s, made, _ := openCtl(t, pkg, Settings{CLI: c.named, DefaultCLI: "claude", Resume: "cli-session", ResumeCLI: c.resumeCLI})
		be := made()[0]
		if s.CLI() != c.want || be.Name() != c.want {
			t.Errorf("%+v: the session runs on %q (backend %q), want %q", c, s.CLI(), be.Name(), c.want)
		}
		if got := be.opts.Resume != ""; got != c.resumed {
			t.Errorf("%+v: resumed %q", c, be.opts.Resume)
		}
		if prefix := s.restore.Context(c.want, p.Conv.Items, nil); (prefix == "") != c.resumed {
			t.Errorf("%+v: the first message's context would be %q", c, prefix)
		}
		s.Close()
	}
	// A CLI this spbridge does not have.
	pkg, _ := newPackage(t)
	if _, err := Open(Options{Dir: pkg, Settings: Settings{CLI: "gemini"}}); err == nil {
		t.Error("a session on an unknown CLI opened")
	}
	if _, err := os.Stat(filepath.Join(pkg, "agent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed open wrote the package: %v", err)
	}
}

// TestSwitchCLI: a switch of CLI inside one open makes a backend of the
// other CLI's row with that CLI's own model, effort and mode, tells the
// front end, keeps the conversation, and tells the new CLI the
// conversation so far in its first turn, as after a reopen; the old
// backend is closed and its word counts no more.
func TestSwitchCLI(t *testing.T) {
	pkg, _ := newPackage(t)
	s, made, told := openCtl(t, pkg, Settings{CLI: "claude", Model: "opus", Mode: "plan"})
	if _, err := s.Send(context.Background(), "first words", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SwitchCLI("gemini"); !errors.Is(err, ErrUnknownCLI) {
		t.Errorf("a CLI the session does not have: %v", err)
	}
	if err := s.SwitchCLI("claude"); err != nil || len(made()) != 1 {
		t.Errorf("a switch to the CLI it runs on: %v, %d backends", err, len(made()))
	}
	if err := s.SwitchCLI("codex"); err != nil {
		t.Fatal(err)
	}
	bs := made()
	if len(bs) != 2 || bs[1].Name() != "codex" || s.CLI() != "codex" {
		t.Fatalf("after the switch: %d backends, session on %q", len(bs), s.CLI())
	}
	if model, mode, efforts := bs[1].state(); model != "" || mode != "default" || len(efforts) != 0 {
		t.Errorf("the new CLI's backend: model %q, mode %q, efforts %q; want its own", model, mode, efforts)
	}
	if _, current := s.Models(); current != DefaultModel {
		t.Errorf("the model after the switch: %q", current)
	}
	for _, w := range []What{ModelsChanged, ModeChanged, CommandsChanged} {
		if !slices.Contains(told(), w) {
			t.Errorf("the front end was not told %v: %v", w, told())
		}
	}
	if _, err := s.Send(context.Background(), "second words", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	sent := bs[1].sent
	if len(sent) != 1 || !strings.Contains(sent[0], "# Conversation so far") || !strings.Contains(sent[0], "first words") ||
		!strings.Contains(sent[0], "reply claude") || !strings.HasSuffix(sent[0], "second words") {
		t.Errorf("the new CLI's first message: %q", sent)
	}
	if texts := bs[1].texts; len(texts) != 1 || texts[0] != "second words" {
		t.Errorf("the user's words: %q", texts)
	}
	if n := len(bs[0].sent); n != 1 {
		t.Errorf("the old CLI got %d messages, want 1", n)
	}
	if got := s.ItemCount(); got != 4 {
		t.Errorf("%d items, want the 4 of both turns", got)
	}
	if _, err := s.Send(context.Background(), "third words", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if sent := bs[1].sent; len(sent) != 2 || sent[1] != "third words" {
		t.Errorf("the next turn on the new CLI: %q", sent)
	}
	// The old backend's word counts no more.
	bs[0].opts.Events.ModeChanged("plan")
	if _, mode := s.Modes(); mode != "default" {
		t.Errorf("the old backend changed the mode to %q", mode)
	}
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Conv.Provider != codex.Provider {
		t.Errorf("the conversation's provider after a turn on codex: %q", p.Conv.Provider)
	}
}

// TestSameModelsTellNothing: a CLI that lists the models the session
// already offers (the cache's list, or its backend's own) changes nothing
// the front end sees, so it is not told; another list is told.
func TestSameModelsTellNothing(t *testing.T) {
	pkg, _ := newPackage(t)
	s, made, told := openCtl(t, pkg, Settings{CLI: "claude"})
	count := func() int {
		n := 0
		for _, w := range told() {
			if w == ModelsChanged {
				n++
			}
		}
		return n
	}
	b := made()[0]
	before := count()
	b.opts.Events.ModelsChanged(b.Models())
	if got := count(); got != before {
		t.Errorf("the same list was told (%d times, %d before)", got, before)
	}
	if !s.ModelsSeen() {
		t.Error("the CLI's list, the same as the offered one, was not seen")
	}
	other := append(b.Models(), backend.Model{ID: "sonnet"})
	b.opts.Events.ModelsChanged(other)
	if got := count(); got != before+1 {
		t.Errorf("another list was told %d times, want once", got-before)
	}
	if models, _ := s.Models(); len(models) != len(other) {
		t.Errorf("the session offers %d models, want %d", len(models), len(other))
	}
}
