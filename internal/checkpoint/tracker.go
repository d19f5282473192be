package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Options bound what a Tracker keeps.
type Options struct {
	// MaxFileSize is the largest file whose contents are kept
	// (DefaultMaxFileSize when 0); a larger one is walked by its metadata
	// only, and a turn that touches it says so.
	MaxFileSize int64
	// MaxFiles is the most files a folder may hold (DefaultMaxFiles when
	// 0): a larger folder is not checkpointed (ErrTooManyFiles).
	MaxFiles int
	// MaxTotalSize is the most bytes the files whose contents are kept
	// (those up to MaxFileSize) may hold together (DefaultMaxTotalSize
	// when 0, as much as a package's checkpoints keep by default): a
	// larger folder is not checkpointed (ErrTooLarge), rather than copied
	// whole into the cache before its first turn (a home folder, or
	// /tmp).
	MaxTotalSize int64
	// Exclude are absolute paths inside the folders that are never walked
	// (the package's agent folder, the state folder).
	Exclude []string
}

// Defaults of Options.
const (
	DefaultMaxFileSize  = 10 << 20
	DefaultMaxFiles     = 200_000
	DefaultMaxTotalSize = DefaultMaxBytes
)

func (o Options) maxFileSize() int64 {
	if o.MaxFileSize > 0 {
		return o.MaxFileSize
	}
	return DefaultMaxFileSize
}

func (o Options) maxFiles() int {
	if o.MaxFiles > 0 {
		return o.MaxFiles
	}
	return DefaultMaxFiles
}

func (o Options) maxTotalSize() int64 {
	if o.MaxTotalSize > 0 {
		return o.MaxTotalSize
	}
	return DefaultMaxTotalSize
}

// limits are the bounds of a walk of a folder.
func (o Options) limits() walkLimits {
	return walkLimits{files: o.maxFiles(), total: o.maxTotalSize(), fileSize: o.maxFileSize()}
}

// Tracker follows the folders of one session across its turns: Begin
// before a turn, End after it. It is not safe for concurrent use (a
// session runs one turn at a time).
type Tracker struct {
	opt      Options
	cacheDir string
	roots    []*tracked
	begun    bool
	reads    int // files read (tests)
}

type tracked struct {
	abs   string
	skip  map[string]bool
	cache *cache
	start map[string]record // the folder at Begin
	dirs  *walked           // the walk of Begin, for its folders
	err   error             // why the folder is not followed this turn
	root  *os.Root          // the folder, open while Begin or End reads it
}

// open opens the folder for the files Begin or End reads; close closes it.
func (r *tracked) open() {
	r.root, _ = os.OpenRoot(r.abs)
}

func (r *tracked) close() {
	if r.root != nil {
		r.root.Close()
		r.root = nil
	}
}

// NewTracker follows roots (made absolute; the first is the session's
// working folder), keeping its baseline caches under cacheDir (a folder
// of the state folder, created when needed).
func NewTracker(roots []string, cacheDir string, o Options) (*Tracker, error) {
	t := &Tracker{opt: o, cacheDir: cacheDir}
	seen := make(map[string]bool)
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, err
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		tr := &tracked{abs: abs, skip: make(map[string]bool)}
		for _, x := range o.Exclude {
			xa, err := filepath.Abs(x)
			if err != nil {
				continue
			}
			if rel, err := filepath.Rel(abs, xa); err == nil && rel != "." && filepath.IsLocal(rel) {
				tr.skip[filepath.ToSlash(rel)] = true
			}
		}
		t.roots = append(t.roots, tr)
	}
	return t, nil
}

// Roots are the folders followed, absolute.
func (t *Tracker) Roots() []string {
	out := make([]string, len(t.roots))
	for i, r := range t.roots {
		out[i] = r.abs
	}
	return out
}

