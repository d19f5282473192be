package archive

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// Kind says what a package is; only a document keeps a conversation.
type Kind string

// Package kinds.
const (
	KindDocument     Kind = "document"
	KindTemplate     Kind = "template"
	KindDesignSystem Kind = "designSystem"
)

// ParseKind reads a package kind as the host names it.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindDocument, KindTemplate, KindDesignSystem:
		return k, nil
	}
	return "", fmt.Errorf("unknown package kind %q (want document, template or designSystem)", s)
}

// Names inside a package.
const (
	AgentDir         = "agent"
	ConversationFile = "conversation.json"
	ImagesDir        = "images"
	// RewindsDir, in the agent folder, holds what each rewind of the
	// conversation removed, for its undo (internal/session): spbridge's own,
	// kept by a save, removed with the agent folder.
	RewindsDir = "rewinds"
	// CheckpointsDir holds the checkpoints of the files the turns changed
	// (package checkpoint); a save leaves it as it is.
	CheckpointsDir = "checkpoints"
)

// Errors.
var (
	ErrNotFolder = errors.New("not a folder")
	ErrImageType = errors.New("unsupported image type")
	ErrNoItem    = errors.New("no such item in the conversation")
)

// Package is an open document package and its conversation. It is not safe
// for concurrent use; a process that writes it should hold the package lock
// (internal/pkglock) from open to close.
type Package struct {
	Dir  string
	Kind Kind
	Conv *Conversation

	// Unreadable is why the saved conversation could not be read, or "" when
	// it could (or there was none). While preserved, the agent folder is left
	// byte-identical at every save.
	Unreadable string
	preserved  bool

	// What conversation.json held when last read or written, so that an
	// unchanged save touches nothing: its SHA-256 and size, the numbers of
	// items and messages in it, and the fingerprint of the conversation
	// that gave its bytes (nil when unknown, as after a load).
	jsonHash  [sha256.Size]byte
	jsonSize  int64
	jsonItems int
	jsonMsgs  int
	jsonPrint *fingerprint
	jsonStamp stamp
	jsonKnown bool
	images    map[string]stamp // verified image files by name

	// What the package made durable: the fingerprint of the conversation
	// conversation.json and the journal hold together (nil when not known:
	// the next Append is a whole Write), the journal the package appends
	// to (Append), and the number of records of one it read at the open.
	durable *fingerprint
	jr      journal
	jrRead  int
	jrBuf   []byte // the last record's buffer, for the next
}

// SaveReport lists what a save changed, as paths relative to the package.
type SaveReport struct {
	Written []string
	Removed []string
}

// Changed reports whether the save wrote or removed anything.
func (r *SaveReport) Changed() bool { return len(r.Written)+len(r.Removed) > 0 }

// Open opens the package folder dir and restores its conversation. It fails
// only when dir is not a readable folder: a conversation that cannot be read
// opens as an empty conversation with one notice item (see Unreadable). A
// template or design-system package, or keep set to false, restores nothing.
func Open(dir string, kind Kind, keep bool) (*Package, error) {
	if kind == "" {
		kind = KindDocument
	}
	if err := statFolder("open package", dir); err != nil {
		return nil, err
	}
	p := &Package{Dir: dir, Kind: kind, Conv: &Conversation{}, images: make(map[string]stamp)}
	if kind == KindDocument && keep {
		p.load()
	}
	return p, nil
}

