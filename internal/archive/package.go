package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
)

// Errors.
var (
	ErrNotFolder = errors.New("not a folder")
	ErrImageType = errors.New("unsupported image type")
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

	// What the agent folder held when last read or written, so that an
	// unchanged save touches nothing.
	lastJSON  []byte
	jsonStamp stamp
	jsonKnown bool
	images    map[string]stamp // verified image files by name
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

func (p *Package) agentPath(elem ...string) string {
	return filepath.Join(append([]string{p.Dir, AgentDir}, elem...)...)
}

func (p *Package) load() {
	fi, err := os.Lstat(p.agentPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		p.unreadable(err.Error())
		return
	case fi.Mode()&fs.ModeSymlink != 0:
		p.unreadable("agent is a symbolic link")
		return
	case !fi.IsDir():
		p.unreadable("agent is not a folder")
		return
	}
	data, st, err := readRegular(p.agentPath(ConversationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return // a folder left without a conversation: empty, removed at the next save
	}
	if err != nil {
		p.unreadable(err.Error())
		return
	}
	conv, err := Decode(data)
	if err != nil {
		p.unreadable(describeLoadError(err))
		return
	}
	p.restoreImages(conv)
	p.Conv = conv
	p.lastJSON, p.jsonStamp, p.jsonKnown = data, st, true
}

// restoreImages reads every image the history references; one whose file is
// missing, not a regular file, or whose bytes do not match its name becomes
// imageOmitted.
func (p *Package) restoreImages(conv *Conversation) {
	loaded := make(map[string][]byte)
	for i := range conv.History {
		content := conv.History[i].Content
		for j, b := range content {
			if b.Type() != BlockImage {
				continue
			}
			name := imageFileName(b)
			data, ok := loaded[name]
			if !ok && name != "" {
				var st stamp
				var err error
				data, st, err = readRegular(p.agentPath(ImagesDir, name))
				if err != nil || hashHex(data) != b.String("sha256") {
					data = nil
				} else {
					p.images[name] = st
				}
				loaded[name] = data
			}
			if data == nil {
				content[j] = b.omitted()
				continue
			}
			content[j].data = data
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
// everything else are cleared and a document's agent folder is removed.
func (p *Package) NewConversation() (*SaveReport, error) {
	p.Conv = &Conversation{}
	p.Unreadable, p.preserved = "", false
	r := &SaveReport{}
	if p.Kind != KindDocument {
		return r, nil
	}
	return r, p.removeAgent(r)
}

// Save writes the conversation into the package as the host's save of the
// document does; keep is the "Keep the agent conversation in the document"
// switch, read at every save. A template or design-system package is never
// given an agent folder. With keep off, or an empty conversation, the agent
// folder is removed. A preserved unreadable folder is left untouched.
// Otherwise the images that fit the cap are stored (an existing file is never
// rewritten), conversation.json is replaced atomically when its bytes change,
// and files no longer referenced are removed. An unchanged conversation
// writes no file.
func (p *Package) Save(keep bool) (*SaveReport, error) {
	r := &SaveReport{}
	if p.Kind != KindDocument {
		return r, nil
	}
	if !keep || (!p.preserved && p.Conv.IsEmpty()) {
		p.preserved = false
		return r, p.removeAgent(r)
	}
	if p.preserved {
		return r, nil
	}
	omit, keepImages := capImages(p.Conv.History)
	data, err := p.Conv.encode(omit, len(p.lastJSON))
	if err != nil {
		return r, fmt.Errorf("encode conversation: %w", err)
	}
	agent := p.agentPath()
	created, err := ensureDir(agent)
	if err != nil {
		return r, fmt.Errorf("save conversation: %w", err)
	}
	if created {
		r.Written = append(r.Written, AgentDir+"/")
	}
	if err := p.saveImages(keepImages, r); err != nil {
		return r, err
	}
	if err := p.saveJSON(data, r); err != nil {
		return r, err
	}
	if err := p.removeStray(keepImages, r); err != nil {
		return r, err
	}
	if created {
		if err := syncDir(p.Dir); err != nil {
			return r, fmt.Errorf("save conversation: %w", err)
		}
	}
	return r, nil
}

func (p *Package) saveImages(keep map[string]Block, r *SaveReport) error {
	if len(keep) == 0 {
		return nil
	}
	dir := p.agentPath(ImagesDir)
	created, err := ensureDir(dir)
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
		path := filepath.Join(dir, name)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			if fi.Mode().Perm() != fileMode {
				if err := os.Chmod(path, fileMode); err != nil {
					return fmt.Errorf("save image %s: %w", name, err)
				}
			}
			if known, ok := p.images[name]; ok && known == stampOf(fi) {
				continue
			}
			if data, st, err := readRegular(path); err == nil && hashHex(data) == keep[name].String("sha256") {
				p.images[name] = st
				continue
			}
		}
		if err := writeFileAtomic(dir, name, keep[name].data); err != nil {
			return fmt.Errorf("save image %s: %w", name, err)
		}
		r.Written = append(r.Written, AgentDir+"/"+ImagesDir+"/"+name)
		if st, ok := lstatStamp(path); ok {
			p.images[name] = st
		}
		wrote = true
	}
	if wrote {
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("save images: %w", err)
		}
		if created {
			return syncDir(p.agentPath())
		}
	}
	return nil
}

func (p *Package) saveJSON(data []byte, r *SaveReport) error {
	path := p.agentPath(ConversationFile)
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode().IsRegular() {
		st := stampOf(fi)
		same := p.jsonKnown && st == p.jsonStamp && bytes.Equal(p.lastJSON, data)
		if !same {
			if disk, st2, err := readRegular(path); err == nil && bytes.Equal(disk, data) {
				same, st = true, st2
			}
		}
		if same {
			p.lastJSON, p.jsonStamp, p.jsonKnown = data, st, true
			if fi.Mode().Perm() != fileMode {
				return os.Chmod(path, fileMode)
			}
			return nil
		}
	}
	if err := writeFileAtomic(p.agentPath(), ConversationFile, data); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	if err := syncDir(p.agentPath()); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	r.Written = append(r.Written, AgentDir+"/"+ConversationFile)
	p.lastJSON, p.jsonKnown = data, true
	p.jsonStamp, _ = lstatStamp(path)
	return nil
}

// removeStray removes image files no longer referenced (and anything else in
// the images folder) and temporary files a crashed save left behind.
func (p *Package) removeStray(keep map[string]Block, r *SaveReport) error {
	agent := p.agentPath()
	entries, err := os.ReadDir(agent)
	if err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	removed := false
	for _, e := range entries {
		if isTemp(e.Name()) {
			if err := os.Remove(filepath.Join(agent, e.Name())); err == nil {
				removed = true
			}
		}
	}
	dir := p.agentPath(ImagesDir)
	entries, err = os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Not a folder (a link or a file): nothing of ours is inside.
		if len(keep) == 0 {
			if err := os.Remove(dir); err == nil {
				r.Removed = append(r.Removed, AgentDir+"/"+ImagesDir)
			}
		}
		return nil
	}
	imgRemoved := false
	for _, e := range entries {
		if _, ok := keep[e.Name()]; ok {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove unreferenced image: %w", err)
		}
		delete(p.images, e.Name())
		if !isTemp(e.Name()) {
			r.Removed = append(r.Removed, AgentDir+"/"+ImagesDir+"/"+e.Name())
		}
		imgRemoved = true
	}
	if err == nil && len(keep) == 0 {
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("remove images folder: %w", err)
		}
		r.Removed = append(r.Removed, AgentDir+"/"+ImagesDir+"/")
		removed = true
	} else if imgRemoved {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	if removed {
		return syncDir(agent)
	}
	return nil
}

// removeAgent removes the agent folder: conversation.json first, so that a
// crash midway leaves no conversation rather than one missing its images.
func (p *Package) removeAgent(r *SaveReport) error {
	agent := p.agentPath()
	fi, err := os.Lstat(agent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	if fi.IsDir() {
		if err := os.Remove(p.agentPath(ConversationFile)); err == nil {
			if err := syncDir(agent); err != nil {
				return fmt.Errorf("remove conversation: %w", err)
			}
		}
	}
	if err := os.RemoveAll(agent); err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	if err := syncDir(p.Dir); err != nil {
		return fmt.Errorf("remove conversation: %w", err)
	}
	r.Removed = append(r.Removed, AgentDir+"/")
	p.lastJSON, p.jsonKnown = nil, false
	clear(p.images)
	return nil
}