// Begin records the folders as they are before a turn: a metadata walk,
// reading only the files whose metadata differ from the baseline cache
// (every file the first time). A folder that cannot be walked is left out
// of this turn (the error says which); the others are followed.
func (t *Tracker) Begin() error {
	t.begun = true
	var errs []error
	for _, r := range t.roots {
		if r.cache == nil {
			r.cache = loadCache(t.cacheDir, r.abs)
		}
		r.cache.sweep()
		r.start, r.dirs, r.err = nil, nil, nil
		r.open()
		defer r.close()
		w, err := walk(r.abs, r.skip, t.opt.limits())
		if err != nil {
			r.err = err
			errs = append(errs, fmt.Errorf("checkpoint %s: %w", r.abs, err))
			continue
		}
		dirty := false
		next := make(map[string]record, len(w.files))
		for p, m := range w.files {
			old, ok := r.cache.files[p]
			if ok && old.meta == m && (old.hash != "" || m.isLink() || strings.HasPrefix(old.problem, "over ")) {
				next[p] = old
				continue
			}
			next[p] = t.read(r, p, m)
			dirty = true
		}
		for p, old := range r.cache.files {
			if _, ok := next[p]; !ok {
				if w.under(p) {
					next[p] = old // unknown this time, not gone
					continue
				}
				dirty = true
				if old.hash != "" {
					r.cache.orphans[old.hash] = true
				}
			}
		}
		r.cache.files = next
		if dirty {
			if err := r.cache.save(); err != nil {
				errs = append(errs, fmt.Errorf("checkpoint cache: %w", err))
			}
		}
		r.start = maps.Clone(next)
		r.dirs = &walked{dirs: w.dirs, unreadable: w.unreadable}
	}
	return errors.Join(errs...)
}

// read reads the file p of r for its hash and stores its contents in the
// cache; a file over the limit or that cannot be read gets a record
// without a hash that says why.
func (t *Tracker) read(r *tracked, p string, m meta) record {
	rec := record{meta: m}
	if m.isLink() {
		return rec
	}
	limit := t.opt.maxFileSize()
	if m.size > limit {
		rec.problem = "over " + sizeText(limit)
		return rec
	}
	t.reads++
	data, fm, err := readIn(r.root, p, limit)
	if err != nil {
		var tl *tooLarge
		if errors.As(err, &tl) {
			rec.problem = "over " + sizeText(limit)
		} else {
			rec.problem = "unreadable: " + reason(err)
		}
		return rec
	}
	rec.meta = fm
	rec.hash = hashHex(data)
	if err := r.cache.put(rec.hash, data); err != nil {
		rec.hash, rec.problem = "", "not kept: "+reason(err)
	}
	return rec
}

// tooLarge is the error of a file that grew past the limit while read.
type tooLarge struct{}

func (*tooLarge) Error() string { return "too large" }

