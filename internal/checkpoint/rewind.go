package checkpoint

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Op is what a rewind does to a file.
type Op string

// The operations of a rewind.
const (
	Restore Op = "restore" // write the file back as it was (or the link)
	Remove  Op = "delete"  // remove a file the undone turns created
)

// Action is one file a rewind would restore or delete.
type Action struct {
	Root, Path string
	Op         Op
	To         *Version // what the file becomes (nil for Remove)
	// Expect is what the undone entries left (nil: no file), Now what is
	// there now (nil: no file). They differ for a file changed since by
	// someone other than the agent: a conflict, left alone unless the plan
	// is forced.
	Expect, Now *Version
	Conflict    bool
}

// FolderAction is a folder a rewind would remove (Remove) or make
// (Restore).
type FolderAction struct {
	Root, Path string
	Op         Op
}

// Plan is what a rewind would do. A dry run shows it; Apply carries it
// out.
type Plan struct {
	// Undoes are the keys of the entries undone, newest first.
	Undoes []string
	// Actions are every file it would restore or delete, conflicts
	// included (Conflict set; done only when Force).
	Actions []Action
	// Folders are the folders it would remove (those the undone entries
	// created, each only once it is empty: never one still holding a
	// file, whoever put it there) and make (those they deleted).
	Folders []FolderAction
	Force   bool
	// Missing are the blobs the plan needs that are missing or damaged:
	// Apply then changes nothing.
	Missing []string
	// Dropped are the keys asked for whose checkpoints the policy
	// dropped: the files of those turns cannot be restored.
	Dropped []string
	// Conversation is the caller's (the conversation part of a rewind):
	// Apply stores it in the rewind's entry as it is.
	Conversation any
}

// Conflicts are the plan's conflicting actions.
func (p *Plan) Conflicts() []Action {
	var out []Action
	for _, a := range p.Actions {
		if a.Conflict {
			out = append(out, a)
		}
	}
	return out
}

// MissingError is the error of Apply when contents the plan needs are
// missing or damaged; nothing was changed.
type MissingError struct{ Blobs []string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%d stored file contents needed to rewind are missing or damaged (%s): nothing was changed", len(e.Blobs), strings.Join(e.Blobs, ", "))
}

// Plan plans undoing the entries keys name (newest first: the ids of the
// items at or after the point to rewind to; ids that name no entry are
// passed over) and every entry recorded after the earliest of them, in
// reverse order: each file they touched goes back to how it was before
// the earliest entry that touched it. A file whose contents now differ
// from what the newest of those entries left is a conflict. Nothing is
// changed. ErrNoCheckpoints when the package has none.
func (s *Store) Plan(keys []string, force bool) (*Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, r, err := s.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p := &Plan{Force: force}
	from := len(idx.entries)
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	for i, e := range idx.entries {
		if want[e.Key] {
			from = i
			break
		}
	}
	for _, k := range idx.dropped {
		if want[k] {
			p.Dropped = append(p.Dropped, k)
		}
	}
	s.plan(r, p, idx.entries[from:])
	return p, nil
}

// PlanUndo plans undoing the rewind id: every file it changed goes back
// to how the rewind found it (a conflict where it changed since).
func (s *Store) PlanUndo(id string, force bool) (*Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, r, err := s.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	i := slices.IndexFunc(idx.entries, func(e Entry) bool { return e.Key == id })
	switch {
	case i < 0 && slices.Contains(idx.dropped, id):
		return nil, fmt.Errorf("the rewind %s is no longer kept (the oldest checkpoints are dropped)", id)
	case i < 0:
		return nil, fmt.Errorf("no rewind %s in this conversation's checkpoints", id)
	case idx.entries[i].Kind != EntryRewind:
		return nil, fmt.Errorf("%s is a turn, not a rewind", id)
	}
	p := &Plan{Force: force}
	s.plan(r, p, idx.entries[i:i+1])
	return p, nil
}

func (s *Store) open() (*index, *os.Root, error) {
	r, err := s.openRoot(false)
	if err != nil {
		return nil, nil, err
	}
	idx, err := s.readIndex(r)
	if err == nil && idx == nil {
		err = ErrNoCheckpoints
	}
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return idx, r, nil
}

type fileKey struct{ root, path string }