func (p *Package) load() {
	// Paths in notices are named inside the package.
	pkg, err := openDir(p.Dir, "")
	if err != nil {
		p.unreadable(err.Error())
		return
	}
	defer pkg.close()
	agent, err := pkg.sub(AgentDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case errors.Is(err, errNotFolder):
		p.unreadable("agent is not a folder")
		return
	case err != nil:
		p.unreadable(err.Error())
		return
	}
	defer agent.close()
	data, st, err := agent.readFile(ConversationFile, sizeLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return // a folder left without a conversation: empty, cleaned at the next save
	}
	if err != nil {
		p.unreadable(err.Error())
		return
	}
	conv, sum, applied, err := decodeJournaled(agent, data)
	if err != nil {
		p.unreadable(describeLoadError(err))
		return
	}
	// Without a real images folder (none, or a link) every image reads as
	// omitted.
	images, err := agent.sub(ImagesDir)
	if err == nil {
		defer images.close()
	}
	p.restoreImages(conv, images)
	p.Conv = conv
	p.known(sum, int64(len(data)), conv, nil, st)
	p.jrRead = applied
	if applied == 0 {
		// What the package holds is what was read: the next Append
		// appends on it. After a journal was read, the next save is whole.
		omit, _ := capImages(conv.History)
		p.durable, _ = conv.fingerprint(omit)
	}
}

// known records what conversation.json holds: bytes of this hash and size,
// encoding conv, whose fingerprint is f (nil when not known), with the file
// at stamp st.
func (p *Package) known(hash [sha256.Size]byte, size int64, conv *Conversation, f *fingerprint, st stamp) {
	p.jsonHash, p.jsonSize, p.jsonPrint, p.jsonStamp, p.jsonKnown = hash, size, f, st, true
	p.jsonItems, p.jsonMsgs = len(conv.Items), len(conv.History)
}

// SavedHash is the SHA-256 (hex) of the bytes conversation.json held when
// the package last read or wrote it, or "" when it held none that was read
// (none, or one that could not be read). Like Write, it must not run at
// the same time as a Write.
func (p *Package) SavedHash() string {
	if !p.jsonKnown {
		return ""
	}
	return hex.EncodeToString(p.jsonHash[:])
}

// forget records that conversation.json is gone.
func (p *Package) forget() {
	p.jsonPrint, p.jsonKnown = nil, false
	p.durable, p.jr, p.jrRead = nil, journal{}, 0
}

// restoreImages reads every image the history references from the images
// folder (nil when there is none); one whose file is missing, not a regular
// file, or whose bytes do not match its name becomes imageOmitted (see
// readStoredImage for a file larger than ImageCap).
func (p *Package) restoreImages(conv *Conversation, images *dir) {
	loaded := make(map[string]storedImage)
	for i := range conv.History {
		content := conv.History[i].Content
		for j, b := range content {
			if b.Type() != BlockImage {
				continue
			}
			name := imageFileName(b)
			img, ok := loaded[name]
			if !ok && name != "" && images != nil {
				img = readStoredImage(images, name, b.String("sha256"))
				if img.ok {
					p.images[name] = img.st
				}
				loaded[name] = img
			}
			if !img.ok {
				content[j] = b.omitted()
				continue
			}
			if content[j].data = img.data; img.data == nil {
				content[j].overCap = img.size
			}
		}
	}
}

// UnreadableNotice is the start of the notice shown for a saved conversation
// that could not be read.
const UnreadableNotice = "The saved conversation could not be read"

func (p *Package) unreadable(reason string) {
	p.Unreadable = reason
	p.preserved = true
	notice := NewItem(TypeNotice)
	notice.Set("text", UnreadableNotice+" ("+reason+"). It is kept unchanged in the document until a turn runs or New Conversation is confirmed.")
	p.Conv = &Conversation{Items: []Item{notice}}
}

// Preserved reports whether the package's unreadable agent folder is being
// kept byte-identical.
func (p *Package) Preserved() bool { return p.preserved }

// BeginTurn tells the package that a turn runs: an unreadable agent folder
// that was being preserved is replaced by format 1 at the next save.
func (p *Package) BeginTurn() { p.preserved = false }

// NewConversation starts a new conversation: the items, history and
// everything else are cleared and a document's agent folder is removed. A
// link where spbridge's files belong fails it with a *LinkError; then
// nothing changes, on disk or in memory.
func (p *Package) NewConversation() (*SaveReport, error) {
	r, err := p.RemoveAgentFolder()
	if err != nil {
		return r, err
	}
	p.ResetConversation()
	return r, nil
}

