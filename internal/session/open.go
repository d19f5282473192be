package session

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/checkpoint"
	"spbridge/internal/clipool"
	"spbridge/internal/pkglock"
	"spbridge/internal/restore"
	"spbridge/internal/sessionindex"
)

// ErrLocked is matched by the error of Open when another process holds
// the package (the error names it).
var ErrLocked = pkglock.ErrLocked

// ErrHoldsConversation is matched by the error of Open when Options.Import
// names a conversation and the package already holds one.
var ErrHoldsConversation = errors.New("the package already holds a conversation")

// Options say how Open opens a conversation.
type Options struct {
	Dir  string       // the package folder
	Kind archive.Kind // "" for a document
	// Keep is the document's "keep the agent conversation" switch: off,
	// nothing saved is restored.
	Keep bool
	// Cwd is the folder the CLI runs in, for the audit log.
	Cwd string
	// AuditDir and AuditQueue are the Session's.
	AuditDir   string
	AuditQueue *audit.Queue
	// Import, when set, is a conversation to put into the package before
	// it opens (a CLI's own session imported, or a fork): the package must
	// hold none (ErrHoldsConversation). It is saved, Imported is called
	// (when set), and the session opens on it as on a conversation read
	// from disk, without reading it back.
	Import   *archive.Conversation
	Imported func()
	// Saving, RecoveryDir and SaveFailed are the Session's; with
	// SaveByHost the open looks for a recovery copy newer than the
	// package (Session.Recovery).
	Saving      SavePolicy
	RecoveryDir string
	SaveFailed  func(error)
	// Settings are what the user chose for the CLI: the session makes its
	// backend from them, from the row of the CLI they name (or, by the
	// reopen rule, of the CLI the saved conversation last ran on).
	Settings Settings
	// CLIs are the rows the session makes its backends from (the front
	// end passes clis.All, or a test's own).
	CLIs []backend.Plugin
	// Models, when set, keeps the models each CLI's program listed, so
	// that an open knows them before its CLI starts.
	Models ModelCache
	// Changed, when set, is told what of the settings changed (the CLI
	// switched its mode, said its commands or models), on the backend's
	// goroutine with no lock of the session held.
	Changed func(What)
	// Writing, when set, is called by every save once its snapshot is
	// taken, before it is written, with no lock of the session held (a
	// test holds a save there).
	Writing func()
	// Panicked, when set, is told a panic the session recovered from in
	// its own goroutines (an interrupt's, the CLI's early start); a turn's
	// is in its Outcome.
	Panicked func(where string, v any, stack []byte)
	// EndSaving, when set, is called before (false) and after (true) the
	// save at a turn's end (see Prompt), with no lock of the session held.
	EndSaving func(saved bool)
	// CheckpointDir, when set (with Cwd), is where the session keeps the
	// baseline caches of its folders (the state folder's checkpoints/): the
	// session then checkpoints its folders at every turn (Cwd and
	// Settings.Backend.AddDirs, internal/checkpoint) with Checkpoints'
	// bounds, and the package keeps them as CheckpointPolicy says.
	CheckpointDir    string
	Checkpoints      checkpoint.Options
	CheckpointPolicy checkpoint.Policy
	// Log, when set, is told the session's diagnostics (a model list not
	// kept, an early start that failed).
	Log func(string)
	// CLIIdle is how long the CLI may be idle before it is put to sleep
	// (ended, to be started again on its own session by the next turn:
	// sleep.go); 0 keeps it running. Pool, when set, bounds how many CLIs
	// run across the sessions that share it, the least recently used put
	// to sleep first. CLISlept, when set, is told each time the CLI was
	// put to sleep, and why (SleptIdle, SleptLimit), with no lock held.
	CLIIdle  time.Duration
	Pool     *clipool.Pool
	CLISlept func(why string)
	// Index, when set, is the sessions index each turn that ran is
	// recorded in (Session.index): the package, its folder, its title
	// and the CLI session the turn ran on, so that the list of sessions
	// and conversation search find it. spbridge run sets it; serve
	// records its sessions itself, telling the editor the title as it
	// comes (internal/acp).
	Index *sessionindex.Index
}

