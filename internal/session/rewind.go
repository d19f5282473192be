package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/restore"
)

// Rewinding the conversation: RewindConversation cuts it before a user
// message, UndoRewind puts back what the last rewind removed.
//
// The cut is made before a user item (the point at which the user would
// type the message again): that item and every item after it go, the
// history goes from that user's message on (the history holds each turn's
// messages after its user message, a steered message where the CLI took
// it, so the n-th user item and the n-th user message of the history
// begin the same turn, compacted or not), and the ratings and card states
// of the items that go go with them. The usage totals and the cost stay as
// they were: the tokens were spent. The last request's usage
// (lastRoundUsage) described a removed turn: it is cleared, and the next
// turn sets it.
//
// Nothing is lost: what a rewind removes is kept, as a format-1
// conversation of its own with its images, in the package's
// agent/rewinds/N/ (a folder of the package's kind: agent/conversation.json
// and agent/images/ inside it), one a rewind, the last on top; UndoRewind
// puts the top one back exactly (a save then writes the conversation.json
// the package held before the rewind) and removes it. A record is written
// before the conversation is cut and removed only once the restored
// conversation is saved, so a crash at any moment loses nothing. With the
// document's keep switch off nothing is written into the package: the
// records live as long as the session. The records stay while the
// conversation is as the rewind left it; once a turn ran after it, an
// undo would drop that turn, so it is refused (ErrUndoStale) and the next
// rewind clears the records.
//
// The CLI's context follows the conversation: while the backend's CLI
// still holds the session of the turns that go (established in this
// open, the turns run on this backend), a backend that can rewind its CLI
// natively (backend.Rewinder) does; otherwise, or when that fails, the
// session starts a fresh CLI session whose first turn is told the
// conversation so far (internal/restore), as after a reopen. An undo
// always starts a fresh CLI session.

// ConversationRewind says what a rewind of the conversation, or its undo,
// did (or, for a dry run, would do).
type ConversationRewind struct {
	// Before is the id of the user item the conversation was cut before,
	// Turn its number (1 for the first user message).
	Before string
	Turn   int
	// Removed are the items removed (for an undo, put back), in order;
	// Messages the number of history messages with them.
	Removed  []archive.Item
	Messages int
	// DryRun is set when nothing changed.
	DryRun bool
	// Record names what keeps the removed part for the undo:
	// agent/rewinds/N inside the package, or "" when it is kept in memory
	// (the keep switch off) or for a dry run.
	Record string
	// Context says how the CLI's context followed: ContextNative,
	// ContextRestart, or "" when no CLI session was to follow (none was
	// established, or a dry run).
	Context string
	// Dropped counts the older records a rewind removed because a turn had
	// run after them (they could not be undone any more).
	Dropped int
}

// How the CLI's context followed a rewind (ConversationRewind.Context).
const (
	// ContextNative: the CLI dropped the turns from the session it holds.
	ContextNative = "native"
	// ContextRestart: the next turn starts a fresh CLI session told the
	// conversation so far.
	ContextRestart = "restart"
)

// ErrNotUserItem is matched by the error of a rewind to an item that is
// not a user message; the error names the user message of its turn.
var ErrNotUserItem = errors.New("not a user message")

// ErrNothingToUndo is the error of UndoRewind when no rewind is kept.
var ErrNothingToUndo = errors.New("no rewind to undo")

// ErrUndoStale is matched by the error of UndoRewind when the conversation
// changed since the last rewind (a turn ran): putting the removed part
// back would drop what came since.
var ErrUndoStale = errors.New("the conversation changed since the last rewind")

// ErrUnreadable is matched by the error of a rewind of a conversation that
// could not be read (it opens as a notice, and is kept as it is).
var ErrUnreadable = errors.New("the saved conversation cannot be read")

// rewindMeta is the record's top-level field that says where the cut was.
const rewindMeta = "spbridgeRewind"

// cut is where a rewind cuts a conversation: items from index item on,
// history from index msg on.
type cut struct {
	before    string
	turn      int
	item, msg int
}