// RemoveAgentFolder is NewConversation's part on disk: a document's agent
// folder is removed. It changes nothing in memory but what the package
// remembers of its files, so it may run while the conversation is read;
// like Write, not at the same time as a Write.
func (p *Package) RemoveAgentFolder() (*SaveReport, error) {
	r := &SaveReport{}
	if p.Kind == KindDocument {
		if err := p.removeAgent(r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// ResetConversation is NewConversation's part in memory: an empty
// conversation, nothing unreadable or preserved.
func (p *Package) ResetConversation() {
	p.Conv = &Conversation{}
	p.Unreadable, p.preserved = "", false
}

// Save writes the conversation into the package as the host's save of the
// document does; keep is the "Keep the agent conversation in the document"
// switch, read at every save. A template or design-system package is never
// given an agent folder. With keep off the agent folder is removed. A
// preserved unreadable folder is left untouched. An empty conversation
// removes the agent folder when it holds only what spbridge writes, and
// otherwise only the images and temporary files (see removeOwn). Otherwise
// the images that fit the cap are stored (an existing file is never
// rewritten), conversation.json is replaced atomically when its bytes
// change, and files no longer referenced are removed. An unchanged
// conversation writes no file.
//
// Save follows no link: a symbolic link at agent, agent/conversation.json,
// agent/images or inside agent/images fails the save with a *LinkError
// before anything is changed, and the link is left alone.
func (p *Package) Save(keep bool) (*SaveReport, error) {
	return p.Write(p.Snapshot(keep))
}

// SaveContext is Save, given up when ctx is done before the conversation
// is in place: the images this save stored and the folders it made are
// removed again, and the error is ctx's cause. The package is then as it
// was. (Once the new conversation.json is in place the save completes.)
func (p *Package) SaveContext(ctx context.Context, keep bool) (*SaveReport, error) {
	return p.WriteContext(ctx, p.Snapshot(keep))
}

// Snapshot is a conversation as one save writes it. Package.Snapshot takes
// it while whoever changes the conversation holds its lock, and
// Package.Write writes it without: the conversation may change meanwhile.
type Snapshot struct {
	conv      *Conversation
	keep      bool
	preserved bool
}

// Snapshot takes the conversation as it stands, for a save with the keep
// switch (see Save). It copies the conversation's own lists and maps, so
// that later appends, removals and map changes do not reach the snapshot;
// the items, messages and card values in them are shared, and their owner
// must not change one in place while a Write of the snapshot may read it
// (an owner replaces a changed item instead). Call it where the
// conversation cannot change.
func (p *Package) Snapshot(keep bool) *Snapshot {
	if !keep {
		p.preserved = false
	}
	c := p.Conv.Copy()
	return &Snapshot{conv: &c, keep: keep, preserved: p.preserved}
}

// Copy is a copy of c with its own lists and maps (later appends,
// removals and map changes do not reach it); the items, messages and card
// values in them are shared.
func (c *Conversation) Copy() Conversation {
	d := *c
	d.Items = slices.Clone(c.Items)
	d.History = slices.Clone(c.History)
	d.Feedback = maps.Clone(c.Feedback)
	d.SkillCards = maps.Clone(c.SkillCards)
	d.LintRuleCards = maps.Clone(c.LintRuleCards)
	d.ApprovalCards = maps.Clone(c.ApprovalCards)
	d.ResolvedCards = slices.Clone(c.ResolvedCards)
	d.Queued = slices.Clone(c.Queued)
	d.Unsent = slices.Clone(c.Unsent)
	d.SentFacts = slices.Clone(c.SentFacts)
	d.Extra = maps.Clone(c.Extra)
	return d
}

// Fork is the conversation a fork of c starts with: a copy that shares
// nothing c's session may change (the lists and maps copied, each item
// cloned; the history's messages are never changed once there), without
// the composer's queued and unsent messages. With atItem it ends with that
// item (ErrNoItem when c has none of that id) and its turn: the items after
// it go, and the history keeps the turns of the user messages kept.
func (c *Conversation) Fork(atItem string) (Conversation, error) {
	end := len(c.Items)
	if atItem != "" {
		i := slices.IndexFunc(c.Items, func(it Item) bool { return it.ID() == atItem })
		if i < 0 {
			return Conversation{}, fmt.Errorf("%w: %q", ErrNoItem, atItem)
		}
		end = i + 1
	}
	d := c.Copy()
	d.Items = d.Items[:end]
	for i, it := range d.Items {
		d.Items[i] = it.Clone()
	}
	d.Queued, d.Unsent = nil, nil // the composer's, not the conversation's
	if end == len(c.Items) {
		return d, nil
	}
	// A rating of a turn cut goes with it.
	kept := make(map[string]bool, len(d.Items))
	for _, it := range d.Items {
		kept[it.ID()] = true
	}
	for id := range d.Feedback {
		if !kept[id] {
			delete(d.Feedback, id)
		}
	}
	// Each turn's history begins with its user message: keep those of the
	// kept user items and what followed them, up to the next. A user item
	// is the next user message whose text is its own (or ends with it); one
	// the history has no message for (a slash command such as /compact)
	// holds no place in it.
	next := 0 // the first message after the last kept user item's
	for _, it := range d.Items {
		if it.Type() != TypeUser {
			continue
		}
		text := it.String("text")
		for k := next; k < len(d.History); k++ {
			if m := d.History[k]; m.Role == "user" && isUserMessage(m) && strings.HasSuffix(messageText(m), text) {
				next = k + 1
				break
			}
		}
	}
	for k := next; k < len(d.History); k++ {
		if m := d.History[k]; m.Role == "user" && isUserMessage(m) {
			d.History = d.History[:k]
			break
		}
	}
	return d, nil
}

// messageText is the text of a message's text blocks.
func messageText(m Message) string {
	var b strings.Builder
	for _, bl := range m.Content {
		if bl.Type() == BlockText {
			b.WriteString(bl.String("text"))
		}
	}
	return b.String()
}

// isUserMessage reports whether a history message of role user is the
// user's own (text or images), not a tool's result.
func isUserMessage(m Message) bool {
	for _, b := range m.Content {
		if b.Type() == BlockToolResult {
			return false
		}
	}
	return true
}

// Write writes a snapshot into the package as Save does. It changes only
// what the package remembers of its files, never the conversation, so it
// may run while the conversation changes; two Writes, or a Write and
// NewConversation, must not run at once (a session serializes its saves).
func (p *Package) Write(s *Snapshot) (*SaveReport, error) {
	return p.WriteContext(context.Background(), s)
}

// WriteContext is Write, given up as SaveContext says when ctx is done.
func (p *Package) WriteContext(ctx context.Context, s *Snapshot) (*SaveReport, error) {
	r := &SaveReport{}
	if p.Kind != KindDocument {
		return r, nil
	}
	if !s.keep {
		return r, p.removeAgent(r)
	}
	if s.preserved {
		return r, nil
	}
	conv := s.conv
	if conv.IsEmpty() {
		return r, p.removeOwn(r)
	}
	omit, keepImages := capImages(conv.History)
	fp, err := conv.fingerprint(omit)
	if err != nil {
		return r, fmt.Errorf("encode conversation: %w", err)
	}
	t, err := p.openTree()
	if err != nil {
		return r, fmt.Errorf("save conversation: %w", err)
	}
	defer t.close()
	t.agent.close()
	var created bool
	if t.agent, created, err = t.pkg.ensureSub(AgentDir); err != nil {
		return r, fmt.Errorf("save conversation: %w", err)
	}
	if created {
		r.Written = append(r.Written, AgentDir+"/")
	}
	made := madeBySave{agent: created}
	if err := p.saveImages(ctx, t, keepImages, r, &made); err != nil {
		if ctx.Err() != nil {
			p.undo(t, &made, r)
		}
		return r, err
	}
	if err := p.saveJSON(ctx, conv, t.agent, omit, fp, r); err != nil {
		if ctx.Err() != nil {
			p.undo(t, &made, r)
		}
		return r, err
	}
	// conversation.json holds it all: a journal on it is stale, removed
	// below, and the next Append starts one anew.
	p.durable, p.jr, p.jrRead = fp, journal{}, 0
	if err := p.removeStray(t, keepImages, r); err != nil {
		return r, err
	}
	if created {
		if err := t.pkg.sync(); err != nil {
			return r, fmt.Errorf("save conversation: %w", err)
		}
	}
	return r, nil
}

// agentTree is a package's agent folder opened for a change.
type agentTree struct {
	pkg    *dir
	agent  *dir // nil when the package has no agent folder
	images *dir // nil when the agent folder has no images folder
}

func (t *agentTree) close() {
	t.images.close()
	t.agent.close()
	t.pkg.close()
}

// openTree opens the package's agent folder for a change, after checking
// that no link stands where spbridge's own files belong: agent,
// agent/conversation.json, agent/images and each entry of agent/images. It
// changes nothing. An agent or images that is a file leaves agent or images
// nil.
func (p *Package) openTree() (_ *agentTree, err error) {
	pkg, err := openDir(p.Dir, p.Dir)
	if err != nil {
		return nil, err
	}
	t := &agentTree{pkg: pkg}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	t.agent, err = pkg.sub(AgentDir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotFolder):
		return t, nil
	case err != nil:
		return nil, err
	}
	if fi, err := t.agent.lstat(ConversationFile); err == nil && isLink(fi) {
		return nil, &LinkError{Path: t.agent.rel(ConversationFile)}
	}
	t.images, err = t.agent.sub(ImagesDir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotFolder):
		return t, nil
	case err != nil:
		return nil, err
	}
	entries, err := t.images.entries()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return nil, &LinkError{Path: t.images.rel(e.Name())}
		}
	}
	return t, nil
}

