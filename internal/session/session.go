// Package session owns one open conversation: its package and the
// package's lock (Open), the backend that runs its turns (made from its
// CLI's row, backend.Plugin, at the open and again at New Conversation;
// the CLI a reopened conversation goes on with, the reopen rule, decided
// here for run and serve alike), the model, reasoning effort and mode the
// user chose and what the CLI offers (Models, Efforts, Modes, Commands;
// carried over to each backend it makes: settings.go), the running turn
// and the requests queued behind it (Prompt, Queue, Cancel, Stop), the
// session's "always" answers (Grants), the keep switch, and its saves (a
// snapshot under the session's lock, written outside it). The rules
// between them live here once, for every front end: the user's message
// becomes an item and a history message, item changes reach the
// conversation as they happen, a turn's end brings its history, usage and
// cost in and gets an audit record, a cancelled turn hands its queue back
// to the composer, what the CLI does between turns (Watch) is brought in
// the same way before the front end is told (Between), and every
// permission request is decided by the session's grants, the front end
// asked only what they do not cover and an "always" answer kept
// (Grants.Decide). A front end (the
// editor protocol, the shell) only translates: it implements Front for the
// turns it asks for, or calls Send and waits, and changes the conversation
// only through the session's intents (Rate, AnswerCard, AddFailure, ...)
// and its settings through SetModel, SetEffort and SetMode, never by
// reaching into its items or its backend (the session's fields are its
// own); it is told what of the settings changed (Options.Changed).
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/checkpoint"
	"spbridge/internal/itemmap"
	"spbridge/internal/pkglock"
	"spbridge/internal/restore"
	"spbridge/internal/sessionindex"
)

// Session is an open conversation. It owns the conversation (pkg.Conv)
// once it is in use: Send and the methods below change it under the
// session's lock, and nothing else may. Send is the turns' (one at a
// time; what the CLI does between turns waits meanwhile: between.go);
// Save, the front ends' intents (intents.go), the settings (settings.go),
// ItemMap and NewConversation may be called from any goroutine
// meanwhile. Its fields are its own: a front end reads what it needs
// through methods.
//
// The items it stores are never changed in place once a snapshot may hold
// them: a change replaces the item with a copy, and only a text that grew
// by appending, in an item no save has seen since it was stored, grows in
// place. A save takes its snapshot under the lock and encodes and writes
// it without (Save); saves are serialized among themselves.
type Session struct {
	// Set by Open and never changed: the package (its Conv is under mu),
	// and what Options gave.
	pkg *archive.Package
	// auditDir is the state folder the audit log is written under; ""
	// writes none. auditQueue, when set, appends the audit records in the
	// background (encoded when the turn ends, written in order; its Flush
	// waits for them): Send does not wait for the disk, and an append
	// that fails is reported by the queue, not in TurnResult.AuditErr.
	auditDir   string
	auditQueue *audit.Queue
	// cwd is the folder the CLI runs in, for the audit log; with the
	// additional folders of its settings, the session's folders, where an
	// "allow all edits" answer allows edits.
	cwd   string
	clock func() time.Time // the time for the audit log (time.Now when nil)
	// The front end's hooks (Options).
	writing      func()
	panicked     func(where string, v any, stack []byte)
	endSaving    func(saved bool)
	onSaveFailed func(error)
	// saving says who writes the conversation into the package (see
	// SavePolicy); recoveryDir is where SaveByHost keeps its recovery
	// copies (the state folder's recovery/; "" keeps none), and where the
	// open looks for one to offer, whatever the policy.
	saving      SavePolicy
	recoveryDir string

	// Under mu, changed only between turns (NewConversation): the backend
	// and its CLI's provider name in the archive; restore decides when
	// the "# Conversation so far" prefix is sent (nil for a conversation
	// that was not restored from disk).
	be       backend.Backend
	provider string
	restore  *restore.State

	mu sync.Mutex // guards pkg.Conv, pkg's turn state, be, provider, restore and mine
	// mine holds the ids of stored items no snapshot shares (a text that
	// grew may grow them in place); a snapshot empties it.
	mine map[string]struct{}
	// saveMu serializes the writes of saves and New Conversation.
	saveMu sync.Mutex
	lock   *pkglock.Lock // the package's, when Open took it
	grants Grants
	// between is the front end told what the CLI does between turns
	// (Watch), nil when none watches.
	between Between
	// The CLI (settings.go): the row of the backend's CLI (under mu), what
	// the user chose for it, and what its controls offer (under ctl.mu).
	row        backend.Plugin
	rows       []backend.Plugin // the CLIs the session may switch to
	set        Settings
	ctl        controls
	modelCache ModelCache
	changed    func(What)
	log        func(string)
	index      *sessionindex.Index // Options.Index
	// The turns (turns.go): the running one, the requests queued behind
	// it, the front end that asked for them; stopping once no turn may
	// start, closed once Close ran.
	turn             *turn
	waiting          []*waiting
	front            Front
	stopping, closed bool
	chains, bg       sync.WaitGroup // the turns' goroutines (WaitTurns)
	// keep is the document's "keep the agent conversation" switch, read
	// by every save.
	keep bool
	// changes counts the changes to the conversation (and to keep); saved
	// is its value when the last save that succeeded took its snapshot.
	// The conversation is unsaved while they differ.
	changes, saved uint64
	// running is set while Send runs; savedInTurn when a save ran
	// meanwhile.
	running, savedInTurn bool
	// autoRunning is set while SaveAuto's background save runs (autoWG).
	autoRunning bool
	autoWG      sync.WaitGroup
	ownSaved    func(error) // tests: told each background save's end
	// SaveAuto's whole writes (journal.go): folding while one runs (autoWG),
	// foldTimer the quiet period's; folded tells tests each one's end.
	folding   bool
	foldTimer *time.Timer
	folded    func(error)
	quiet     time.Duration // the quiet period when set (tests), else foldQuiet
	folds     int           // the folds started (tests)
	// rec is the recovery copy's package (SaveByHost), under saveMu; offer
	// the copy the open found newer than the package (Recovery).
	rec   *archive.Package
	offer *Recovery
	// Rewinds (rewind.go): rewindMu serializes them and their undos;
	// memRewinds are their records while the keep switch is off (under
	// rewindMu); beTurns are the user items of the turns beTurnsOf (the
	// backend) ran in this open, in order (under mu).
	rewindMu   sync.Mutex
	memRewinds []*archive.Conversation
	beTurns    []string
	beTurnsOf  backend.Backend
	// ckpt checkpoints the session's folders (checkpoints.go): its tracker
	// is used by Send alone.
	ckpt ckptState
	// sl puts the CLI to sleep when idle (sleep.go).
	sl sleeper
}

