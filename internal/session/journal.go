package session

import (
	"fmt"
	"time"

	"spbridge/internal/archive"
)

// SaveAuto's saves of its own (a turn's end, the changes between) append
// to the package's journal (archive.Package.Append): a record of what
// changed, synced, at a cost that follows the change and not the
// conversation. The whole conversation.json is written again (a fold: a
// whole save, which removes the journal) in the background, one at a
// time and outside the session's lock: once the journal is as large as
// conversation.json (and foldAtLeast: the whole writes of a growing
// conversation then add up to about twice its final size), after
// foldQuiet with no save, and at the close. Meanwhile readers apply the journal on
// conversation.json (archive.Open). SaveByHost's recovery copy, a
// package of its own in the state folder, is written the same way, but
// not folded at the close.

// foldAtLeast is the size the journal reaches before its size alone
// calls for a fold; below it only the quiet period and the close do.
const foldAtLeast = 1 << 20

// foldQuiet is the quiet period after which what the journal holds is
// written whole.
const foldQuiet = 2 * time.Second

// foldWhen says when the journal asks for a fold.
type foldWhen int

const (
	foldNone  foldWhen = iota // no journal
	foldLater                 // after the quiet period
	foldNow                   // at once: it passed its share
)

// journaled is the package whose journal the session appends to: the
// package with SaveAuto, the recovery copy with SaveByHost; nil when none.
// saveMu is held.
func (s *Session) journaled() *archive.Package {
	switch s.saving {
	case SaveAuto:
		return s.pkg
	case SaveByHost:
		return s.rec
	}
	return nil
}

// journalBehind says when the journal the session appends to asks for a
// fold. saveMu is held.
func (s *Session) journalBehind() foldWhen {
	p := s.journaled()
	if p == nil || p.Journaled() == 0 {
		return foldNone
	}
	if p.JournalSize() >= max(p.SavedSize(), foldAtLeast) {
		return foldNow
	}
	return foldLater
}

// paceLocked starts the fold the journal asks for: now, or once the
// quiet period passes with no save. s.mu is held.
func (s *Session) paceLocked(when foldWhen) {
	switch when {
	case foldNone:
		if s.foldTimer != nil {
			s.foldTimer.Stop()
		}
	case foldNow:
		s.foldLocked()
	case foldLater:
		quiet := foldQuiet
		if s.quiet > 0 {
			quiet = s.quiet
		}
		if s.foldTimer == nil {
			s.foldTimer = time.AfterFunc(quiet, s.foldQuietly)
		} else {
			s.foldTimer.Reset(quiet)
		}
	}
}

// foldQuietly is the quiet period's end.
func (s *Session) foldQuietly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foldLocked()
}

// foldLocked starts a fold in the background unless one runs or the
// session closed (the close folds). s.mu is held.
func (s *Session) foldLocked() {
	if s.folding || s.closed {
		return
	}
	if s.foldTimer != nil {
		s.foldTimer.Stop()
	}
	s.folding = true
	s.folds++
	s.autoWG.Add(1)
	go s.foldLoop()
}

// foldLoop is the background fold; a failure is reported (SaveFailed),
// and the journal keeps what it holds meanwhile.
func (s *Session) foldLoop() {
	defer s.autoWG.Done()
	err := s.foldSafely()
	s.mu.Lock()
	s.folding = false
	s.mu.Unlock()
	if err != nil {
		s.saveFailed(fmt.Errorf("%w (the journal keeps the conversation; a later save writes it whole)", err))
	}
	if s.folded != nil {
		s.folded(err)
	}
}

func (s *Session) foldSafely() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return s.fold(false)
}

// fold writes the conversation whole (archive.Package.Write) when the
// journal the session appends to holds records: conversation.json then
// holds them and the journal goes. final is the close's, which folds the
// package (SaveAuto) once the session closed; a recovery copy (SaveByHost)
// is left to its readers then. The snapshot is taken under s.mu and
// written without it, among the saves (saveMu).
func (s *Session) fold(final bool) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if p := s.journaled(); p == nil || p.Journaled() == 0 {
		return nil
	}
	if s.saving == SaveByHost {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil
		}
		return s.writeRecoveryLocked(true)
	}
	s.mu.Lock()
	if !s.keep || (s.closed && !final) {
		s.mu.Unlock()
		return nil
	}
	snap := s.pkg.Snapshot(true)
	gen := s.changes
	clear(s.mine)
	s.mu.Unlock()
	if _, err := s.pkg.Write(snap); err != nil {
		return err
	}
	s.mu.Lock()
	s.saved = max(s.saved, gen)
	s.mu.Unlock()
	return nil
}

// stopFoldTimer stops the quiet period's timer (the close folds).
func (s *Session) stopFoldTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.foldTimer != nil {
		s.foldTimer.Stop()
	}
}