// plan fills p with undoing entries (oldest first) newest first.
func (s *Store) plan(r *os.Root, p *Plan, entries []Entry) {
	type span struct {
		expect, to *Version
	}
	spans := make(map[fileKey]*span)
	var order []fileKey
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		p.Undoes = append(p.Undoes, e.Key)
		for _, f := range e.Files {
			k := fileKey{f.Root, f.Path}
			sp := spans[k]
			if sp == nil {
				sp = &span{expect: f.After}
				spans[k] = sp
				order = append(order, k)
			}
			sp.to = f.Before
		}
	}
	slices.SortFunc(order, func(a, b fileKey) int {
		if c := strings.Compare(a.root, b.root); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	p.Folders = planFolders(entries)
	missing := make(map[string]bool)
	for _, k := range order {
		sp := spans[k]
		now := current(k.root, k.path)
		if sameVersion(now, sp.to) && (now == nil || now.Mode == sp.to.Mode) {
			continue // already as it was
		}
		a := Action{Root: k.root, Path: k.path, Op: Restore, To: sp.to, Expect: sp.expect, Now: now}
		if sp.to == nil {
			a.Op = Remove
		}
		a.Conflict = !sameVersion(now, sp.expect)
		p.Actions = append(p.Actions, a)
		if a.Op == Restore && a.To.SHA256 != "" && (!a.Conflict || p.Force) && !missing[a.To.SHA256] {
			if _, err := readBlobIn(r, a.To.SHA256); err != nil {
				missing[a.To.SHA256] = true
				p.Missing = append(p.Missing, a.To.SHA256)
			}
		}
	}
}

// planFolders are the folder actions of undoing entries (oldest first):
// each folder they created or deleted goes back to whether it was there
// before the earliest of them that touched it. Removals come deepest
// first, then the folders to make, shallowest first.
func planFolders(entries []Entry) []FolderAction {
	existed := make(map[fileKey]bool)
	for i := len(entries) - 1; i >= 0; i-- {
		for _, f := range entries[i].Folders {
			existed[fileKey{f.Root, f.Path}] = f.Change == Deleted
		}
	}
	var remove, mk []FolderAction
	for k, was := range existed {
		is := isDir(k.root, k.path)
		switch {
		case was && !is:
			mk = append(mk, FolderAction{Root: k.root, Path: k.path, Op: Restore})
		case !was && is:
			remove = append(remove, FolderAction{Root: k.root, Path: k.path, Op: Remove})
		}
	}
	byPath := func(a, b FolderAction) int {
		if c := strings.Compare(a.Root, b.Root); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	}
	slices.SortFunc(remove, func(a, b FolderAction) int { return byPath(b, a) })
	slices.SortFunc(mk, byPath)
	return append(remove, mk...)
}

// isDir reports whether the folder p of root is there (not a link).
func isDir(root, p string) bool {
	r, err := os.OpenRoot(root)
	if err != nil {
		return false
	}
	defer r.Close()
	fi, err := r.Lstat(p)
	return err == nil && fi.IsDir()
}

// sameVersion reports whether two versions hold the same contents (or
// link), nil for no file.
func sameVersion(a, b *Version) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.SHA256 == b.SHA256 && a.Link == b.Link && (a.Mode&fs.ModeSymlink) == (b.Mode&fs.ModeSymlink)
}

// current is the file p of root as it is now (nil when there is none;
// a folder or a file that cannot be read is a version with no hash,
// which matches nothing).
func current(root, p string) *Version {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	fi, err := r.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return &Version{Mode: fs.ModeIrregular}
	}
	m := metaOf(fi)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := r.Readlink(p)
		if err != nil {
			return &Version{Mode: fs.ModeIrregular}
		}
		return &Version{Mode: m.mode, Link: target}
	case !fi.Mode().IsRegular():
		return &Version{Mode: fs.ModeIrregular}
	}
	data, err := readAll(r, p)
	if err != nil {
		return &Version{Mode: fs.ModeIrregular, Size: fi.Size()}
	}
	return &Version{SHA256: hashHex(data), Size: int64(len(data)), Mode: m.mode}
}