// TurnResult is how a turn ended.
type TurnResult struct {
	End      *itemmap.TurnEnd
	UserItem archive.Item
	// AuditErr is why the turn's audit record could not be written, or nil.
	AuditErr error
	// SaveErr is why the save at the turn's end (SaveAuto's, or the
	// recovery copy of SaveByHost) failed, or nil; the conversation stays
	// unsaved.
	SaveErr error
	// Untaken are the messages steered into the turn (Steer) that its CLI
	// never took, an interrupt coming first: they are the conversation's
	// unsent messages, handed back to the composer.
	Untaken []string
	// Changes are the files the turn created, modified or deleted (and
	// those it changed whose contents are not kept), when the session
	// checkpoints its folders; Notice is the notice item that says them
	// (and keys them in the package's checkpoints), nil when nothing
	// changed.
	Changes checkpoint.ChangeSet
	Notice  *archive.Item
}

// ErrNotStarted is matched by the error of a turn that never started: the
// CLI missing or not runnable, its working folder missing, or the CLI
// failing before it took the message. Such a turn leaves the conversation
// as it was.
var ErrNotStarted = errors.New("the turn did not start")

// Send runs one turn: text (and images) from the user. The user's item is
// added first and reported to h like every other change; the conversation is
// updated as the turn goes. After a restore the backend's message carries
// the "# Conversation so far" prefix as its Context, apart from text; the
// items, the history and the audit log only ever hold text itself. It returns when the turn ended
// (completed, failed or interrupted), with its audit record written (or,
// with an AuditQueue, queued), and with the turn's end saved as the
// session's SavePolicy says (SaveByCaller leaves saving to the caller).
//
// A turn that never started (itemmap.TurnEnd.NotStarted, or a working
// folder or program that cannot be used, found before the CLI is asked)
// changes nothing: the conversation's items are put back as they were, h is
// sent an OpRemove of the user's item, no history, usage or audit record is
// added, an unreadable agent folder stays preserved (Pkg.BeginTurn is only
// called once the CLI took the message), and Send returns an error that
// matches ErrNotStarted and carries the failure's text. The failure item the
// backend already announced stays with h, which may show it (it says why
// nothing happened; an ACP client cannot withdraw a message chunk anyway),
// but it is not part of the conversation and is never saved. A turn that
// reached the CLI but never reported its end is a failed turn with a failure
// item saying so; the user's message is kept.
func (s *Session) Send(ctx context.Context, text string, images []backend.Image, h Host) (*TurnResult, error) {
	userMsg := archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(text)}}
	for _, img := range images {
		b, err := archive.NewImageBlock(img.MimeType, img.Data)
		if err != nil {
			return nil, err
		}
		userMsg.Content = append(userMsg.Content, b)
	}
	// The backend of this turn, and its CLI's name, read with no lock of
	// the session held (New Conversation, which replaces it, waits for
	// the turn).
	be := s.currentBackend()
	name := be.Name()
	if err := s.preflight(be, name); err != nil {
		return nil, err
	}
	// Nothing the CLI does between turns lands in the conversation while
	// this turn changes it.
	release := s.Hold()
	defer release()
	// The CLI runs for this turn (started again when it was put to
	// sleep); its idle time starts over at the turn's end.
	s.using()
	defer s.used()
	// A CLI that refused its session as it was started again between
	// turns (Prepare) starts a new one, told the conversation so far.
	refused := resumeRefused(be)
	user := archive.NewItem(archive.TypeUser)
	user.Set("text", text)
	if len(images) > 0 {
		user.Set("hasImage", true)
	}
	s.mu.Lock()
	conv := s.pkg.Conv
	msg := backend.Message{Text: text, Images: images}
	if refused {
		s.restoreAfterRefusal(conv.Items)
	}
	if s.restore != nil {
		msg.Context = s.restore.Context(name, conv.Items, conv.History)
	}
	first := len(conv.Items)
	conv.Items = append(conv.Items, user)
	title := Title(conv.Items, s.pkg.Dir)
	s.changes++
	s.running, s.savedInTurn = true, false
	s.offer = nil // a turn goes on from what the package holds
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: user})

	ap := &applier{s: s, host: h, first: first, latest: make(map[string]archive.Item)}
	if refused {
		ap.Change(refusedNotice())
	}
	s.ckptBegin()
	// A CLI session this turn starts is named after the conversation.
	nameSessions(be, title)
	end := be.Turn(ctx, msg, ap)
	if end != nil && end.NotStarted && resumeRefused(be) {
		end = s.turnAfterRefusal(ctx, be, msg, ap, user)
	}
	// What the turn changed in the folders (nothing, for a turn that never
	// started: the baseline moves on, nothing is recorded).
	changes := s.ckptEnd()
	if end != nil && end.NotStarted {
		s.mu.Lock()
		conv := s.pkg.Conv
		msg := failureText(conv.Items[min(first, len(conv.Items)):])
		conv.Items = ap.before()
		s.changes++
		s.mu.Unlock()
		h.Change(itemmap.Change{Op: itemmap.OpRemove, Item: user})
		if msg == "" {
			msg = name + " did not take the message"
		}
		return nil, fmt.Errorf("%w: %s", ErrNotStarted, msg)
	}
	var failure archive.Item
	if end == nil {
		failure = archive.NewItem(archive.TypeFailure)
		failure.Set("text", "The turn ended without "+name+" reporting its end; what arrived is kept.")
		ap.Change(itemmap.Change{Op: itemmap.OpAdd, Item: failure})
		end = &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	}
	var notice *archive.Item
	if !changes.Empty() {
		it := s.changesNotice(changes)
		notice = &it
		ap.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	}
	started := be.Started()
	var untaken []string
	if st, ok := be.(backend.Steerer); ok {
		for _, m := range st.Untaken() {
			untaken = append(untaken, m.Text)
		}
	}
	s.mu.Lock()
	// The CLI took the message: the turn replaces an unreadable conversation.
	s.pkg.BeginTurn()
	s.ranTurnLocked(be, user.ID())
	if started {
		if s.restore == nil {
			s.restore = &restore.State{}
		}
		s.restore.Established(name)
	}
	conv = s.pkg.Conv
	turnItems := ap.settle(conv.Items[min(first, len(conv.Items)):])
	// What the turn keeps was read from the CLI's lines: its strings are
	// given memory of their own, so the conversation holds its text and not
	// every line a piece of it came from; a text both an item and the
	// history hold is held once.
	archive.CompactTurn(turnItems, end.History)
	conv.History = append(conv.History, userMsg)
	itemmap.Apply(conv, end, s.provider)
	for _, text := range untaken {
		conv.Unsent = append(conv.Unsent, text)
	}
	s.changes++
	identity := conv.AuditLog()
	s.mu.Unlock()
	res := &TurnResult{End: end, UserItem: user, Untaken: untaken, Changes: changes, Notice: notice}
	key := ""
	if notice != nil {
		key = notice.ID()
	}
	if err := s.recordChanges(key, user.ID(), changes); err != nil {
		s.logf("checkpoints: %v", err)
	}
	if s.auditDir != "" {
		res.AuditErr = s.audit(be, identity, text, userMsg, turnItems, end, "", changes)
	}
	res.SaveErr = s.endSave()
	if started {
		s.recordTurn(name, text, end.SessionID)
	}
	return res, nil
}