// madeBySave is what a save added to the package before its
// conversation.json: what a save given up removes again.
type madeBySave struct {
	agent  bool     // the agent folder
	images bool     // the images folder
	files  []string // images that were not there
}

// undo removes what a save given up (its context done) made, so that the
// package is as it was; the report then lists nothing written.
func (p *Package) undo(t *agentTree, made *madeBySave, r *SaveReport) {
	if t.images != nil {
		for _, name := range made.files {
			if t.images.root.Remove(name) == nil {
				delete(p.images, name)
			}
		}
		t.images.sync()
	}
	if made.images && t.agent != nil && t.agent.root.Remove(ImagesDir) == nil {
		t.images.close()
		t.images = nil
	}
	if made.agent && t.agent != nil {
		t.agent.close()
		if t.pkg.root.Remove(AgentDir) == nil {
			t.agent = nil
		}
		t.pkg.sync()
	} else if made.images && t.agent != nil {
		t.agent.sync()
	}
	r.Written = nil
}

// cause is ctx's cause once it is done.
func cause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

// ctxWriter writes to w until ctx is done, then fails with ctx's cause.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(b []byte) (int, error) {
	if err := cause(c.ctx); err != nil {
		return 0, err
	}
	return c.w.Write(b)
}

func (p *Package) saveImages(ctx context.Context, t *agentTree, keep map[string]Block, r *SaveReport, made *madeBySave) error {
	if len(keep) == 0 {
		return nil
	}
	t.images.close()
	images, created, err := t.agent.ensureSub(ImagesDir)
	t.images = images
	made.images = created
	if err != nil {
		return fmt.Errorf("save images: %w", err)
	}
	names := make([]string, 0, len(keep))
	for name := range keep {
		names = append(names, name)
	}
	slices.Sort(names)
	wrote := created
	for _, name := range names {
		if err := cause(ctx); err != nil {
			return fmt.Errorf("save images: %w", err)
		}
		fi, err := images.lstat(name)
		fresh := errors.Is(err, fs.ErrNotExist)
		if err == nil && fi.Mode().IsRegular() {
			if fi.Mode().Perm() != fileMode {
				if err := images.root.Chmod(name, fileMode); err != nil {
					return fmt.Errorf("save image %s: %w", name, err)
				}
			}
			if known, ok := p.images[name]; ok && known == stampOf(fi) {
				continue
			}
			want := keep[name]
			if data, st, err := images.readFile(name, int64(len(want.data))); err == nil && hashHex(data) == want.String("sha256") {
				p.images[name] = st
				continue
			}
		}
		if err := images.writeFileAtomic(name, keep[name].data); err != nil {
			return fmt.Errorf("save image %s: %w", name, err)
		}
		if fresh {
			made.files = append(made.files, name)
		}
		r.Written = append(r.Written, AgentDir+"/"+ImagesDir+"/"+name)
		if st, ok := images.lstamp(name); ok {
			p.images[name] = st
		}
		wrote = true
	}
	if wrote {
		if err := images.sync(); err != nil {
			return fmt.Errorf("save images: %w", err)
		}
		if created {
			return t.agent.sync()
		}
	}
	return nil
}

