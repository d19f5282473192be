package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/regfile"
	"spbridge/internal/restore"
	"spbridge/internal/statefile"
)

// SavePolicy says who writes a session's conversation into its package.
type SavePolicy int

const (
	// SaveByCaller: only the front end's calls to Save write it (the
	// close included); the session writes nothing of its own.
	SaveByCaller SavePolicy = iota
	// SaveAuto: no host saves the document, so the session does: at every
	// turn's end (completed, failed or interrupted; before Send returns)
	// and after every other change to the conversation (Update, a message
	// queued, taken or handed back, what the CLI did between turns), in
	// the background and outside every lock. With the keep switch off
	// nothing is written.
	SaveAuto
	// SaveByHost: the host's saves (Save) decide what the document holds;
	// at every turn's end the session writes a recovery copy of the
	// conversation in RecoveryDir (never in the package), which the next
	// open of the package offers when the package was not saved since
	// (Recovery, Recover). A save of the package removes the copy.
	SaveByHost
)

// autoSaveLocked starts a save in the background when the policy is
// SaveAuto and the document keeps the conversation; one runs at a time
// and saves again while changes came meanwhile. s.mu is held.
func (s *Session) autoSaveLocked() {
	if s.saving != SaveAuto || !s.keep || s.closed || s.autoRunning {
		return
	}
	s.autoRunning = true
	s.autoWG.Add(1)
	go s.autoLoop()
}

// autoLoop saves until the conversation is saved, the session closes or a
// save fails (reported to SaveFailed; the next change or the close tries
// again).
func (s *Session) autoLoop() {
	defer s.autoWG.Done()
	for {
		s.mu.Lock()
		if s.closed || !s.keep || s.changes == s.saved {
			s.autoRunning = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		err := s.saveSafely()
		if s.ownSaved != nil {
			s.ownSaved(err)
		}
		if err != nil {
			s.mu.Lock()
			s.autoRunning = false
			s.mu.Unlock()
			s.saveFailed(stillUnsaved(err))
			return
		}
	}
}

// saveSafely saves unless the session closed, turning a panic into an
// error.
func (s *Session) saveSafely() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	_, err = s.save(true, true)
	return err
}

func (s *Session) saveFailed(err error) {
	if s.onSaveFailed != nil {
		s.onSaveFailed(err)
	}
}

// recoverLaterLocked writes the recovery copy in the background
// (SaveByHost), for a turn's end that comes with a lock held (a turn the
// CLI ran on its own). s.mu is held.
func (s *Session) recoverLaterLocked() {
	if s.saving != SaveByHost || !s.keep || s.closed {
		return
	}
	s.autoWG.Add(1)
	go func() {
		defer s.autoWG.Done()
		if err := s.writeRecovery(); err != nil {
			s.saveFailed(err)
		}
	}()
}

// endSave writes a turn's end as the policy says: the package (SaveAuto)
// or the recovery copy (SaveByHost). Send calls it once the turn's end is
// in, with no lock held; the error is the save's.
func (s *Session) endSave() error {
	s.mu.Lock()
	policy, keep := s.saving, s.keep
	if policy == SaveAuto && keep {
		// This save writes how the turn ended: none follows it (Prompt).
		s.running, s.savedInTurn = false, false
	}
	s.mu.Unlock()
	if !keep {
		return nil
	}
	switch policy {
	case SaveAuto:
		if _, err := s.save(true, true); err != nil {
			return stillUnsaved(err)
		}
		return nil
	case SaveByHost:
		return s.writeRecovery()
	}
	return nil
}

// stillUnsaved says of a save's error that nothing was lost.
func stillUnsaved(err error) error {
	return fmt.Errorf("%w (the conversation stays unsaved; a later save writes it)", err)
}

// Recovery is a copy of a host-saved package's conversation that spbridge
// wrote in the state folder at a turn's end (SaveByHost): the package
// folder of the copy (Dir, a package whose agent folder holds it) and
// what its recovery.json records.
type Recovery struct {
	Dir string `json:"-"`
	// Package is the absolute path of the package the copy is of.
	Package string `json:"package"`
	// Base is the SHA-256 of the package's conversation.json as the
	// session last read or wrote it when it wrote the copy ("" when the
	// package held none): a package that still holds those bytes was not
	// saved since.
	Base string `json:"base"`
	// Copy is the SHA-256 of the copy's conversation.json.
	Copy string `json:"copy"`
	// Items is the number of items the copy holds.
	Items int `json:"items"`
	// Time is when the copy was written.
	Time time.Time `json:"time"`
}

// RecoveryFile is the file of a recovery copy's folder that says what it
// is a copy of; it is written last.
const RecoveryFile = "recovery.json"

// RecoveryPath is the folder under root that holds the recovery copy of
// the package pkg (an absolute path): a name made of its path's hash.
func RecoveryPath(root, pkg string) string {
	sum := sha256.Sum256([]byte(pkg))
	return filepath.Join(root, hex.EncodeToString(sum[:16]))
}