// findCut finds the cut before the user item toItem, or says why there is
// none.
func findCut(c *archive.Conversation, toItem string) (cut, error) {
	i := slices.IndexFunc(c.Items, func(it archive.Item) bool { return it.ID() == toItem })
	if i < 0 {
		return cut{}, fmt.Errorf("%w: %q", archive.ErrNoItem, toItem)
	}
	if t := c.Items[i].Type(); t != archive.TypeUser {
		for j := i - 1; j >= 0; j-- {
			if c.Items[j].Type() == archive.TypeUser {
				return cut{}, fmt.Errorf("%w: item %s is a %s item of the turn of user message %s: rewind to before %s",
					ErrNotUserItem, toItem, t, c.Items[j].ID(), c.Items[j].ID())
			}
		}
		return cut{}, fmt.Errorf("%w: item %s is a %s item before any user message", ErrNotUserItem, toItem, t)
	}
	users := 0
	for _, it := range c.Items[:i] {
		if it.Type() == archive.TypeUser {
			users++
		}
	}
	k, seen := len(c.History), 0
	for j, m := range c.History {
		if isUserMessage(m) {
			if seen == users {
				k = j
				break
			}
			seen++
		}
	}
	return cut{before: toItem, turn: users + 1, item: i, msg: k}, nil
}

// TurnItem is the id of the n-th user item of the conversation (1 for the
// first), for a front end that names a turn by its number.
func (s *Session) TurnItem(n int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return turnItem(s.pkg.Conv, n)
}

func turnItem(c *archive.Conversation, n int) (string, error) {
	seen := 0
	for _, it := range c.Items {
		if it.Type() == archive.TypeUser {
			if seen++; seen == n {
				return it.ID(), nil
			}
		}
	}
	return "", fmt.Errorf("%w: turn %d (the conversation has %d user messages)", archive.ErrNoItem, n, seen)
}

// isUserMessage reports whether a history message is the user's own (a
// message of role user with no tool result in it).
func isUserMessage(m archive.Message) bool {
	if m.Role != "user" {
		return false
	}
	for _, b := range m.Content {
		if b.Type() == archive.BlockToolResult {
			return false
		}
	}
	return true
}

// result is what cutting c at k removes.
func (k cut) result(c *archive.Conversation, dryRun bool) *ConversationRewind {
	return &ConversationRewind{Before: k.before, Turn: k.turn, Removed: slices.Clone(c.Items[k.item:]),
		Messages: len(c.History) - k.msg, DryRun: dryRun}
}

// record is what keeps the part of c that k removes: a conversation of the
// removed items and messages, the ratings and card states of the removed
// items, the last request's usage, and (rewindMeta) where the cut was and
// the resolved cards as they were.
func (k cut) record(c *archive.Conversation, filesID string) *archive.Conversation {
	gone := make(map[string]bool, len(c.Items)-k.item)
	for _, it := range c.Items[k.item:] {
		gone[it.ID()] = true
	}
	rec := &archive.Conversation{
		Items:          slices.Clone(c.Items[k.item:]),
		History:        slices.Clone(c.History[k.msg:]),
		Feedback:       pick(c.Feedback, gone),
		SkillCards:     pick(c.SkillCards, gone),
		LintRuleCards:  pick(c.LintRuleCards, gone),
		ApprovalCards:  pick(c.ApprovalCards, gone),
		LastRoundUsage: c.LastRoundUsage,
		Usage:          c.Usage,
		EstimatedCost:  c.EstimatedCost,
		Model:          c.Model,
		Provider:       c.Provider,
	}
	resolved := make([]any, len(c.ResolvedCards))
	for i, id := range c.ResolvedCards {
		resolved[i] = id
	}
	last := ""
	if k.item > 0 {
		last = c.Items[k.item-1].ID()
	}
	rec.Extra = map[string]any{rewindMeta: map[string]any{
		"version":       json.Number("1"),
		"before":        k.before,
		"keptItems":     json.Number(strconv.Itoa(k.item)),
		"keptHistory":   json.Number(strconv.Itoa(k.msg)),
		"lastKept":      last,
		"resolvedCards": resolved,
	}}
	if filesID != "" {
		rec.Extra[rewindMeta].(map[string]any)["filesRewind"] = filesID
	}
	return rec
}

