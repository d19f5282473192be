package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"spbridge/internal/archive"
	"spbridge/internal/checkpoint"
)

// Checkpoints of the session's folders (internal/checkpoint): before each
// turn the tracker notes the folders (Begin), after it (completed,
// failed or interrupted) it gives what the turn changed (End). A change
// set that is not empty becomes a notice item at the turn's end, saying
// it in words, and is kept in the package's checkpoints keyed by that
// notice's id (with the document's keep switch on), on TurnResult and in
// the audit record. A turn that never started records nothing.
// RewindFiles puts the files back as they were before an item's turn.

// ckptState is the session's checkpointing, set at Open (nil tracker: the
// session keeps none).
type ckptState struct {
	tracker *checkpoint.Tracker
	policy  checkpoint.Policy
	begun   bool
	// held, when set, is the folder that keeps the checkpoints in the
	// package's stead: the host saves the package (SaveByHost), so no
	// turn writes into it, and the checkpoints stay in the state folder.
	held string

	storeMu sync.Mutex
	store   *checkpoint.Store // opened on first use, then the session's only one
}

// ckptStore is the session's one Store of its checkpoints: every write
// of the session (a turn's record, a rewind, its undo) goes through it,
// so they run one at a time.
// The first caller opens it outside the lock (a held package's folder
// is made then); a second one opened meanwhile is dropped.
func (s *Session) ckptStore() (*checkpoint.Store, error) {
	s.ckpt.storeMu.Lock()
	st := s.ckpt.store
	s.ckpt.storeMu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := s.openCkptStore()
	if err != nil {
		return nil, err
	}
	s.ckpt.storeMu.Lock()
	defer s.ckpt.storeMu.Unlock()
	if s.ckpt.store == nil {
		s.ckpt.store = st
	}
	return s.ckpt.store, nil
}

// heldDir is where a host-saved package's checkpoints are kept: under
// the state folder's checkpoints, by the package's absolute path.
func heldDir(o Options) string {
	if o.Saving != SaveByHost || o.CheckpointDir == "" {
		return ""
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		abs = o.Dir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(o.CheckpointDir, "held", hex.EncodeToString(sum[:16]))
}

// ckptPkg is the folder whose agent/checkpoints keeps the session's
// checkpoints: the package's, or the held one of a host-saved package.
func (s *Session) ckptPkg() string {
	if s.ckpt.held != "" {
		// Made on first use; an error shows when the store is opened.
		os.MkdirAll(s.ckpt.held, 0o700)
		return s.ckpt.held
	}
	return s.pkg.Dir
}

// openCkptStore opens the session's checkpoints: a held package's keep
// its folders relative to the one holding the package, as the package's
// own do.
func (s *Session) openCkptStore() (*checkpoint.Store, error) {
	st, err := checkpoint.Open(s.ckptPkg(), s.ckpt.policy)
	if err == nil && s.ckpt.held != "" {
		st.SetPackage(s.pkg.Dir)
	}
	return st, err
}

// newTracker makes the session's tracker when o asks for checkpoints.
func newTracker(o Options) *checkpoint.Tracker {
	if o.CheckpointDir == "" || o.Cwd == "" {
		return nil
	}
	roots := append([]string{o.Cwd}, o.Settings.Backend.AddDirs...)
	co := o.Checkpoints
	co.Exclude = append(slices.Clone(co.Exclude), filepath.Join(o.Dir, archive.AgentDir), filepath.Dir(o.CheckpointDir))
	t, err := checkpoint.NewTracker(roots, o.CheckpointDir, co)
	if err != nil {
		return nil
	}
	return t
}

// ckptBegin notes the folders before a turn (Send's goroutine only).
func (s *Session) ckptBegin() {
	if s.ckpt.tracker == nil {
		return
	}
	if err := s.ckpt.tracker.Begin(); err != nil {
		s.logf("checkpoints: %v", err)
	}
	s.ckpt.begun = true
}

// ckptEnd is what the turn changed; empty when no Begin preceded it.
func (s *Session) ckptEnd() checkpoint.ChangeSet {
	if !s.ckpt.begun {
		return checkpoint.ChangeSet{}
	}
	s.ckpt.begun = false
	cs, err := s.ckpt.tracker.End()
	if err != nil {
		s.logf("checkpoints: %v", err)
	}
	return cs
}

// changesNotice is the notice item that says a change set.
func (s *Session) changesNotice(cs checkpoint.ChangeSet) archive.Item {
	it := archive.NewItem(archive.TypeNotice)
	it.Set("text", cs.Summary(s.cwdAbs()))
	return it
}

func (s *Session) cwdAbs() string {
	abs, err := filepath.Abs(s.cwd)
	if err != nil {
		return s.cwd
	}
	return abs
}

// recordChanges keeps the change set in the package's checkpoints under
// key (the notice's id), when the keep switch is on. No lock is held.
func (s *Session) recordChanges(key, userItem string, cs checkpoint.ChangeSet) error {
	s.mu.Lock()
	keep := s.keep
	s.mu.Unlock()
	if !keep || s.ckpt.tracker == nil {
		return nil
	}
	st, err := s.ckptStore()
	if err != nil {
		return err
	}
	return st.Record(key, userItem, cs)
}

// FileRewind says what a rewind of the files did, or for a dry run would
// do.
type FileRewind struct {
	// Plan lists every file restored or deleted and the conflicts (left
	// alone unless forced), the stored contents missing (then nothing was
	// changed) and the turns whose checkpoints were dropped.
	Plan *checkpoint.Plan
	// ID names the rewind (for UndoFileRewind); "" for a dry run.
	ID     string
	DryRun bool
	// Untracked says that turns in the range ran before the files were
	// checkpointed: their files are not restored.
	Untracked bool
}

// ErrNoCheckpoints is matched by the error of RewindFiles for a
// conversation whose files were never checkpointed.
var ErrNoCheckpoints = checkpoint.ErrNoCheckpoints

// RewindFiles puts the session's files back as they were before the turn
// of toItem: the changes of that turn and every later one are undone,
// newest first (checkpoint.Store.Plan). A file changed since by someone
// else is a conflict, left alone unless force. With dryRun nothing
// changes. It is refused while a turn runs (ErrBusy), for an item the
// conversation does not hold (archive.ErrNoItem), and for a conversation
// without checkpoints (ErrNoCheckpoints). The rewind is itself
// checkpointed: UndoFileRewind with its ID puts everything back.
func (s *Session) RewindFiles(toItem string, dryRun, force bool) (*FileRewind, error) {
	s.rewindMu.Lock()
	defer s.rewindMu.Unlock()
	return s.rewindFilesLocked(toItem, dryRun, force)
}

// rewindFilesLocked is RewindFiles with s.rewindMu held (a rewind of both
// halves holds it across them).
func (s *Session) rewindFilesLocked(toItem string, dryRun, force bool) (*FileRewind, error) {
	s.mu.Lock()
	if err := s.idleLocked(); err != nil && !errors.Is(err, ErrUnreadable) {
		s.mu.Unlock()
		return nil, err
	}
	items := s.pkg.Conv.Items
	i := slices.IndexFunc(items, func(it archive.Item) bool { return it.ID() == toItem })
	if i < 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", archive.ErrNoItem, toItem)
	}
	keys := make([]string, 0, len(items)-i)
	for j := len(items) - 1; j >= i; j-- {
		keys = append(keys, items[j].ID())
	}
	pos := func(id string) int {
		return slices.IndexFunc(items, func(it archive.Item) bool { return it.ID() == id })
	}
	s.mu.Unlock()
	st, err := s.ckptStore()
	if err != nil {
		return nil, err
	}
	plan, err := st.Plan(keys, force)
	if err != nil {
		return nil, err
	}
	res := &FileRewind{Plan: plan, DryRun: dryRun}
	if since, err := st.Since(); err == nil && since != "" {
		if p := pos(since); p > i {
			res.Untracked = true
		}
	}
	if dryRun {
		return res, nil
	}
	if err := s.idle(); err != nil {
		return nil, err
	}
	res.ID, err = st.Apply(plan)
	return res, err
}