// Open opens the conversation of a package: it takes the package's lock
// (held until Close), reads the saved conversation, makes the backend,
// and decides the restore — a conversation reopened from disk tells the
// new CLI session what was said before (restore.Restored). On an error
// nothing is held.
func Open(o Options) (_ *Session, err error) {
	lock, err := pkglock.Acquire(o.Dir)
	if errors.Is(err, syscall.ENOTDIR) {
		// Say it as archive.Open does.
		return nil, fmt.Errorf("lock package %s: %w", o.Dir, archive.ErrNotFolder)
	}
	if err != nil {
		return nil, err // a *pkglock.HeldError names the holder
	}
	held := false
	defer func() {
		if !held { // an error, or a panic making the backend
			lock.Unlock()
		}
	}()
	pkg, err := archive.Open(o.Dir, o.Kind, o.Keep || o.Import != nil)
	if err != nil {
		return nil, err
	}
	if o.Import != nil {
		if !pkg.Conv.IsEmpty() || pkg.Unreadable != "" {
			return nil, fmt.Errorf("%s: %w", o.Dir, ErrHoldsConversation)
		}
		pkg.Conv = o.Import
		if _, err := pkg.Save(true); err != nil {
			return nil, fmt.Errorf("save the imported conversation: %w", err)
		}
		if o.Imported != nil {
			o.Imported()
		}
	}
	row, err := choose(o.CLIs, o.Settings, pkg.Conv)
	if err != nil {
		return nil, err
	}
	s := &Session{pkg: pkg, provider: row.Provider, auditDir: o.AuditDir, auditQueue: o.AuditQueue, cwd: o.Cwd, lock: lock, keep: o.Keep,
		saving: o.Saving, recoveryDir: o.RecoveryDir, onSaveFailed: o.SaveFailed,
		writing: o.Writing, panicked: o.Panicked, endSaving: o.EndSaving,
		row: row, rows: o.CLIs, set: o.Settings, modelCache: o.Models, changed: o.Changed, log: o.Log, index: o.Index}
	s.ckpt = ckptState{tracker: newTracker(o), policy: o.CheckpointPolicy, held: heldDir(o)}
	s.ctl.model, s.ctl.effort, s.ctl.mode = o.Settings.Model, o.Settings.Effort, o.Settings.Mode
	s.sl.idle, s.sl.pool, s.sl.slept = o.CLIIdle, o.Pool, o.CLISlept
	resume := ""
	if o.Settings.ResumeCLI == row.Name {
		// Another CLI than the session's is told the conversation so far.
		resume = o.Settings.Resume
	}
	be, gen, err := s.makeBackend(row, resume)
	if err != nil {
		return nil, err
	}
	s.be = be
	// Before the CLI's early start (Prepare): a reopened conversation's
	// new CLI session is named after it.
	nameSessions(be, Title(pkg.Conv.Items, pkg.Dir))
	s.takeControls(row, be, gen)
	switch {
	case resume != "":
		s.restore = &restore.State{}
		s.restore.Established(be.Name())
	case len(pkg.Conv.Items) > 0 && pkg.Unreadable == "":
		s.restore = restore.Restored(slices.Clone(pkg.Conv.Items))
	}
	s.findOffer()
	held = true
	return s, nil
}

// WithLock runs fn holding the lock of the package dir, for a command
// that changes a package no session has open (a save, a New Conversation,
// an import from the shell). When another process holds it the error
// matches ErrLocked and names the holder (a *pkglock.HeldError).
func WithLock(dir string, fn func() error) (err error) {
	lock, err := pkglock.Acquire(dir)
	if errors.Is(err, syscall.ENOTDIR) {
		// Say it as archive.Open and archive.Check do.
		return fmt.Errorf("lock package %s: %w", dir, archive.ErrNotFolder)
	}
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, lock.Unlock())
	}()
	return fn()
}

// Remove removes a package folder and all it holds, once no process holds
// the package (ErrLocked otherwise): for a package spbridge made itself.
func Remove(dir string) error {
	return WithLock(dir, func() error { return os.RemoveAll(dir) })
}