// applyLocked brings an item change into the conversation's items: an add
// appends a copy of the item, an update replaces the stored item with a
// copy (or grows its text in place, when only its text grew and no
// snapshot holds it), a removal takes it out. Items are looked for from
// the end, and among those from index from on first (a turn's own). s.mu
// is held.
func (s *Session) applyLocked(c itemmap.Change, from int) {
	s.changes++
	conv := s.pkg.Conv
	it := c.Item
	if c.Op == itemmap.OpAdd {
		conv.Items = append(conv.Items, s.own(it.Clone()))
		return
	}
	i := findItem(conv.Items, it.ID(), from)
	switch {
	case i < 0 && c.Op == itemmap.OpUpdate:
		conv.Items = append(conv.Items, s.own(it.Clone()))
	case i < 0:
	case c.Op == itemmap.OpRemove:
		conv.Items = slices.Delete(conv.Items, i, i+1)
	case s.isMine(conv.Items[i]) && grewBy(conv.Items[i], it, c.Delta):
		conv.Items[i].Set("text", it.String("text"))
	default:
		conv.Items[i] = s.own(it.Clone())
	}
}

// own records that no snapshot holds it yet; s.mu is held.
func (s *Session) own(it archive.Item) archive.Item {
	if s.mine == nil {
		s.mine = make(map[string]struct{})
	}
	s.mine[it.ID()] = struct{}{}
	return it
}

