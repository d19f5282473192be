package checkpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sync/errgroup"
)

// meta is what a metadata walk records of a file: the size, modification
// time (ns), mode, inode, device and change time (ns; the last three where
// the system has them), and a link's target. Two records that are equal
// say the file was not touched, as git's index does: its bytes are not
// read again.
type meta struct {
	size  int64
	mtime int64
	mode  fs.FileMode
	ino   uint64
	dev   uint64
	ctime int64
	link  string
}

func (m meta) isLink() bool { return m.mode&fs.ModeSymlink != 0 }

func metaOf(fi fs.FileInfo) meta {
	ino, dev, ctime := sysMeta(fi)
	return meta{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode() & (fs.ModeSymlink | fs.ModePerm), ino: ino, dev: dev, ctime: ctime}
}

// walked is one walk of a folder: its files and links by path (relative,
// slash-separated, the bytes of the names as the system gave them), the
// folders inside it (walked, the same way: no ignored one), and the
// folders that could not be listed (their files are unknown, not
// deleted).
type walked struct {
	files      map[string]meta
	dirs       map[string]bool
	unreadable []string
	missing    bool // the folder itself is not there
}

// under reports whether p is inside one of the folders that could not be
// listed.
func (w *walked) under(p string) bool {
	for _, d := range w.unreadable {
		if d == "" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// ErrTooManyFiles is matched by the error of a walk of a folder holding
// more files than Options.MaxFiles: its turns are not checkpointed.
var ErrTooManyFiles = errors.New("more files than checkpoints cover")

// ErrTooLarge is matched by the error of a walk of a folder whose files
// (those whose contents are kept) hold more than Options.MaxTotalSize
// bytes: its turns are not checkpointed.
var ErrTooLarge = errors.New("more bytes than checkpoints cover")

// walkLimits bound a walk: the files it records, and the bytes of those
// of at most fileSize bytes (the files whose contents are kept).
type walkLimits struct {
	files           int
	total, fileSize int64
}

// maxIgnoreFile is the largest .gitignore (or .git/info/exclude) read.
const maxIgnoreFile = 1 << 20

// walker walks one folder through its os.Root: no name resolves outside
// it and no link is followed. Its subfolders are walked side by side, up
// to walkers at once: a walk is mostly the system's work of listing and
// stating each file, which runs on every core.
type walker struct {
	root   *os.Root
	skip   map[string]bool // paths not walked (spbridge's own folders inside)
	limits walkLimits
	g      errgroup.Group
	n      atomic.Int64 // files recorded so far
	bytes  atomic.Int64 // bytes of the files of kept contents recorded so far
	mu     sync.Mutex   // guards out
	out    *walked
}

// walkers is how many folders a walk lists at once.
var walkers = max(4, 2*runtime.GOMAXPROCS(0))

// walk walks the folder at abs. skip holds relative paths left out.
func walk(abs string, skip map[string]bool, limits walkLimits) (*walked, error) {
	out := &walked{files: make(map[string]meta), dirs: make(map[string]bool)}
	r, err := os.OpenRoot(abs)
	if errors.Is(err, fs.ErrNotExist) {
		out.missing = true
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	w := &walker{root: r, skip: skip, limits: limits, out: out}
	w.g.SetLimit(walkers)
	// .git/info/exclude of a repository at the folder's top, then the
	// .gitignore files of every level (walkDir), deeper ones ruling.
	patterns := w.readIgnore(".git/info/exclude", nil)
	err = w.walkDir("", nil, patterns)
	if werr := w.g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walkDir records the files of the folder rel and walks its subfolders,
// each on a goroutine of its own while fewer than walkers run, in this
// one otherwise.
func (w *walker) walkDir(rel string, comps []string, patterns []gitignore.Pattern) error {
	name := rel
	if name == "" {
		name = "."
	}
	f, err := w.root.Open(name)
	if err == nil && denied(rel) {
		f.Close()
		err = fs.ErrPermission
	}
	if err != nil {
		w.unreadable(rel)
		return nil
	}
	list, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		w.unreadable(rel)
		return nil
	}
	for _, e := range list {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			patterns = append(slices.Clip(patterns), w.readIgnore(join(rel, ".gitignore"), comps)...)
			break
		}
	}
	m := gitignore.NewMatcher(patterns)
	comps = slices.Clip(comps)
	type file struct {
		path string
		meta meta
	}
	var files []file
	var dirs []string
	for _, e := range list {
		n := e.Name()
		if n == ".git" {
			continue
		}
		p := join(rel, n)
		if w.skip[p] {
			continue
		}
		isDir := e.IsDir()
		if len(patterns) > 0 && m.Match(append(comps, n), isDir) {
			continue
		}
		if isDir {
			dirs = append(dirs, p)
			sub := slices.Clip(append(comps, n))
			if w.g.TryGo(func() error { return w.walkDir(p, sub, patterns) }) {
				continue
			}
			if err := w.walkDir(p, sub, patterns); err != nil {
				return err
			}
			continue
		}
		t := e.Type()
		if !t.IsRegular() && t&fs.ModeSymlink == 0 {
			continue // a device, pipe or socket holds no contents to keep
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone since listed
		}
		md := metaOf(fi)
		if md.isLink() {
			if md.link, err = w.root.Readlink(p); err != nil {
				continue
			}
		}
		files = append(files, file{p, md})
	}
	if w.n.Add(int64(len(files))) > int64(w.limits.files) {
		return fmt.Errorf("%w: over %d", ErrTooManyFiles, w.limits.files)
	}
	var size int64
	for _, f := range files {
		if !f.meta.isLink() && f.meta.size <= w.limits.fileSize {
			size += f.meta.size
		}
	}
	if w.bytes.Add(size) > w.limits.total {
		return fmt.Errorf("%w: over %d", ErrTooLarge, w.limits.total)
	}
	w.mu.Lock()
	for _, f := range files {
		w.out.files[f.path] = f.meta
	}
	for _, d := range dirs {
		w.out.dirs[d] = true
	}
	w.mu.Unlock()
	return nil
}

// unreadable records the folder rel as one that could not be listed.
func (w *walker) unreadable(rel string) {
	w.mu.Lock()
	w.out.unreadable = append(w.out.unreadable, rel)
	w.mu.Unlock()
}

// readIgnore reads the patterns of an ignore file inside the folder, each
// ruling below the folder comps; a file missing or unreadable gives none.
func (w *walker) readIgnore(p string, comps []string) []gitignore.Pattern {
	f, err := w.root.OpenFile(p, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxIgnoreFile)
	for sc.Scan() {
		s := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(s, "#") || strings.TrimSpace(s) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(s, comps))
	}
	return ps
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// deny, set by tests run by a user whom permissions do not stop, makes
// the paths it names unreadable.
var deny func(p string) bool

func denied(p string) bool { return deny != nil && deny(p) }
