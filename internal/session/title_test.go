package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/sessionindex"
)

// titledBackend keeps the title it was given (backend.Titler) and the
// one each turn ran with.
type titledBackend struct {
	fakeBackend
	title  string
	titles []string
}

func (b *titledBackend) SetTitle(t string) { b.title = t }
func (b *titledBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	b.titles = append(b.titles, b.title)
	return b.fakeBackend.Turn(ctx, msg, h)
}

func TestTitle(t *testing.T) {
	user := func(text string) archive.Item {
		it := archive.NewItem(archive.TypeUser)
		it.Set("text", text)
		return it
	}
	notice := archive.NewItem(archive.TypeNotice)
	notice.Set("text", "a notice")
	tests := []struct {
		name  string
		items []archive.Item
		want  string
	}{
		{"none", nil, ""},
		{"no message", []archive.Item{notice}, ""},
		{"first message", []archive.Item{notice, user("  Plan the\n\tposter "), user("second")}, "Plan the poster"},
		{"images only", []archive.Item{user(""), user("second")}, "Poster.silverpoint"},
		{"long", []archive.Item{user(strings.Repeat("word ", 40))}, strings.TrimSpace(strings.Repeat("word ", 24)) + "…"},
	}
	for _, tt := range tests {
		if got := Title(tt.items, "/work/Poster.silverpoint"); got != tt.want {
			t.Errorf("%s: Title = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSessionsNamed: each turn's backend is given the conversation's
// title before the turn, its first message; a package opened again has
// its backend named as it opens, before any early start of the CLI.
func TestSessionsNamed(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	first := &titledBackend{fakeBackend: fakeBackend{name: "claude"}}
	s, err := Open(Options{Dir: pkg, Keep: true, Saving: SaveByCaller, Settings: Settings{CLI: "claude"},
		CLIs: rows(func(string, backend.Options) backend.Backend { return first })})
	if err != nil {
		t.Fatal(err)
	}
	if first.title != "" {
		t.Errorf("a new conversation's backend was named %q", first.title)
	}
	for _, text := range []string{"Plan the\nposter", "and the flyer"} {
		if _, err := s.Send(context.Background(), text, nil, nopHost{}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"Plan the poster", "Plan the poster"}; !slices.Equal(first.titles, want) {
		t.Errorf("the turns ran with the titles %q, want %q", first.titles, want)
	}
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	s.Close()

	again := &titledBackend{fakeBackend: fakeBackend{name: "claude"}}
	s, err = Open(Options{Dir: pkg, Keep: true, Saving: SaveByCaller, Settings: Settings{CLI: "claude"},
		CLIs: rows(func(string, backend.Options) backend.Backend { return again })})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again.title != "Plan the poster" {
		t.Errorf("the reopened conversation's backend was named %q as it opened", again.title)
	}
}

// TestTurnsIndexed: with Options.Index, each turn that ran records the
// package in the sessions index: its folder, the first message as its
// title and the CLI session it ran on; a turn that never started, and a
// package that keeps no conversation, are not recorded.
func TestTurnsIndexed(t *testing.T) {
	open := func(keep bool, be backend.Backend) (*Session, *sessionindex.Index, string) {
		pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
		os.Mkdir(pkg, 0o755)
		ix := sessionindex.New(t.TempDir())
		s, err := Open(Options{Dir: pkg, Keep: keep, Cwd: filepath.Dir(pkg), Saving: SaveByCaller, Settings: Settings{CLI: "claude"}, Index: ix,
			CLIs: rows(func(string, backend.Options) backend.Backend { return be })})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, ix, pkg
	}
	s, ix, pkg := open(true, &fakeBackend{name: "claude", failOnce: true})
	if _, err := s.Send(context.Background(), "never taken", nil, nopHost{}); err == nil {
		t.Fatal("the turn that failed before the CLI took it started")
	}
	if _, ok, _ := ix.Get(pkg); ok {
		t.Error("a turn that never started was recorded")
	}
	for _, text := range []string{"Plan the\nposter", "and the flyer"} {
		if _, err := s.Send(context.Background(), text, nil, nopHost{}); err != nil {
			t.Fatal(err)
		}
	}
	e, ok, err := ix.Get(pkg)
	if err != nil || !ok {
		t.Fatalf("the package is not in the index: %v", err)
	}
	if e.Title != "Plan the poster" || e.Cwd != filepath.Dir(pkg) || !slices.Equal(e.Ran, []string{"claude:s"}) {
		t.Errorf("entry %+v", e)
	}

	s, ix, pkg = open(false, &fakeBackend{name: "claude"})
	if _, err := s.Send(context.Background(), "not kept", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ix.Get(pkg); ok {
		t.Error("a conversation the package does not keep was recorded")
	}
}