// ReadRecovery reads the recovery copy of the package pkg (absolute)
// under root: nil and no error when there is none.
func ReadRecovery(root, pkg string) (*Recovery, error) {
	dir := RecoveryPath(root, pkg)
	data, err := regfile.ReadFile(filepath.Join(dir, RecoveryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the recovery copy: %w", err)
	}
	r := &Recovery{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("read the recovery copy %s: %w", dir, err)
	}
	if r.Package != pkg {
		return nil, nil // another package's name hashed alike: not this one's
	}
	r.Dir = dir
	return r, nil
}

// Newer reports whether the copy holds what the package does not: the
// package still holds the conversation it held when the copy was written
// (saved is its conversation.json's SHA-256 now, archive.Package.SavedHash),
// and the copy differs from it.
func (r *Recovery) Newer(saved string) bool {
	return r != nil && saved == r.Base && r.Copy != "" && r.Copy != saved
}

// Conversation reads the copy's conversation (with its images).
func (r *Recovery) Conversation() (*archive.Conversation, error) {
	p, err := archive.Open(r.Dir, archive.KindDocument, true)
	if err != nil {
		return nil, err
	}
	if p.Unreadable != "" {
		return nil, fmt.Errorf("the recovery copy %s cannot be read: %s", r.Dir, p.Unreadable)
	}
	return p.Conv, nil
}

// Remove removes the copy.
func (r *Recovery) Remove() error { return os.RemoveAll(r.Dir) }

// recoveryPath is the folder of this session's recovery copy, "" when it
// keeps none.
func (s *Session) recoveryPath() string {
	if s.saving != SaveByHost || s.recoveryDir == "" {
		return ""
	}
	abs, err := filepath.Abs(s.pkg.Dir)
	if err != nil {
		return ""
	}
	return RecoveryPath(s.recoveryDir, abs)
}

// writeRecovery writes the conversation as it stands into the session's
// recovery copy, unless the package holds it already (then the copy goes).
// It runs among the saves (saveMu), with a snapshot taken under s.mu.
func (s *Session) writeRecovery() error {
	if s.recoveryPath() == "" {
		return nil // no copy: a turn's end does not wait for a save
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	return s.writeRecoveryLocked(false)
}

// writeRecoveryLocked is writeRecovery with saveMu held: the copy's
// journal takes what changed since it was last written (Append), and the
// copy is written whole when whole is set (a fold, journal.go) or when
// there is nothing to append on.
func (s *Session) writeRecoveryLocked(whole bool) error {
	dir := s.recoveryPath()
	if dir == "" {
		return nil
	}
	s.mu.Lock()
	if s.changes == s.saved {
		s.mu.Unlock()
		return s.removeRecoveryLocked()
	}
	snap := s.pkg.Snapshot(true)
	items := len(s.pkg.Conv.Items)
	clear(s.mine)
	s.mu.Unlock()
	if s.writing != nil && !whole {
		s.writing()
	}
	abs, _ := filepath.Abs(s.pkg.Dir)
	if _, err := os.Lstat(filepath.Join(dir, RecoveryFile)); err != nil {
		s.rec = nil // none written yet, or pruned: written anew
	}
	if s.rec == nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("write the recovery copy: %w", err)
		}
		rec, err := archive.Open(dir, archive.KindDocument, false)
		if err != nil {
			return fmt.Errorf("write the recovery copy: %w", err)
		}
		s.rec = rec
	}
	write := s.rec.Append
	if whole {
		write = s.rec.Write
	}
	if _, err := write(snap); err != nil {
		s.rec = nil // what it remembers of its files may be wrong
		return fmt.Errorf("write the recovery copy: %w", err)
	}
	// Copy names the copy's conversation.json; its journal, when it has
	// one, holds turns written since, which the package lacks too.
	when := s.journalBehind()
	meta := Recovery{Package: abs, Base: s.pkg.SavedHash(), Copy: s.rec.SavedHash(), Items: items, Time: s.now().UTC()}
	data, err := json.MarshalIndent(meta, "", "  ")
	if err == nil {
		err = statefile.WriteAtomic(filepath.Join(dir, RecoveryFile), append(data, '\n'))
	}
	if err != nil {
		return fmt.Errorf("write the recovery copy: %w", err)
	}
	s.mu.Lock()
	s.paceLocked(when)
	s.mu.Unlock()
	return nil
}

// removeRecoveryLocked removes the session's recovery copy: the package
// holds what it held. saveMu is held.
func (s *Session) removeRecoveryLocked() error {
	dir := s.recoveryPath()
	if dir == "" {
		return nil
	}
	s.rec = nil
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the recovery copy: %w", err)
	}
	return nil
}

// findOffer looks, at the open, for a recovery copy newer than what the
// package holds (one a host-saved session wrote, whatever the policy of
// this one); an error reading it is reported and offers nothing.
func (s *Session) findOffer() {
	if s.recoveryDir == "" || !s.keep || s.pkg.Kind != archive.KindDocument {
		return
	}
	abs, _ := filepath.Abs(s.pkg.Dir)
	r, err := ReadRecovery(s.recoveryDir, abs)
	if err != nil {
		s.saveFailed(err)
		return
	}
	if r.Newer(s.pkg.SavedHash()) {
		s.offer = r
	}
}

// Recovery is the recovery copy the session offers: found at the open,
// newer than what the package holds, and offered until a turn starts, a
// New Conversation, or Recover takes it. nil when none.
func (s *Session) Recovery() *Recovery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offer
}

// ErrNoRecovery is the error of Recover when no recovery copy is offered.
var ErrNoRecovery = errors.New("no recovery copy is offered")

// Recover takes the offered recovery copy: the conversation becomes the
// copy's (the next turn's CLI is told it, as after an open), unsaved, for
// the host to save. It returns the conversation's number of items.
func (s *Session) Recover() (int, error) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	off := s.offer
	s.mu.Unlock()
	if off == nil {
		return 0, ErrNoRecovery
	}
	conv, err := off.Conversation()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.offer != off {
		return 0, ErrNoRecovery
	}
	if s.turn != nil || s.running {
		return 0, ErrBusy
	}
	s.offer = nil
	s.pkg.ResetConversation()
	s.pkg.Conv = conv
	clear(s.mine)
	s.restore = restore.Restored(slices.Clone(conv.Items))
	s.changes++
	s.autoSaveLocked()
	return len(conv.Items), nil
}

func (s *Session) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}