func readAll(r *os.Root, p string) ([]byte, error) {
	f, err := r.OpenFile(p, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Apply carries out a plan: each file goes back as the plan says
// (conflicts only when the plan is forced, and only when they are still
// as the plan found them or the plan is forced), written only inside its
// folder (never through a link out of it), with its mode, synced. It is
// itself checkpointed: the contents it replaces are kept and a rewind
// entry records them (with the plan's Conversation), so that PlanUndo of
// the id it returns puts everything back. When contents the plan needs
// are missing or damaged it changes nothing (a *MissingError). Files it
// could not write are named in the error; the others are done.
func (s *Store) Apply(p *Plan) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(p.Missing) > 0 {
		return "", &MissingError{Blobs: p.Missing}
	}
	idx, r, err := s.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	// Everything to write is read and checked first: a blob missing now
	// changes nothing either.
	type job struct {
		a    Action
		data []byte
		now  *Version
		old  []byte // the contents replaced, kept for the undo
	}
	var jobs []job
	var missing []string
	for _, a := range p.Actions {
		if a.Conflict && !p.Force {
			continue
		}
		now := current(a.Root, a.Path)
		if !sameVersion(now, a.Now) && !p.Force {
			continue // changed since the plan: left alone
		}
		j := job{a: a, now: now}
		if a.Op == Restore && a.To.SHA256 != "" {
			if j.data, err = readBlobIn(r, a.To.SHA256); err != nil {
				missing = append(missing, a.To.SHA256)
				continue
			}
		}
		if now != nil && now.SHA256 != "" {
			old, err := readFileIn(a.Root, a.Path)
			if err != nil || hashHex(old) != now.SHA256 {
				return "", fmt.Errorf("rewind: read %s before replacing it: changed meanwhile; nothing was changed", Display(a.Path))
			}
			j.old = old
		}
		jobs = append(jobs, j)
	}
	if len(missing) > 0 {
		return "", &MissingError{Blobs: missing}
	}
	if r2, err := s.openRoot(true); err != nil {
		return "", err
	} else {
		r2.Close()
	}
	id := newID()
	e := Entry{Key: id, Kind: EntryRewind, Undoes: p.Undoes, Conversation: p.Conversation}
	for _, j := range jobs {
		if j.old != nil && !hasBlob(r, j.now.SHA256, int64(len(j.old))) {
			if err := writeInRoot(r, path.Join(BlobsDir, j.now.SHA256), j.old, 0o600); err != nil {
				return "", fmt.Errorf("rewind: keep %s: %w; nothing was changed", Display(j.a.Path), err)
			}
		}
		fc := FileChange{Root: j.a.Root, Path: j.a.Path, Before: j.now, After: j.a.To}
		switch {
		case j.now == nil:
			fc.Change = Created
		case j.a.To == nil:
			fc.Change = Deleted
		default:
			fc.Change = Modified
		}
		if fc.Before != nil && fc.Before.SHA256 == "" && fc.Before.Link == "" {
			// A folder or unreadable file stood there: it is not replaced.
			continue
		}
		e.Files = append(e.Files, fc)
	}
	for _, f := range p.Folders {
		fc := FolderChange{Root: f.Root, Path: f.Path, Change: Created}
		if f.Op == Remove {
			fc.Change = Deleted
		}
		e.Folders = append(e.Folders, fc)
	}
	idx.entries = append(idx.entries, e)
	s.applyPolicy(idx)
	if err := s.writeIndex(r, idx); err != nil {
		return "", fmt.Errorf("rewind: %w; nothing was changed", err)
	}
	for _, f := range p.Folders {
		if f.Op == Restore {
			makeFolder(f)
		}
	}
	var errs []error
	for _, j := range jobs {
		if j.now != nil && j.now.SHA256 == "" && j.now.Link == "" {
			errs = append(errs, fmt.Errorf("%s: something that is not a file stands there; left alone", Display(j.a.Path)))
			continue
		}
		if err := put(j.a, j.data); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", Display(j.a.Path), err))
		}
	}
	// The folders to remove once the files are done, each only when it is
	// empty; the entry keeps only what was done, so that its undo makes
	// no folder that was left.
	done := make(map[fileKey]bool)
	for _, f := range p.Folders {
		if f.Op == Remove && removeFolder(f) || f.Op == Restore {
			done[fileKey{f.Root, f.Path}] = true
		}
	}
	if last := &idx.entries[len(idx.entries)-1]; last.Key == id && len(done) < len(last.Folders) {
		last.Folders = slices.DeleteFunc(last.Folders, func(f FolderChange) bool { return !done[fileKey{f.Root, f.Path}] })
		if err := s.writeIndex(r, idx); err != nil {
			errs = append(errs, err)
		}
	}
	s.sweep(r, idx)
	if len(errs) > 0 {
		return id, fmt.Errorf("rewind: %w", errors.Join(errs...))
	}
	return id, nil
}

// makeFolder makes the folder of f (and those above it) inside its root,
// unless something stands there.
func makeFolder(f FolderAction) {
	r, err := os.OpenRoot(f.Root)
	if err != nil {
		return
	}
	defer r.Close()
	if _, err := r.Lstat(f.Path); errors.Is(err, fs.ErrNotExist) {
		r.MkdirAll(f.Path, 0o755)
		syncDir(r, path.Dir(f.Path))
	}
}

// removeFolder removes the folder of f when it is an empty folder (not a
// link); it reports whether it is gone.
func removeFolder(f FolderAction) bool {
	r, err := os.OpenRoot(f.Root)
	if err != nil {
		return false
	}
	defer r.Close()
	fi, err := r.Lstat(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil || !fi.IsDir() {
		return false
	}
	if r.Remove(f.Path) != nil {
		return false // not empty: what is in it stays, and so does it
	}
	syncDir(r, path.Dir(f.Path))
	return true
}

func readFileIn(root, p string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readAll(r, p)
}

// put makes the file of a as the action says, inside its folder.
func put(a Action, data []byte) error {
	if err := os.MkdirAll(a.Root, 0o755); err != nil {
		return err
	}
	r, err := os.OpenRoot(a.Root)
	if err != nil {
		return err
	}
	defer r.Close()
	dir := path.Dir(a.Path)
	if a.Op == Remove {
		if err := r.Remove(a.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		syncDir(r, dir)
		return nil
	}
	if dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if a.To.Link != "" {
		if err := r.Remove(a.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := r.Symlink(a.To.Link, a.Path); err != nil {
			return err
		}
		syncDir(r, dir)
		return nil
	}
	return writeInRoot(r, a.Path, data, a.To.Mode.Perm())
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return "rewind-" + hex.EncodeToString(b[:])
}

// hasBlob reports whether the package holds the contents hash, of size
// bytes, already (content-addressed: stored once).
func hasBlob(r *os.Root, hash string, size int64) bool {
	fi, err := r.Lstat(path.Join(BlobsDir, hash))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}