// pick returns the entries of m whose keys are in keys, nil when none.
func pick[V any](m map[string]V, keys map[string]bool) map[string]V {
	var out map[string]V
	for k, v := range m {
		if keys[k] {
			if out == nil {
				out = make(map[string]V)
			}
			out[k] = v
		}
	}
	return out
}

// apply cuts c at k.
func (k cut) apply(c *archive.Conversation) {
	gone := make(map[string]bool, len(c.Items)-k.item)
	for _, it := range c.Items[k.item:] {
		gone[it.ID()] = true
	}
	c.Items = slices.Clip(c.Items[:k.item])
	c.History = slices.Clip(c.History[:k.msg])
	for _, m := range []map[string]any{c.SkillCards, c.LintRuleCards, c.ApprovalCards} {
		maps.DeleteFunc(m, func(id string, _ any) bool { return gone[id] })
	}
	maps.DeleteFunc(c.Feedback, func(id string, _ archive.Feedback) bool { return gone[id] })
	c.ResolvedCards = slices.DeleteFunc(slices.Clone(c.ResolvedCards), func(id string) bool { return gone[id] })
	c.LastRoundUsage = archive.Usage{}
}

// recordMeta reads where a record's cut was.
type recordMeta struct {
	before             string
	keptItems, keptMsg int
	lastKept           string
	resolved           []string
	files              string // the rewind of the files made with it (checkpoint), "" when none
}

func readMeta(rec *archive.Conversation) (recordMeta, error) {
	m, _ := rec.Extra[rewindMeta].(map[string]any)
	if m == nil {
		return recordMeta{}, errors.New("the rewind record says nothing of its cut")
	}
	num := func(k string) (int, error) {
		n, _ := m[k].(json.Number)
		v, err := strconv.Atoi(string(n))
		if err != nil || v < 0 {
			return 0, fmt.Errorf("the rewind record's %s is not a count", k)
		}
		return v, nil
	}
	var r recordMeta
	var err error
	if r.keptItems, err = num("keptItems"); err != nil {
		return r, err
	}
	if r.keptMsg, err = num("keptHistory"); err != nil {
		return r, err
	}
	r.before, _ = m["before"].(string)
	r.lastKept, _ = m["lastKept"].(string)
	r.files, _ = m["filesRewind"].(string)
	list, _ := m["resolvedCards"].([]any)
	for _, v := range list {
		s, _ := v.(string)
		r.resolved = append(r.resolved, s)
	}
	return r, nil
}

// current reports whether c is as the rewind of rec left it, saying what
// changed when not.
func (r recordMeta) current(c *archive.Conversation) error {
	last := ""
	if n := min(r.keptItems, len(c.Items)); n > 0 {
		last = c.Items[n-1].ID()
	}
	switch {
	case len(c.Items) > r.keptItems:
		return fmt.Errorf("%w: %d items came after it; putting the removed part back would drop them", ErrUndoStale, len(c.Items)-r.keptItems)
	case len(c.Items) != r.keptItems || last != r.lastKept || len(c.History) != r.keptMsg:
		return fmt.Errorf("%w: it is not the conversation the rewind left", ErrUndoStale)
	}
	return nil
}

// restore puts rec back onto c, which is as the rewind left it.
func (r recordMeta) restore(c *archive.Conversation, rec *archive.Conversation) {
	c.Items = append(slices.Clip(c.Items), rec.Items...)
	c.History = append(slices.Clip(c.History), rec.History...)
	put := func(dst *map[string]any, src map[string]any) {
		if len(src) == 0 {
			return
		}
		if *dst == nil {
			*dst = make(map[string]any)
		}
		maps.Copy(*dst, src)
	}
	put(&c.SkillCards, rec.SkillCards)
	put(&c.LintRuleCards, rec.LintRuleCards)
	put(&c.ApprovalCards, rec.ApprovalCards)
	if len(rec.Feedback) > 0 {
		if c.Feedback == nil {
			c.Feedback = make(map[string]archive.Feedback)
		}
		maps.Copy(c.Feedback, rec.Feedback)
	}
	c.ResolvedCards = r.resolved
	c.LastRoundUsage = rec.LastRoundUsage
}