func (s *Session) isMine(it archive.Item) bool {
	_, ok := s.mine[it.ID()]
	return ok
}

// findItem is the index of the last item with this id, looking in
// items[from:] first, or -1.
func findItem(items []archive.Item, id string, from int) int {
	from = min(max(from, 0), len(items))
	for i := len(items) - 1; i >= from; i-- {
		if items[i].ID() == id {
			return i
		}
	}
	for i := from - 1; i >= 0; i-- {
		if items[i].ID() == id {
			return i
		}
	}
	return -1
}

// grewBy reports whether item's text is stored's with delta appended.
func grewBy(stored, item archive.Item, delta string) bool {
	if delta == "" || stored == item {
		return false
	}
	old, text := stored.String("text"), item.String("text")
	return len(old)+len(delta) == len(text) && strings.HasSuffix(text, delta) && strings.HasPrefix(text, old[:min(len(old), 64)])
}

// Save writes the conversation into the package (archive.Package.Save,
// with the document's switch as SetKeep last set it): the snapshot is
// taken under the session's lock, and encoded and written without it, so
// that a turn goes on streaming meanwhile. Saves run one at a time.
//
// With SaveByHost, a save that succeeds removes the recovery copy: the
// package holds all it held.
func (s *Session) Save() (*archive.SaveReport, error) {
	return s.save(false, false)
}