// saveJSON writes conversation.json when its bytes change. The encoding is
// streamed, to a hash first when the file may already hold it, then to the
// temporary file; no buffer holds it whole.
func (p *Package) saveJSON(ctx context.Context, conv *Conversation, agent *dir, omit map[string]bool, fp *fingerprint, r *SaveReport) error {
	fi, err := agent.lstat(ConversationFile)
	if err == nil && fi.Mode().IsRegular() {
		st := stampOf(fi)
		ours := p.jsonKnown && st == p.jsonStamp // the file holds what we know
		same := ours && fp.same(p.jsonPrint)
		// Other numbers of items or messages are other bytes: the hash is
		// needed only when the counts agree, or the file is not ours.
		if !same && (!ours || (len(conv.Items) == p.jsonItems && len(conv.History) == p.jsonMsgs)) {
			h := sha256.New()
			n, err := fitEncoding(func(compact bool) (int64, error) {
				h.Reset()
				return hashEncoding(conv, ctxWriter{ctx, h}, omit, compact)
			})
			if err != nil {
				return fmt.Errorf("encode conversation: %w", err)
			}
			var sum [sha256.Size]byte
			h.Sum(sum[:0])
			switch {
			case ours:
				same = n == p.jsonSize && sum == p.jsonHash
			case fi.Size() == n:
				if disk, st2, err := agent.readFile(ConversationFile, n); err == nil && sha256.Sum256(disk) == sum {
					same, st = true, st2
				}
			}
			if same {
				p.jsonHash, p.jsonSize = sum, n
			}
		}
		if same {
			p.known(p.jsonHash, p.jsonSize, conv, fp, st)
			if fi.Mode().Perm() != fileMode {
				return agent.root.Chmod(ConversationFile, fileMode)
			}
			return nil
		}
	}
	h := sha256.New()
	n, err := fitEncoding(func(compact bool) (int64, error) {
		h.Reset()
		var n int64
		err := agent.writeFileWith(ConversationFile, func(f io.Writer) error {
			var err error
			n, err = hashEncoding(conv, ctxWriter{ctx, io.MultiWriter(f, h)}, omit, compact)
			return err
		})
		return n, err
	})
	var tl *TooLargeError
	if errors.As(err, &tl) {
		tl.Path = agent.rel(ConversationFile)
	}
	if err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	if err := agent.sync(); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	r.Written = append(r.Written, AgentDir+"/"+ConversationFile)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	st, _ := agent.lstamp(ConversationFile)
	p.known(sum, n, conv, fp, st)
	return nil
}