// readIn reads the regular file p inside root (never through a link), at
// most limit bytes, and its metadata as read.
func readIn(root *os.Root, p string, limit int64) ([]byte, meta, error) {
	if root == nil {
		return nil, meta{}, errors.New("its folder could not be opened")
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, meta{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, meta{}, errors.New("not a regular file")
	}
	f, err := root.OpenFile(p, os.O_RDONLY|openReadFlags, 0)
	if err == nil && denied(p) {
		f.Close()
		err = &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
	}
	if err != nil {
		return nil, meta{}, err
	}
	defer f.Close()
	ffi, err := f.Stat()
	if err != nil {
		return nil, meta{}, err
	}
	if !os.SameFile(fi, ffi) {
		return nil, meta{}, errors.New("replaced while read")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, meta{}, err
	}
	if int64(len(data)) > limit {
		return nil, meta{}, &tooLarge{}
	}
	m := metaOf(ffi)
	if int64(len(data)) != m.size {
		return nil, meta{}, errors.New("changed while read")
	}
	return data, m, nil
}

// reason is an error's text without the path it names (the change set
// names it).
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// sizeText says a size in MiB, KiB or bytes.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// End walks the folders again after the turn (completed, failed or
// interrupted) and returns what changed since Begin: every file created,
// modified or deleted, whoever changed it (the agent's tools, a command,
// the user meanwhile), and the files it could not keep (over the size
// limit, unreadable). Only the files whose metadata changed are read. The
// baseline becomes the folders as they are now. End without Begin returns
// an empty change set.
func (t *Tracker) End() (ChangeSet, error) {
	var cs ChangeSet
	if !t.begun {
		return cs, nil
	}
	t.begun = false
	var errs []error
	limit := t.opt.maxFileSize()
	for _, r := range t.roots {
		if r.start == nil {
			continue
		}
		start, before := r.start, r.dirs
		r.start, r.dirs = nil, nil
		r.open()
		defer r.close()
		w, err := walk(r.abs, r.skip, t.opt.limits())
		if err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %s: %w", r.abs, err))
			continue
		}
		next := make(map[string]record, len(w.files))
		dirty := false
		paths := make([]string, 0, len(w.files))
		for p := range w.files {
			paths = append(paths, p)
		}
		for p := range start {
			if _, ok := w.files[p]; !ok {
				paths = append(paths, p)
			}
		}
		slices.Sort(paths)
		for _, p := range paths {
			old, had := start[p]
			m, has := w.files[p]
			switch {
			case had && !has && w.under(p):
				next[p] = old
				cs.Skipped = append(cs.Skipped, Skipped{Root: r.abs, Path: p, Reason: "unreadable: its folder could not be listed"})
				continue
			case had && has && old.meta == m:
				next[p] = old
				continue
			}
			var now record
			if has {
				now = t.read(r, p, m)
				next[p] = now
				dirty = true
				if had && same(old, now) {
					continue // touched, not changed
				}
			} else {
				dirty = true
			}
			if had && old.hash != "" {
				r.cache.orphans[old.hash] = true
			}
			if has && now.problem != "" {
				cs.Skipped = append(cs.Skipped, Skipped{Root: r.abs, Path: p, Reason: now.problem})
				continue
			}
			if had && old.problem != "" {
				cs.Skipped = append(cs.Skipped, Skipped{Root: r.abs, Path: p, Reason: old.problem + " before the turn"})
				continue
			}
			fc := FileChange{Root: r.abs, Path: p, cache: r.cache}
			switch {
			case !had:
				fc.Change = Created
			case !has:
				fc.Change = Deleted
			default:
				fc.Change = Modified
			}
			if had {
				fc.Before = versionOf(old)
			}
			if has {
				fc.After = versionOf(now)
			}
			countLines(&fc, r.cache, limit)
			cs.Files = append(cs.Files, fc)
		}
		cs.Folders = append(cs.Folders, folderChanges(r.abs, before, w)...)
		r.cache.files = next
		if dirty {
			if err := r.cache.save(); err != nil {
				errs = append(errs, fmt.Errorf("checkpoint cache: %w", err))
			}
		}
	}
	return cs, errors.Join(errs...)
}

// folderChanges are the folders created and deleted between two walks of
// root (sorted by path); a folder under one that either walk could not
// list is unknown, not changed.
func folderChanges(root string, before, after *walked) []FolderChange {
	if before == nil {
		return nil
	}
	var out []FolderChange
	for p := range after.dirs {
		if !before.dirs[p] && !before.under(p) {
			out = append(out, FolderChange{Root: root, Path: p, Change: Created})
		}
	}
	for p := range before.dirs {
		if !after.dirs[p] && !after.under(p) {
			out = append(out, FolderChange{Root: root, Path: p, Change: Deleted})
		}
	}
	slices.SortFunc(out, func(a, b FolderChange) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// same reports whether two records hold the same contents, mode and
// link.
func same(a, b record) bool {
	return a.hash == b.hash && a.mode == b.mode && a.link == b.link && a.problem == "" && b.problem == ""
}

func versionOf(r record) *Version {
	v := &Version{SHA256: r.hash, Size: r.size, Mode: r.mode}
	if r.isLink() {
		v.Link, v.Size = r.link, 0
	}
	return v
}

// countLines sets the change's line counts and whether it is binary, from
// the contents the cache holds of both sides.
func countLines(fc *FileChange, c *cache, limit int64) {
	text := func(v *Version) ([]byte, bool) {
		if v == nil || v.Link != "" || v.SHA256 == "" {
			return nil, true
		}
		data, err := c.get(v.SHA256, limit)
		if err != nil {
			return nil, false
		}
		return data, true
	}
	a, ok1 := text(fc.Before)
	b, ok2 := text(fc.After)
	if !ok1 || !ok2 {
		return
	}
	if isBinary(a) || isBinary(b) {
		fc.Binary = true
		return
	}
	fc.Added, fc.Removed = lineCounts(a, b)
}

// isBinary applies git's rule: a NUL in the first 8000 bytes.
func isBinary(data []byte) bool {
	return slices.Contains(data[:min(len(data), 8000)], 0)
}

// joinDisplay is how a change names a file: its path in the first folder,
// else its folder's path and its path.
func joinDisplay(first, root, p string) string {
	if root == first {
		return Display(p)
	}
	return Display(filepath.ToSlash(root) + "/" + p)
}