// save is Save; own marks a save the session makes of its own
// (SaveAuto's), which writes nothing once the session closed or with the
// keep switch off, and journal one that appends to the package's journal
// (archive.Package.Append) rather than writing the whole conversation.
func (s *Session) save(own, journal bool) (*archive.SaveReport, error) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	if own && (s.closed || !s.keep) {
		s.mu.Unlock()
		return &archive.SaveReport{}, nil
	}
	snap := s.pkg.Snapshot(s.keep)
	gen := s.changes
	if s.running {
		s.savedInTurn = true
	}
	clear(s.mine)
	s.mu.Unlock()
	if s.writing != nil {
		s.writing()
	}
	var r *archive.SaveReport
	var err error
	if journal {
		r, err = s.pkg.Append(snap)
	} else {
		r, err = s.pkg.Write(snap)
	}
	if err == nil {
		behind := s.journalBehind()
		s.mu.Lock()
		s.saved = max(s.saved, gen)
		s.paceLocked(behind)
		s.mu.Unlock()
		if !own && s.saving == SaveByHost {
			if rerr := s.removeRecoveryLocked(); rerr != nil {
				s.saveFailed(rerr)
			}
		}
	}
	return r, err
}

// Unsaved reports whether the conversation changed since the last save.
func (s *Session) Unsaved() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes != s.saved
}

// SetKeep sets the document's "keep the agent conversation" switch: the
// next save writes the agent folder, or removes it.
func (s *Session) SetKeep(keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep = keep
	s.changes++
	s.autoSaveLocked()
}

// Keep is the document's "keep the agent conversation" switch.
func (s *Session) Keep() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keep
}

// ItemMap is a copy of the stored item with this id as a map, or nil.
func (s *Session) ItemMap(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := s.pkg.Conv.Items
	if i := findItem(items, id, len(items)); i >= 0 {
		return items[i].Clone().Map()
	}
	return nil
}

// Dir is the package's folder.
func (s *Session) Dir() string { return s.pkg.Dir }

// SkippedLines is how many lines of its CLI's output the backend skipped
// as not events, where it counts them.
func (s *Session) SkippedLines() int {
	if sk, ok := s.currentBackend().(interface{ SkippedLines() int }); ok {
		return sk.SkippedLines()
	}
	return 0
}

// currentBackend is the backend the next turn runs on.
func (s *Session) currentBackend() backend.Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.be
}

// NewConversation starts the package's conversation over
// (archive.Package.NewConversation): the old backend's CLI ends (its
// session belongs to the old conversation) and a new backend of the same
// CLI, made with the model, effort and mode chosen so far, runs the next
// turn, with no restore. It fails with ErrBusy while a turn runs.
func (s *Session) NewConversation() (*archive.SaveReport, error) {
	if s.Running() {
		return nil, ErrBusy
	}
	s.mu.Lock()
	row := s.row
	s.mu.Unlock()
	be, gen, err := s.makeBackend(row, "")
	if err != nil {
		return nil, err
	}
	r, err := s.startOver(be)
	if err != nil {
		be.Close()
		return r, err
	}
	s.useBackend(gen)
	return r, nil
}

// startOver is NewConversation once be is made.
func (s *Session) startOver(be backend.Backend) (*archive.SaveReport, error) {
	if s.Running() {
		return nil, ErrBusy
	}
	if err := s.currentBackend().Close(); err != nil {
		return nil, err
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	// The folder goes first, with no lock of the conversation held; only
	// then does the conversation in memory start over.
	r, err := s.pkg.RemoveAgentFolder()
	if err != nil {
		return r, err
	}
	s.mu.Lock()
	s.pkg.ResetConversation()
	clear(s.mine)
	for _, w := range s.waiting {
		w.unwatch()
	}
	s.be, s.restore, s.waiting = be, nil, nil
	s.saved = s.changes // the folder went with the conversation
	s.offer = nil
	s.mu.Unlock()
	// The recovery copy goes with the conversation (saveMu held, mu not).
	if err := s.removeRecoveryLocked(); err != nil {
		s.saveFailed(err)
	}
	// What the old backend's CLI tells between turns is dropped; the new
	// one's is heard as the old one's was.
	s.watchBackend(be)
	return r, nil
}

// ErrBusy is the error of NewConversation while a turn runs.
var ErrBusy = errors.New("a turn is running")

// preflight refuses a turn that cannot start, before anything changes: a
// working folder that is not there, or a program named by the backend's
// environment variable that cannot be run (the backend would only say the
// CLI is not installed).
func (s *Session) preflight(be backend.Backend, cli string) error {
	if s.cwd != "" {
		fi, err := os.Stat(s.cwd)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: the working folder %s does not exist", ErrNotStarted, s.cwd)
		case err != nil:
			return fmt.Errorf("%w: the working folder: %v", ErrNotStarted, err)
		case !fi.IsDir():
			return fmt.Errorf("%w: the working folder %s is not a folder", ErrNotStarted, s.cwd)
		}
	}
	name := backend.ProgramVar(cli)
	if v := os.Getenv(name); v != "" {
		if _, err := be.Program(); err != nil {
			return fmt.Errorf("%w: %s is set to %q, which cannot be run (%v); set it to the path of %s or unset it",
				ErrNotStarted, name, v, err, cli)
		}
	}
	return nil
}