// hashEncoding streams the conversation's encoding (on one line when
// compact) to w through a buffer and returns its length; errOverLimit as
// soon as it passes sizeLimit.
func hashEncoding(conv *Conversation, w io.Writer, omit map[string]bool, compact bool) (int64, error) {
	cw := &countingWriter{w: w, limit: sizeLimit}
	bw := bufio.NewWriterSize(cw, 64<<10)
	if err := conv.write(bw, omit, compact); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return cw.n, nil
}

// countingWriter counts what it passes on, and refuses (errOverLimit)
// what would take it past limit.
type countingWriter struct {
	w     io.Writer
	n     int64
	limit int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.n+int64(len(b)) > c.limit {
		return 0, errOverLimit
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// removeStray removes image files no longer referenced (and anything else in
// the images folder but a link) and temporary files a crashed save left
// behind.
func (p *Package) removeStray(t *agentTree, keep map[string]Block, r *SaveReport) error {
	agent := t.agent
	entries, err := agent.entries()
	if err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	removed := false
	for _, e := range entries {
		if isTemp(e.Name()) && e.Type().IsRegular() {
			if err := agent.root.Remove(e.Name()); err == nil {
				removed = true
			}
		}
		if isJournal(e) {
			if err := agent.root.Remove(e.Name()); err != nil {
				return fmt.Errorf("remove the journal: %w", err)
			}
			r.Removed = append(r.Removed, AgentDir+"/"+JournalFile)
			removed = true
		}
	}
	if t.images == nil {
		// A file where the images folder belongs holds nothing of ours.
		if fi, err := agent.lstat(ImagesDir); err == nil && len(keep) == 0 && fi.Mode().IsRegular() {
			if err := agent.root.Remove(ImagesDir); err == nil {
				r.Removed = append(r.Removed, AgentDir+"/"+ImagesDir)
				removed = true
			}
		}
	} else if err := p.removeStrayImages(t, keep, r); err != nil {
		return err
	} else if len(keep) == 0 {
		removed = true
	}
	if removed {
		return agent.sync()
	}
	return nil
}

// removeStrayImages empties the images folder of everything not in keep,
// and removes the folder when keep is empty. A link is left alone.
func (p *Package) removeStrayImages(t *agentTree, keep map[string]Block, r *SaveReport) error {
	images := t.images
	entries, err := images.entries()
	if err != nil {
		return fmt.Errorf("remove unreferenced image: %w", err)
	}
	imgRemoved, linkLeft := false, false
	for _, e := range entries {
		if _, ok := keep[e.Name()]; ok {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			linkLeft = true // put there after openTree looked: not ours to remove
			continue
		}
		if err := images.root.RemoveAll(e.Name()); err != nil {
			return fmt.Errorf("remove unreferenced image: %w", err)
		}
		delete(p.images, e.Name())
		if !isTemp(e.Name()) {
			r.Removed = append(r.Removed, AgentDir+"/"+ImagesDir+"/"+e.Name())
		}
		imgRemoved = true
	}
	if len(keep) == 0 && !linkLeft {
		t.images.close()
		t.images = nil
		if err := t.agent.root.Remove(ImagesDir); err != nil {
			return fmt.Errorf("remove images folder: %w", err)
		}
		r.Removed = append(r.Removed, AgentDir+"/"+ImagesDir+"/")
		return nil
	}
	if imgRemoved {
		return images.sync()
	}
	return nil
}

// removeOwn is the save of an empty conversation. When the agent folder
// holds nothing but what spbridge writes (conversation.json, stored images,
// temporary files), it is removed whole. When it also holds anything else,
// the host keeps files of its own there: the folder and conversation.json
// are kept as they are, and only the stored images (which an empty
// conversation no longer references) and temporary files are removed. The
// records of rewinds (RewindsDir) are spbridge's: conversation.json goes,
// and the folder stays for them.
func (p *Package) removeOwn(r *SaveReport) error {
	t, err := p.openTree()
	if err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	defer t.close()
	if t.agent == nil {
		return nil // none, or a file that is not ours
	}
	agent := t.agent
	agentEntries, err := agent.entries()
	if err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	var imageEntries []fs.DirEntry
	if t.images != nil {
		if imageEntries, err = t.images.entries(); err != nil {
			return fmt.Errorf("save conversation: %w", err)
		}
	}
	foreign, rewinds := false, false
	for _, e := range agentEntries {
		switch name := e.Name(); {
		case name == RewindsDir && e.IsDir():
			// Kept: the undo of a rewind that emptied the conversation.
			rewinds = true
		case name == ConversationFile && e.Type().IsRegular():
		case isJournal(e):
		case name == ImagesDir && t.images != nil:
		case isTemp(name) && e.Type().IsRegular():
		default:
			foreign = true
		}
	}
	for _, e := range imageEntries {
		if !ownImageEntry(e) {
			foreign = true
		}
	}

	var gone []string
	if !foreign {
		// First, so that a crash midway leaves no conversation rather than one
		// missing its images.
		if err := agent.root.Remove(ConversationFile); err == nil {
			if err := agent.sync(); err != nil {
				return fmt.Errorf("remove conversation: %w", err)
			}
			gone = append(gone, AgentDir+"/"+ConversationFile)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove conversation: %w", err)
		}
		p.forget()
	}
	if t.images != nil {
		removed := false
		for _, e := range imageEntries {
			name := e.Name()
			if !ownImageEntry(e) {
				continue
			}
			if err := t.images.root.Remove(name); err != nil {
				return fmt.Errorf("remove image: %w", err)
			}
			delete(p.images, name)
			if !isTemp(name) {
				gone = append(gone, AgentDir+"/"+ImagesDir+"/"+name)
			}
			removed = true
		}
		if removed {
			if err := t.images.sync(); err != nil {
				return fmt.Errorf("remove images: %w", err)
			}
		}
		t.images.close()
		t.images = nil
		if agent.root.Remove(ImagesDir) == nil {
			gone = append(gone, AgentDir+"/"+ImagesDir+"/")
		}
	}
	for _, e := range agentEntries {
		if isTemp(e.Name()) && e.Type().IsRegular() {
			agent.root.Remove(e.Name())
		}
		if isJournal(e) && agent.root.Remove(e.Name()) == nil {
			gone = append(gone, AgentDir+"/"+JournalFile)
		}
	}
	p.durable, p.jr, p.jrRead = nil, journal{}, 0
	if err := agent.sync(); err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	t.agent.close()
	t.agent = nil
	if !foreign && !rewinds {
		if err := t.pkg.root.Remove(AgentDir); err != nil {
			return fmt.Errorf("remove conversation: %w", err)
		}
		gone = []string{AgentDir + "/"}
		if err := t.pkg.sync(); err != nil {
			return fmt.Errorf("remove conversation: %w", err)
		}
	}
	r.Removed = append(r.Removed, gone...)
	return nil
}

// ownImageEntry reports whether an entry of the images folder is one
// spbridge writes: a stored image or a temporary file.
func ownImageEntry(e fs.DirEntry) bool {
	_, isImage := parseImageFileName(e.Name())
	return e.Type().IsRegular() && (isImage || isTemp(e.Name()))
}

// removeAgent removes the agent folder and all it holds, as keep off and New
// Conversation do: conversation.json first, so that a crash midway leaves no
// conversation rather than one missing its images. A link where spbridge's
// files belong is refused as in Save.
func (p *Package) removeAgent(r *SaveReport) error {
	t, err := p.openTree()
	if err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	defer t.close()
	if _, err := t.pkg.lstat(AgentDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if t.agent != nil {
		if fi, err := t.agent.lstat(ConversationFile); err == nil && fi.Mode().IsRegular() {
			if err := t.agent.root.Remove(ConversationFile); err != nil {
				return fmt.Errorf("remove conversation: %w", err)
			}
			if err := t.agent.sync(); err != nil {
				return fmt.Errorf("remove conversation: %w", err)
			}
		}
	}
	t.images.close()
	t.agent.close()
	t.images, t.agent = nil, nil
	// RemoveAll removes a link inside (a host's, not at spbridge's places)
	// as a link, never what it points to.
	if err := t.pkg.root.RemoveAll(AgentDir); err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	if err := t.pkg.sync(); err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	r.Removed = append(r.Removed, AgentDir+"/")
	p.forget()
	clear(p.images)
	return nil
}
