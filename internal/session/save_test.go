package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// statusBackend ends each turn with its status, after a reply.
type statusBackend struct {
	fakeBackend
	status string
}

func (b *statusBackend) Turn(_ context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	b.started = true
	it := archive.NewItem(archive.TypeAssistant)
	it.Set("text", "reply to "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: b.status, History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("reply to " + msg.Text)}}}}
}

// openPolicy opens a package in a temporary folder with the policy, its
// recovery copies kept under state/recovery.
func openPolicy(t *testing.T, pkg, state string, policy SavePolicy, keep bool, be backend.Backend) *Session {
	t.Helper()
	s, err := Open(Options{Dir: pkg, Keep: keep, Saving: policy, RecoveryDir: filepath.Join(state, "recovery"),
		SaveFailed: func(err error) { t.Errorf("save failed: %v", err) },
		CLIs:       rows(func(string, backend.Options) backend.Backend { return be }), Settings: Settings{CLI: "claude"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newPackage(t *testing.T) (pkg, state string) {
	t.Helper()
	dir := t.TempDir()
	pkg = filepath.Join(dir, "Doc.silverpoint")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	return pkg, filepath.Join(dir, "state")
}

// onDisk is the conversation the package holds on disk.
func onDisk(t *testing.T, pkg string) *archive.Conversation {
	t.Helper()
	p, err := archive.Open(pkg, archive.KindDocument, true)
	// A background save may replace the file while it is read (the read
	// says so and keeps nothing): read again, as any reader of a package
	// the session saves would.
	for tries := 0; err != nil && strings.Contains(err.Error(), "changed while read") && tries < 100; tries++ {
		p, err = archive.Open(pkg, archive.KindDocument, true)
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.Unreadable != "" {
		t.Fatalf("unreadable: %s", p.Unreadable)
	}
	return p.Conv
}

// TestAutoSaveAtTurnEnd: with SaveAuto a turn's end is on disk when Send
// returns, however the turn ended, turn after turn.
func TestAutoSaveAtTurnEnd(t *testing.T) {
	for _, status := range []string{itemmap.TurnCompleted, itemmap.TurnFailed, itemmap.TurnInterrupted} {
		t.Run(status, func(t *testing.T) {
			pkg, state := newPackage(t)
			s := openPolicy(t, pkg, state, SaveAuto, true, &statusBackend{fakeBackend: fakeBackend{name: "claude"}, status: status})
			defer s.Close()
			for n := 1; n <= 3; n++ {
				res, err := s.Send(context.Background(), "message", nil, nopHost{})
				if err != nil || res.SaveErr != nil {
					t.Fatalf("turn %d: %v, save %v", n, err, res.SaveErr)
				}
				conv := onDisk(t, pkg)
				if len(conv.Items) != 2*n || len(conv.History) != 2*n {
					t.Fatalf("after turn %d the package holds %d items, %d messages", n, len(conv.Items), len(conv.History))
				}
				if s.Unsaved() {
					t.Fatalf("turn %d: unsaved after its end", n)
				}
			}
		})
	}
}

// TestAutoSaveAfterChanges: with SaveAuto a rating, a card, a queued
// message and New Conversation reach the disk without a save asked for.
func TestAutoSaveAfterChanges(t *testing.T) {
	pkg, state := newPackage(t)
	g := newGate()
	s := openPolicy(t, pkg, state, SaveAuto, true, g)
	saved := make(chan error, 64)
	s.ownSaved = func(err error) { saved <- err }
	f := newFront()
	if _, err := s.Prompt(f, Request{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	<-g.began
	if q, err := s.Queue(f, Request{Text: "b"}); !q || err != nil {
		t.Fatalf("queue: %v %v", q, err)
	}
	// The queued message is on disk while the turn runs.
	for {
		if err := <-saved; err != nil {
			t.Fatal(err)
		}
		if conv := onDisk(t, pkg); len(conv.Queued) == 1 && conv.Queued[0] == "b" {
			break
		}
	}
	g.finish <- struct{}{}
	<-f.ended
	<-g.began
	g.finish <- struct{}{}
	<-f.ended
	s.WaitTurns()
	if conv := onDisk(t, pkg); len(conv.Items) != 4 || len(conv.Queued) != 0 {
		t.Fatalf("after two turns the package holds %d items, queued %v", len(conv.Items), conv.Queued)
	}
	var reply string
	view(s, func(conv *archive.Conversation) { reply = conv.Items[1].ID() })
	// A rating and a card, each saved in the background.
	update(s, func(conv *archive.Conversation) {
		conv.Feedback = map[string]archive.Feedback{reply: {Rating: "good", Reasons: []string{}}}
	})
	waitSaved(t, saved, pkg, func(conv *archive.Conversation) bool { return conv.Feedback[reply].Rating == "good" })
	update(s, func(conv *archive.Conversation) {
		conv.ApprovalCards = map[string]any{reply: map[string]any{"state": "allowed"}}
	})
	waitSaved(t, saved, pkg, func(conv *archive.Conversation) bool { return conv.ApprovalCards[reply] != nil })
	// New Conversation: the package holds none, and the next turn is saved.
	if _, err := s.NewConversation(); err != nil {
		t.Fatal(err)
	}
	if conv := onDisk(t, pkg); !conv.IsEmpty() {
		t.Fatalf("after New Conversation the package holds %d items", len(conv.Items))
	}
	go func() { <-g.began; g.finish <- struct{}{} }()
	if res, err := s.Send(context.Background(), "c", nil, nopHost{}); err != nil || res.SaveErr != nil {
		t.Fatal(err, res.SaveErr)
	}
	if conv := onDisk(t, pkg); len(conv.Items) != 2 {
		t.Fatalf("after New Conversation and a turn the package holds %d items", len(conv.Items))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitSaved waits for background saves until the package on disk holds
// what ok looks for.
func waitSaved(t *testing.T, saved chan error, pkg string, ok func(*archive.Conversation) bool) {
	t.Helper()
	for {
		if err := <-saved; err != nil {
			t.Fatal(err)
		}
		if ok(onDisk(t, pkg)) {
			return
		}
	}
}

// TestAutoSaveKeepOff: with the keep switch off SaveAuto writes nothing.
func TestAutoSaveKeepOff(t *testing.T) {
	pkg, state := newPackage(t)
	s := openPolicy(t, pkg, state, SaveAuto, false, &fakeBackend{name: "claude"})
	s.ownSaved = func(error) { t.Error("a save ran with keep off") }
	if _, err := s.Send(context.Background(), "a", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	update(s, func(conv *archive.Conversation) { conv.Unsent = append(conv.Unsent, "x") })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("keep off wrote the agent folder (%v)", err)
	}
}

// TestAutoSaveFailureKeepsIt: a save at a turn's end that fails says so
// and loses nothing: the conversation stays unsaved and the next save
// writes it.
func TestAutoSaveFailureKeepsIt(t *testing.T) {
	pkg, state := newPackage(t)
	s := openPolicy(t, pkg, state, SaveAuto, true, &fakeBackend{name: "claude"})
	defer s.Close()
	agent := filepath.Join(pkg, archive.AgentDir)
	if err := os.Symlink(t.TempDir(), agent); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	res, err := s.Send(context.Background(), "a", nil, nopHost{})
	if err != nil {
		t.Fatal(err)
	}
	var le *archive.LinkError
	if !errors.As(res.SaveErr, &le) || !s.Unsaved() {
		t.Fatalf("save error %v, unsaved %v", res.SaveErr, s.Unsaved())
	}
	os.Remove(agent)
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if conv := onDisk(t, pkg); len(conv.Items) != 2 {
		t.Fatalf("the package holds %d items", len(conv.Items))
	}
}

// TestHostSavedRecovery: with SaveByHost a turn's end writes a recovery
// copy in the state folder and nothing in the package; the next open
// offers it while the package was not saved since, Recover takes it, and
// the host's save removes it.
func TestHostSavedRecovery(t *testing.T) {
	pkg, state := newPackage(t)
	s := openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	for range 2 {
		if res, err := s.Send(context.Background(), "a", nil, nopHost{}); err != nil || res.SaveErr != nil {
			t.Fatal(err, res.SaveErr)
		}
	}
	if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the turn's end wrote into the host-saved package (%v)", err)
	}
	abs, _ := filepath.Abs(pkg)
	r, err := ReadRecovery(filepath.Join(state, "recovery"), abs)
	if err != nil || r == nil || r.Items != 4 || r.Base != "" {
		t.Fatalf("recovery copy %+v, %v", r, err)
	}
	s.Close() // the crash: no save
	s = openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	off := s.Recovery()
	if off == nil || off.Items != 4 {
		t.Fatalf("offer %+v", off)
	}
	n, err := s.Recover()
	if err != nil || n != 4 || !s.Unsaved() {
		t.Fatalf("recover: %d, %v, unsaved %v", n, err, s.Unsaved())
	}
	if _, err := s.Recover(); !errors.Is(err, ErrNoRecovery) {
		t.Fatalf("recover twice: %v", err)
	}
	// The next turn is told the conversation so far.
	be := s.be.(*fakeBackend)
	if _, err := s.Send(context.Background(), "MARK", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if got := be.sent[len(be.sent)-1]; got == "MARK" {
		t.Fatal("the turn after a recovery was not told the conversation so far")
	}
	if _, err := s.Save(); err != nil { // the host's save
		t.Fatal(err)
	}
	if r, _ := ReadRecovery(filepath.Join(state, "recovery"), abs); r != nil {
		t.Fatal("the host's save left the recovery copy")
	}
	if conv := onDisk(t, pkg); len(conv.Items) != 6 {
		t.Fatalf("the package holds %d items", len(conv.Items))
	}
	s.Close()
	// A copy older than the package (saved elsewhere since) is not offered.
	s = openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	if _, err := s.Send(context.Background(), "b", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	p.Conv.Unsent = []any{"edited elsewhere"}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	s = openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	defer s.Close()
	if off := s.Recovery(); off != nil {
		t.Fatalf("a copy older than the package was offered: %+v", off)
	}
}

// BenchmarkTurnEndSave measures a turn's end with each save policy over a
// conversation of 20,000 items (about 4 MB of conversation.json): SaveAuto
// writes it before Send returns, SaveByHost writes the recovery copy.
func BenchmarkTurnEndSave(b *testing.B) {
	for _, policy := range []struct {
		name string
		p    SavePolicy
	}{{"caller", SaveByCaller}, {"auto", SaveAuto}, {"host", SaveByHost}} {
		b.Run(policy.name, func(b *testing.B) {
			dir := b.TempDir()
			pkg := filepath.Join(dir, "Doc.silverpoint")
			os.Mkdir(pkg, 0o755)
			p, _ := archive.Open(pkg, archive.KindDocument, true)
			for i := range 10000 {
				u := archive.NewItem(archive.TypeUser)
				u.Set("text", "message "+strings.Repeat("x", 100))
				a := archive.NewItem(archive.TypeAssistant)
				a.Set("text", "reply "+strings.Repeat("y", 60)+string(rune('a'+i%26)))
				p.Conv.Items = append(p.Conv.Items, u, a)
			}
			if _, err := p.Save(true); err != nil {
				b.Fatal(err)
			}
			s, err := Open(Options{Dir: pkg, Keep: true, Saving: policy.p, RecoveryDir: filepath.Join(dir, "recovery"),
				CLIs: rows(func(string, backend.Options) backend.Backend { return &fakeBackend{name: "claude"} }), Settings: Settings{CLI: "claude"}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ResetTimer()
			for b.Loop() {
				if res, err := s.Send(context.Background(), "a", nil, nopHost{}); err != nil || res.SaveErr != nil {
					b.Fatal(err, res.SaveErr)
				}
			}
		})
	}
}

// TestHostSavedOwnTurn: the end of a turn the CLI ran on its own between
// turns also writes the recovery copy of a host-saved package.
func TestHostSavedOwnTurn(t *testing.T) {
	pkg, state := newPackage(t)
	s := openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	it := archive.NewItem(archive.TypeAssistant)
	it.Set("text", "the subagent reports")
	w := &convWatcher{}
	s.Watch(w)
	b := &betweenHost{s: s, be: s.be}
	b.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	end := &itemmap.TurnEnd{Status: itemmap.TurnCompleted, History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("the subagent reports")}}}}
	b.End(end)
	if w.ends != 1 || w.errs != nil {
		t.Fatalf("%d ends told, %v", w.ends, w.errs)
	}
	if err := s.Close(); err != nil { // waits for the copy
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(pkg)
	r, err := ReadRecovery(filepath.Join(state, "recovery"), abs)
	if err != nil || r == nil || r.Items != 1 {
		t.Fatalf("recovery copy %+v, %v", r, err)
	}
}

// view runs f on the conversation under the session's lock.
func view(s *Session, f func(conv *archive.Conversation)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.pkg.Conv)
}

// update runs f on the conversation under the session's lock, as a change.
func update(s *Session, f func(conv *archive.Conversation)) { s.change(f) }