// maxDetail bounds how much of a failure's detail a not-started turn's
// error carries.
const maxDetail = 2048

// failureText is the text (and the detail, when it says more) of the
// failure items among items, for the error of a turn that never started.
func failureText(items []archive.Item) string {
	var parts []string
	for _, it := range items {
		if it.Type() != archive.TypeFailure {
			continue
		}
		t := it.String("text")
		switch d := strings.TrimSpace(it.String("detail")); {
		case d == "" || strings.Contains(t, d):
		case len(d) <= 200 && !strings.Contains(d, "\n"):
			t += " (" + d + ")"
		default:
			// A stderr tail: its last lines say the most.
			if len(d) > maxDetail {
				d = d[len(d)-maxDetail:]
				if i := strings.IndexByte(d, '\n'); i >= 0 {
					d = d[i+1:]
				}
				d = strings.ToValidUTF8(d, "")
			}
			t += ":\n" + d
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "; ")
}

// audit appends the turn's record to the conversation's audit log; origin,
// when set, says who began the turn.
// identity is the conversation's log (archive.Conversation.AuditLog); a
// package kept in its document that turns out to be a copy of the one that
// wrote that log's last record gets a log of its own (audit.LogFor), whose
// first record names its parent, and the conversation names it from now on.
func (s *Session) audit(be backend.Backend, identity, text string, userMsg archive.Message, items []archive.Item, end *itemmap.TurnEnd, origin string, changes checkpoint.ChangeSet) error {
	pkg, _ := filepath.Abs(s.pkg.Dir)
	var parent *audit.Parent
	if s.Keep() {
		log, p, err := audit.LogFor(s.auditDir, identity, pkg)
		if err != nil {
			return err
		}
		identity, parent = log, p
	}
	path, err := audit.Path(s.auditDir, identity)
	if err != nil {
		return err
	}
	now := time.Now
	if s.clock != nil {
		now = s.clock
	}
	program, _ := be.Program()
	itemValues := make([]any, len(items))
	for i, it := range items {
		itemValues[i] = it.Map()
	}
	var images []any
	for _, b := range userMsg.Content {
		if b.Type() == archive.BlockImage {
			images = append(images, map[string]any{"mimeType": b.String("mimeType"), "sha256": b.String("sha256")})
		}
	}
	record := map[string]any{
		"time":             now().UTC().Format(time.RFC3339Nano),
		"backend":          be.Name(),
		"program":          program,
		"programVersion":   be.Version(),
		"model":            end.Model,
		"cwd":              s.cwd,
		audit.FieldPackage: pkg,
		"user":             text,
		"images":           orEmpty(images),
		"items":            itemValues,
		"status":           end.Status,
		"usage":            usageValue(end.Usage),
		"lastRoundUsage":   usageValue(end.LastRound),
		"sessionID":        end.SessionID,
		"exitStatus":       be.ExitStatus(),
		"stderrTail":       be.StderrTail(),
	}
	if end.CostUSD != "" {
		record["costUSD"] = end.CostUSD
	}
	if origin != "" {
		record["origin"] = origin
	}
	if !changes.Empty() {
		record["changes"] = changes.Value()
	}
	if parent != nil {
		record[audit.FieldCopiedFrom] = parent.Value()
	}
	if s.auditQueue != nil {
		err = s.auditQueue.Append(path, record)
	} else {
		err = audit.Append(path, record)
	}
	if parent != nil && err == nil {
		// Saved with the turn's end, which follows.
		s.mu.Lock()
		s.pkg.Conv.SetAuditLog(identity)
		s.changes++
		s.mu.Unlock()
	}
	return err
}

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// usageValue is a usage as format 1 writes it.
func usageValue(u archive.Usage) any {
	c := archive.Conversation{Usage: u}
	return c.Value()["usage"]
}

// Close ends the backend's CLI and releases the package's lock when Open
// took it (it is called once). It does not save what is unsaved (with
// SaveAuto it writes what the journal holds into conversation.json), and
// does not wait for a running turn (Stop and WaitTurns do); no turn
// starts after it.
func (s *Session) Close() (err error) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopSleeping()
	s.endPrepare() // the CLI's early start, and a wake, end before the CLI
	s.stopFoldTimer()
	s.autoWG.Wait() // no save of its own writes once the lock is released
	// What the journal holds goes into conversation.json before the lock
	// is released.
	if ferr := s.fold(true); ferr != nil {
		s.saveFailed(ferr)
	}
	if lock := s.lock; lock != nil {
		s.lock = nil
		// Released even when ending the CLI panics.
		defer func() { err = errors.Join(err, lock.Unlock()) }()
	}
	return s.currentBackend().Close()
}