// records keeps a package's rewind records: in the package
// (agent/rewinds/N/), or in memory when dir is "".
type records struct {
	dir string
	mem *[]*archive.Conversation
}

// recordsDir is the folder of the records of the package dir.
func recordsDir(dir string) string {
	return filepath.Join(dir, archive.AgentDir, archive.RewindsDir)
}

// list returns the records' numbers, oldest first.
func (r records) list() ([]int, error) {
	if r.dir == "" {
		n := make([]int, len(*r.mem))
		for i := range n {
			n[i] = i + 1
		}
		return n, nil
	}
	if err := noLink(r.dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(recordsDir(r.dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ns []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > 0 && e.IsDir() && strconv.Itoa(n) == e.Name() {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	return ns, nil
}

// noLink refuses a link where the records' folders belong: a record is
// written only inside the package.
func noLink(dir string) error {
	for _, p := range []string{filepath.Join(dir, archive.AgentDir), recordsDir(dir)} {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a link: spbridge keeps its rewind records only inside the package", p)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a folder", p)
		}
	}
	return nil
}

// name is how a record is named for the user.
func (r records) name(n int) string {
	if r.dir == "" {
		return ""
	}
	return archive.AgentDir + "/" + archive.RewindsDir + "/" + strconv.Itoa(n)
}

// push keeps rec as the newest record, and returns its number.
func (r records) push(rec *archive.Conversation) (int, error) {
	ns, err := r.list()
	if err != nil {
		return 0, err
	}
	if r.dir == "" {
		*r.mem = append(*r.mem, rec)
		return len(*r.mem), nil
	}
	n := 1
	if len(ns) > 0 {
		n = ns[len(ns)-1] + 1
	}
	folder := filepath.Join(recordsDir(r.dir), strconv.Itoa(n))
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return 0, fmt.Errorf("keep the rewind's record: %w", err)
	}
	p, err := archive.Open(folder, archive.KindDocument, false)
	if err == nil {
		p.Conv = rec
		_, err = p.Save(true)
	}
	if err != nil {
		os.RemoveAll(folder)
		return 0, fmt.Errorf("keep the rewind's record: %w", err)
	}
	return n, nil
}

// read reads record n.
func (r records) read(n int) (*archive.Conversation, error) {
	if r.dir == "" {
		return (*r.mem)[n-1], nil
	}
	folder := filepath.Join(recordsDir(r.dir), strconv.Itoa(n))
	p, err := archive.Open(folder, archive.KindDocument, true)
	if err != nil {
		return nil, err
	}
	if p.Unreadable != "" {
		return nil, fmt.Errorf("the rewind record %s cannot be read: %s", r.name(n), p.Unreadable)
	}
	return p.Conv, nil
}

// drop removes record n and every record after it; with n 0, all.
func (r records) drop(n int) error {
	if r.dir == "" {
		*r.mem = (*r.mem)[:max(n-1, 0)]
		return nil
	}
	ns, err := r.list()
	if err != nil {
		return err
	}
	for _, m := range ns {
		if m >= n {
			if err := os.RemoveAll(filepath.Join(recordsDir(r.dir), strconv.Itoa(m))); err != nil {
				return err
			}
		}
	}
	if n <= 1 {
		// The folder goes with its last record (a link was refused above).
		os.Remove(recordsDir(r.dir))
	}
	return nil
}

// clearStale removes every record once the top one is stale for c (a turn
// ran after the last rewind): none can be undone any more. It returns how
// many it removed.
func (r records) clearStale(c *archive.Conversation) (int, error) {
	ns, err := r.list()
	if err != nil || len(ns) == 0 {
		return 0, err
	}
	top, err := r.read(ns[len(ns)-1])
	if err == nil {
		var m recordMeta
		if m, err = readMeta(top); err == nil && m.current(c) == nil {
			return 0, nil
		}
	}
	return len(ns), r.drop(0)
}

// rewindRecords are the session's records.
func (s *Session) rewindRecords(keep bool) records {
	if !keep {
		return records{mem: &s.memRewinds}
	}
	return records{dir: s.ckptPkg()}
}

// waitEnding waits for a turn that is ending (its prompt answered, its
// end being saved): a rewind asked for right after the answer goes on
// once it is over, rather than being refused.
func (s *Session) waitEnding() {
	s.mu.Lock()
	t := s.turn
	ending := t != nil && t.ending
	s.mu.Unlock()
	if ending {
		<-t.done
	}
}

// idleLocked says why the conversation cannot be rewound now, or nil.
// s.mu is held.
func (s *Session) idleLocked() error {
	switch {
	case s.closed || s.stopping:
		return ErrClosed
	case s.turn != nil || s.running:
		return fmt.Errorf("%w: a rewind waits until it ends (or cancel it)", ErrBusy)
	case s.pkg.Unreadable != "":
		return fmt.Errorf("%w: %s", ErrUnreadable, s.pkg.Unreadable)
	}
	return nil
}

// RewindOptions say what Rewind rewinds.
type RewindOptions struct {
	// Before is the user item to rewind to before.
	Before string
	// Files and Conversation choose the halves: the files the turns
	// changed (RewindFiles), the conversation (RewindConversation).
	Files, Conversation bool
	// DryRun only says what would change; Force also restores the files
	// changed since by someone else (conflicts).
	DryRun, Force bool
}

// Rewound is what Rewind, or Undo, did (or would do).
type Rewound struct {
	// Conversation is the conversation's part, nil when it was not asked
	// for.
	Conversation *ConversationRewind
	// Files is the files' part, nil when it was not asked for or could
	// not be: FilesErr then says why (the conversation has no
	// checkpoints: ErrNoCheckpoints).
	Files    *FileRewind
	FilesErr error
}

// Rewind rewinds the files, the conversation, or both, to before the user
// item o.Before, as one rewind that Undo puts back: the files first (a
// failure, such as contents missing, changes nothing), then the
// conversation (RewindConversation), which keeps the files' rewind in its
// record. When both are asked for and the files have no checkpoints, the
// conversation is rewound and FilesErr says why the files are not. A
// rewind of the files alone keeps a record too, cutting nothing, for
// Undo.
func (s *Session) Rewind(o RewindOptions) (*Rewound, error) {
	s.waitEnding()
	s.rewindMu.Lock()
	defer s.rewindMu.Unlock()
	s.mu.Lock()
	err := s.idleLocked()
	if err == nil {
		_, err = findCut(s.pkg.Conv, o.Before)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	res := &Rewound{}
	filesID := ""
	if o.Files {
		fr, err := s.rewindFilesLocked(o.Before, o.DryRun, o.Force)
		switch {
		case errors.Is(err, ErrNoCheckpoints) && o.Conversation:
			res.FilesErr = err
		case err != nil:
			return nil, err
		default:
			res.Files, filesID = fr, fr.ID
		}
	}
	if o.Conversation || (filesID != "" && !o.DryRun) {
		cr, err := s.rewindConversationLocked(o.Before, o.DryRun, filesID, !o.Conversation)
		if o.Conversation {
			res.Conversation = cr
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// RewindConversation cuts the conversation before the user item toItem
// (see the comment above ConversationRewind): an unknown item's error
// matches archive.ErrNoItem, another item's ErrNotUserItem (naming the
// user message of its turn), and while a turn runs ErrBusy. With dryRun it
// only says what it would remove. Otherwise the removed part is kept for
// UndoRewind, the conversation is cut and saved at once (whatever the
// save policy: the package must not hold the cut conversation without the
// record, nor lose the record), and the CLI's context follows.
func (s *Session) RewindConversation(toItem string, dryRun bool) (*ConversationRewind, error) {
	s.waitEnding()
	s.rewindMu.Lock()
	defer s.rewindMu.Unlock()
	return s.rewindConversationLocked(toItem, dryRun, "", false)
}

// rewindConversationLocked is RewindConversation with s.rewindMu held;
// filesID, when set, is the rewind of the files made with it, kept in its
// record for the undo. With keepConv nothing is cut: the record only
// keeps filesID (a rewind of the files alone).
func (s *Session) rewindConversationLocked(toItem string, dryRun bool, filesID string, keepConv bool) (*ConversationRewind, error) {
	s.mu.Lock()
	if err := s.idleLocked(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	conv := s.pkg.Conv
	k, err := findCut(conv, toItem)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if keepConv {
		k.item, k.msg = len(conv.Items), len(conv.History)
	}
	res := k.result(conv, dryRun)
	if dryRun {
		s.mu.Unlock()
		return res, nil
	}
	rec := k.record(conv, filesID)
	gen, keep, be := s.changes, s.keep, s.be
	turns := 0
	if !keepConv {
		turns = s.turnsOnLocked(be, k.before)
	}
	s.mu.Unlock()

	// The record first, then the cut: no lock held while they are written.
	recs := s.rewindRecords(keep)
	if res.Dropped, err = recs.clearStale(conv); err != nil {
		return nil, err
	}
	n, err := recs.push(rec)
	if err != nil {
		return nil, err
	}
	res.Record = recs.name(n)
	if keepConv {
		return res, nil
	}
	native := false
	if rw, ok := be.(backend.Rewinder); ok && turns > 0 {
		if err := rw.Rewind(context.Background(), turns); err != nil {
			s.logf("the CLI could not rewind its session (%v): the next turn starts a new one, told the conversation so far", err)
		} else {
			native = true
		}
	}
	s.mu.Lock()
	if err := s.idleLocked(); err != nil || s.changes != gen || s.be != be {
		s.mu.Unlock()
		recs.drop(n)
		if native {
			s.restartCLI(conv.Items) // the CLI was rewound, the conversation not
		}
		if err != nil {
			return nil, err
		}
		return nil, errors.New("the conversation changed while it was rewound: nothing was rewound")
	}
	k.apply(conv)
	s.changes++
	s.beTurns = s.beTurns[:len(s.beTurns)-turns]
	established := s.restore != nil && !s.restore.Pending()
	kept := slices.Clone(conv.Items)
	s.mu.Unlock()
	switch {
	case native:
		res.Context = ContextNative
	case established:
		res.Context = ContextRestart
		s.restartCLI(kept)
	default:
		// No CLI session holds the conversation yet: the next turn's is
		// told the conversation as it now is.
		s.mu.Lock()
		if len(kept) > 0 {
			s.restore = restore.Restored(kept)
		} else {
			s.restore = nil
		}
		s.mu.Unlock()
	}
	if _, err := s.Save(); err != nil {
		return res, fmt.Errorf("the conversation was rewound, but saving it failed (the record %s keeps what was removed): %w", res.Record, err)
	}
	return res, nil
}

// UndoRewind puts back what the last rewind removed from the
// conversation; see Undo, which also puts the files back.
func (s *Session) UndoRewind(dryRun bool) (*ConversationRewind, error) {
	r, err := s.Undo(dryRun, false)
	if r == nil {
		return nil, err
	}
	return r.Conversation, err
}

// Undo puts back what the last rewind (Rewind, RewindConversation)
// changed, when the conversation is as that rewind left it (ErrUndoStale
// when a turn ran since; ErrNothingToUndo when no rewind is kept): the
// files first, when it rewound them (UndoFileRewind; force also restores
// files changed since), then the conversation, which is saved; the record
// is removed last. The next turn starts a fresh CLI session told the
// conversation so far. With dryRun it only says what it would put back.
func (s *Session) Undo(dryRun, force bool) (*Rewound, error) {
	s.waitEnding()
	s.rewindMu.Lock()
	defer s.rewindMu.Unlock()
	s.mu.Lock()
	if err := s.idleLocked(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	keep := s.keep
	s.mu.Unlock()
	recs := s.rewindRecords(keep)
	ns, err := recs.list()
	if err != nil {
		return nil, err
	}
	if len(ns) == 0 {
		return nil, ErrNothingToUndo
	}
	n := ns[len(ns)-1]
	rec, err := recs.read(n)
	if err != nil {
		return nil, err
	}
	meta, err := readMeta(rec)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	err = meta.current(s.pkg.Conv)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := &Rewound{}
	if meta.files != "" {
		if out.Files, err = s.undoFileRewindLocked(meta.files, dryRun, force); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	if err := s.idleLocked(); err != nil {
		s.mu.Unlock()
		return out, err
	}
	conv := s.pkg.Conv
	if err := meta.current(conv); err != nil {
		s.mu.Unlock()
		return out, err
	}
	users := 0
	for _, it := range conv.Items {
		if it.Type() == archive.TypeUser {
			users++
		}
	}
	res := &ConversationRewind{Before: meta.before, Turn: users + 1, Removed: slices.Clone(rec.Items),
		Messages: len(rec.History), DryRun: dryRun, Record: recs.name(n)}
	out.Conversation = res
	if dryRun {
		s.mu.Unlock()
		return out, nil
	}
	meta.restore(conv, rec)
	s.changes++
	established := s.restore != nil && !s.restore.Pending()
	kept := slices.Clone(conv.Items)
	s.mu.Unlock()
	if len(rec.Items) > 0 {
		if established {
			res.Context = ContextRestart
			s.restartCLI(kept)
		} else {
			s.mu.Lock()
			s.restore = restore.Restored(kept)
			s.mu.Unlock()
		}
	}
	if _, err := s.Save(); err != nil {
		return out, fmt.Errorf("the rewind was undone, but saving the conversation failed (the record %s is kept): %w", res.Record, err)
	}
	if err := recs.drop(n); err != nil {
		return out, fmt.Errorf("the rewind was undone, but its record %s could not be removed: %w", res.Record, err)
	}
	return out, nil
}

// restartCLI makes the next turn start a fresh CLI session of the same
// CLI, told the conversation so far (items): the backend is replaced by a
// new one, as SwitchCLI does, and the old one's CLI ends.
func (s *Session) restartCLI(items []archive.Item) {
	s.mu.Lock()
	row := s.row
	s.mu.Unlock()
	be, gen, err := s.makeBackend(row, "")
	if err != nil {
		// The backend stays, and the next turn is told the conversation
		// all the same (a CLI that kept the old turns sees them twice).
		s.logf("start a new CLI session after the rewind: %v", err)
		s.mu.Lock()
		s.restore = restore.Restored(items)
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	old := s.be
	s.be = be
	if len(items) > 0 {
		s.restore = restore.Restored(items)
	} else {
		s.restore = nil
	}
	s.mu.Unlock()
	s.takeControls(row, be, gen)
	s.watchBackend(be)
	if err := old.Close(); err != nil {
		s.logf("stop the CLI of the rewound session: %v", err)
	}
}

// turnsOnLocked is the number of turns be ran in this open from the one
// of user item id on, when be's CLI holds all of them (0 when not: the
// item is not one of its turns). s.mu is held.
func (s *Session) turnsOnLocked(be backend.Backend, id string) int {
	if s.beTurnsOf != be {
		return 0
	}
	i := slices.Index(s.beTurns, id)
	if i < 0 {
		return 0
	}
	return len(s.beTurns) - i
}

// ranTurnLocked records that be ran the turn of user item id. s.mu is
// held.
func (s *Session) ranTurnLocked(be backend.Backend, id string) {
	if s.beTurnsOf != be {
		s.beTurnsOf, s.beTurns = be, nil
	}
	s.beTurns = append(s.beTurns, id)
}
