package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

func agentFile(t *testing.T, pkg, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pkg, archive.AgentDir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return data
}

func sendOK(t *testing.T, s *Session, text string) {
	t.Helper()
	res, err := s.Send(context.Background(), text, nil, nopHost{})
	if err != nil || res.SaveErr != nil {
		t.Fatalf("turn: %v, save %v", err, res.SaveErr)
	}
}

// TestTurnEndAppendsToTheJournal: with SaveAuto a turn's end appends to
// the journal and leaves conversation.json's bytes as they are; the
// package as a crash leaves it opens with every finished turn; the close
// writes conversation.json whole, and a conversation read through the
// journal writes the same bytes as the one in memory.
func TestTurnEndAppendsToTheJournal(t *testing.T) {
	pkg, state := newPackage(t)
	be := &fakeBackend{name: "claude"}
	s := openPolicy(t, pkg, state, SaveAuto, true, be)
	s.quiet = time.Hour // only the close folds
	sendOK(t, s, "first")
	first := agentFile(t, pkg, archive.ConversationFile)
	if first == nil {
		t.Fatal("the first turn's end wrote no conversation.json")
	}
	size := 0
	for n := 2; n <= 4; n++ {
		sendOK(t, s, "turn "+strings.Repeat("x", n))
		if got := agentFile(t, pkg, archive.ConversationFile); !bytes.Equal(got, first) {
			t.Fatalf("turn %d's end rewrote conversation.json", n)
		}
		journal := agentFile(t, pkg, archive.JournalFile)
		if len(journal) <= size {
			t.Fatalf("turn %d's end: the journal is %d bytes, was %d", n, len(journal), size)
		}
		size = len(journal)
		if conv := onDisk(t, pkg); len(conv.Items) != 2*n || len(conv.History) != 2*n {
			t.Fatalf("after turn %d the package holds %d items, %d messages", n, len(conv.Items), len(conv.History))
		}
		if s.Unsaved() {
			t.Fatalf("turn %d: unsaved after its end", n)
		}
	}

	// A crash now leaves the package as it is on disk.
	crashed := filepath.Join(t.TempDir(), "Crashed.silverpoint")
	if err := os.CopyFS(crashed, os.DirFS(pkg)); err != nil {
		t.Fatal(err)
	}
	s2 := openPolicy(t, crashed, state, SaveAuto, true, be)
	var items int
	view(s2, func(conv *archive.Conversation) { items = len(conv.Items) })
	if items != 8 {
		t.Fatalf("reopened after a crash with %d items, want 8", items)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{pkg, crashed} {
		if j := agentFile(t, dir, archive.JournalFile); j != nil {
			t.Errorf("%s: the journal is still there after the close", dir)
		}
	}
	whole, fromJournal := agentFile(t, pkg, archive.ConversationFile), agentFile(t, crashed, archive.ConversationFile)
	if !bytes.Equal(whole, fromJournal) {
		t.Errorf("the conversation read through the journal writes other bytes than the one in memory:\n%s\nwant\n%s", fromJournal, whole)
	}
	if conv := onDisk(t, pkg); len(conv.Items) != 8 || conv.Usage.Input != "40" {
		t.Errorf("after the close the package holds %d items, usage %q", len(conv.Items), conv.Usage.Input)
	}
}

// TestJournalFolds: the whole conversation.json is written again in the
// background once the journal passes its share of it, or after a quiet
// period; the journal then starts again.
func TestJournalFolds(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy SavePolicy
		text   string
		quiet  time.Duration
	}{
		{"size", SaveAuto, strings.Repeat("big ", foldAtLeast/4), time.Hour},
		{"quiet", SaveAuto, "small", time.Millisecond},
		{"recovery copy size", SaveByHost, strings.Repeat("big ", foldAtLeast/4), time.Hour},
		{"recovery copy quiet", SaveByHost, "small", time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, state := newPackage(t)
			s := openPolicy(t, dir, state, c.policy, true, &statusBackend{fakeBackend: fakeBackend{name: "claude"}, status: itemmap.TurnCompleted})
			defer s.Close()
			pkg := dir // the package the journal is in
			if c.policy == SaveByHost {
				abs, _ := filepath.Abs(dir)
				pkg = RecoveryPath(filepath.Join(state, "recovery"), abs)
			}
			folded := make(chan error, 8)
			s.quiet = c.quiet
			s.folded = func(err error) { folded <- err }
			sendOK(t, s, "first")
			first := agentFile(t, pkg, archive.ConversationFile)
			sendOK(t, s, c.text)
			// The fold was started, or is timed, when the turn's end
			// returned.
			s.mu.Lock()
			started := s.folds > 0 || (c.quiet < time.Hour && s.foldTimer != nil)
			s.mu.Unlock()
			if !started {
				t.Fatal("the turn's end started no fold")
			}
			if err := <-folded; err != nil {
				t.Fatal(err)
			}
			if j := agentFile(t, pkg, archive.JournalFile); j != nil {
				t.Error("the journal is still there after the fold")
			}
			folded2 := agentFile(t, pkg, archive.ConversationFile)
			if bytes.Equal(folded2, first) {
				t.Error("the fold left conversation.json as it was")
			}
			p, err := archive.Open(pkg, archive.KindDocument, true)
			if err != nil || len(p.Conv.Items) != 4 || p.Journaled() != 0 {
				t.Fatalf("after the fold the package reads %v, %v", p, err)
			}
			s.quiet = time.Hour
			sendOK(t, s, "third")
			if got := agentFile(t, pkg, archive.ConversationFile); !bytes.Equal(got, folded2) {
				t.Error("the turn after a fold rewrote conversation.json")
			}
			if conv := onDisk(t, pkg); len(conv.Items) != 6 {
				t.Errorf("after the third turn the package holds %d items", len(conv.Items))
			}
		})
	}
}

// TestRecoveryCopyJournal: a host-saved session's recovery copy is written
// whole once, then each turn's end appends to its journal; the copy
// offered after a crash holds every turn.
func TestRecoveryCopyJournal(t *testing.T) {
	pkg, state := newPackage(t)
	s := openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	s.quiet = time.Hour
	abs, _ := filepath.Abs(pkg)
	copyDir := RecoveryPath(filepath.Join(state, "recovery"), abs)
	sendOK(t, s, "first")
	first := agentFile(t, copyDir, archive.ConversationFile)
	if first == nil {
		t.Fatal("no recovery copy after the first turn")
	}
	for n := 2; n <= 3; n++ {
		sendOK(t, s, "again")
		if got := agentFile(t, copyDir, archive.ConversationFile); !bytes.Equal(got, first) {
			t.Fatalf("turn %d's end rewrote the copy's conversation.json", n)
		}
		if agentFile(t, copyDir, archive.JournalFile) == nil {
			t.Fatalf("turn %d's end wrote no journal", n)
		}
	}
	s.Close() // the crash: no save
	s = openPolicy(t, pkg, state, SaveByHost, true, &fakeBackend{name: "claude"})
	defer s.Close()
	off := s.Recovery()
	if off == nil || off.Items != 6 {
		t.Fatalf("offer %+v", off)
	}
	if n, err := s.Recover(); err != nil || n != 6 {
		t.Fatalf("recover: %d, %v", n, err)
	}
}