// Host is a front end's side of one turn: it is told the turn's changes,
// each once the conversation has it (and, when it is a backend.Idler,
// when the backend handled every line the CLI wrote so far), and asked
// about what no grant of the session answers (Asker).
type Host interface {
	Change(itemmap.Change)
	Asker
}

// applier keeps the conversation's items in step with a turn's changes
// before passing them on, and decides its approvals.
type applier struct {
	s     *Session
	host  Host
	first int            // the conversation's item count before the turn
	kept  []archive.Item // its items then, copied before the turn's first removal
	// latest is each item of the turn as the backend last handed it over.
	latest map[string]archive.Item
}

func (a *applier) Change(c itemmap.Change) {
	if c.OutputDelta == "" || c.Tool == nil {
		s := a.s
		s.mu.Lock()
		if c.Op == itemmap.OpRemove && a.kept == nil {
			// A removal moves items within the list: keep the items the
			// turn began with, which a turn that never started puts back.
			a.kept = slices.Clone(s.pkg.Conv.Items[:min(a.first, len(s.pkg.Conv.Items))])
		}
		s.applyLocked(c, a.first)
		s.mu.Unlock()
		if c.Op == itemmap.OpRemove {
			delete(a.latest, c.Item.ID())
		} else {
			a.latest[c.Item.ID()] = c.Item
		}
	}
	a.host.Change(c)
}

// settle puts the turn's items, the stored copies in items, back to what
// the backend last handed over, copied once more now that the turn is
// over, and makes each of them one no snapshot holds (a copy where one
// may), so that the turn's end may compact them; it returns items. s.mu
// is held.
func (a *applier) settle(items []archive.Item) []archive.Item {
	for i, it := range items {
		switch m, ok := a.latest[it.ID()]; {
		case ok:
			items[i] = a.s.own(m.Clone())
		case !a.s.isMine(it):
			items[i] = a.s.own(it.Clone())
		}
	}
	return items
}

// before returns the items the conversation had before the turn, without
// copying them unless a removal moved them. The list has no room to grow,
// so an append makes a new one and leaves the turn's list as it was.
func (a *applier) before() []archive.Item {
	if a.kept != nil {
		return a.kept
	}
	items := a.s.pkg.Conv.Items
	return items[:a.first:a.first]
}

// Idle passes the backend's report that it handled every line so far on
// to the host.
func (a *applier) Idle() {
	if i, ok := a.host.(backend.Idler); ok {
		i.Idle()
	}
}

// Compaction passes a step of the CLI's compaction on to the host, when
// it shows compactions (backend.Compactor).
func (a *applier) Compaction(c itemmap.Compaction) {
	if k, ok := a.host.(backend.Compactor); ok {
		k.Compaction(c)
	}
}

// Approve decides a permission request of the turn (Grants.Decide),
// asking the turn's host.
func (a *applier) Approve(ctx context.Context, ap itemmap.Approval) backend.Decision {
	return a.s.approve(ctx, ap, a.host)
}