// UndoFileRewind puts back what the rewind id of the files replaced
// (checkpoint.Store.PlanUndo): a file changed since is a conflict, left
// alone unless force. Refused while a turn runs; with dryRun nothing
// changes. The undo is a rewind of its own (its ID undoes it in turn).
func (s *Session) UndoFileRewind(id string, dryRun, force bool) (*FileRewind, error) {
	s.rewindMu.Lock()
	defer s.rewindMu.Unlock()
	return s.undoFileRewindLocked(id, dryRun, force)
}

// undoFileRewindLocked is UndoFileRewind with s.rewindMu held.
func (s *Session) undoFileRewindLocked(id string, dryRun, force bool) (*FileRewind, error) {
	if err := s.idle(); err != nil {
		return nil, err
	}
	st, err := s.ckptStore()
	if err != nil {
		return nil, err
	}
	plan, err := st.PlanUndo(id, force)
	if err != nil {
		return nil, err
	}
	res := &FileRewind{Plan: plan, DryRun: dryRun}
	if dryRun {
		return res, nil
	}
	res.ID, err = st.Apply(plan)
	return res, err
}

// idle is idleLocked taking the lock (an unreadable conversation's files
// may be rewound).
func (s *Session) idle() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.idleLocked(); err != nil && !errors.Is(err, ErrUnreadable) {
		return err
	}
	return nil
}

// Changes is the change set kept for the turn ended by the notice item
// key, from the package's checkpoints (ok false when there is none).
func Changes(pkgDir, key string) (checkpoint.Entry, bool) {
	st, err := checkpoint.Open(pkgDir, checkpoint.Policy{})
	if err != nil {
		return checkpoint.Entry{}, false
	}
	entries, err := st.Entries()
	if err != nil {
		return checkpoint.Entry{}, false
	}
	for _, e := range entries {
		if e.Key == key {
			return e, true
		}
	}
	return checkpoint.Entry{}, false
}
