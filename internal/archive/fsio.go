package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// File and folder modes: a conversation is private.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// tempPrefix starts the name of every temporary file a save writes; a file
// left behind by a crash is removed by the next save.
const tempPrefix = ".spbridge-tmp-"

// MaxConversationSize is the largest conversation.json spbridge reads
// (512 MiB); a larger one opens as unreadable and is kept byte-identical.
// It is also the largest a save writes: a conversation whose encoding
// would pass it is written on one line, and one that would pass it even
// so is not written (a *TooLargeError). Images are read up to ImageCap
// each, the most a saved conversation keeps.
const MaxConversationSize = 512 << 20

// sizeLimit is MaxConversationSize, for reading and writing alike (tests
// lower it).
var sizeLimit int64 = MaxConversationSize

// LinkError reports a symbolic link where spbridge keeps a file or folder of
// its own (agent, agent/conversation.json, agent/images or an entry inside
// it). spbridge never follows such a link, writes through it or removes it:
// an operation that meets one fails with this error and changes nothing.
type LinkError struct {
	Path string // the link
}

func (e *LinkError) Error() string {
	return e.Path + " is a symbolic link, which spbridge neither follows nor removes"
}

// TooLargeError reports a file larger than spbridge reads.
type TooLargeError struct {
	Path  string
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("%s would be more than the %d bytes spbridge reads, even on one line: not written", e.Path, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes, more than the %d spbridge reads", e.Path, e.Size, e.Limit)
}

// errNotFolder is what dir.sub returns for a name that is neither a folder
// nor a link.
var errNotFolder = errors.New("not a folder")

// dir is a folder of the package, held open as an os.Root so that no name
// below it resolves outside it, and checked when opened to be the real
// folder at its place rather than a link. path names it in messages.
type dir struct {
	root *os.Root
	path string
}

// openDir opens the package folder itself (which may be reached through a
// link: the host chose the path). Messages name the paths below it under
// display ("" names them relative to the package).
func openDir(path, display string) (*dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &dir{root: r, path: display}, nil
}

func (d *dir) close() {
	if d != nil {
		d.root.Close()
	}
}

// rel is the path of name inside d, for messages.
func (d *dir) rel(name string) string {
	if d.path == "" {
		return name
	}
	return filepath.Join(d.path, name)
}

// sub opens the folder name inside d. It fails with an error matching
// fs.ErrNotExist when there is none, *LinkError when name is a link, and
// errNotFolder when it is something else.
func (d *dir) sub(name string) (*dir, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &LinkError{Path: d.rel(name)}
	case !fi.IsDir():
		return nil, fmt.Errorf("%s: %w", d.rel(name), errNotFolder)
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	// OpenRoot follows a link that stays inside d; one put in place after the
	// Lstat above is caught here.
	if got, err := r.Stat("."); err != nil || !os.SameFile(fi, got) {
		r.Close()
		return nil, fmt.Errorf("%s changed while opened", d.rel(name))
	}
	return &dir{root: r, path: d.rel(name)}, nil
}

// ensureSub opens the folder name inside d with mode 0700, creating it when
// absent, or replacing a file (not a link) that stands in its place.
func (d *dir) ensureSub(name string) (sub *dir, created bool, err error) {
	fi, err := d.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, false, &LinkError{Path: d.rel(name)}
	case fi.IsDir():
		if fi.Mode().Perm() != dirMode {
			if err := d.root.Chmod(name, dirMode); err != nil {
				return nil, false, err
			}
		}
		sub, err := d.sub(name)
		return sub, false, err
	default:
		if err := d.root.Remove(name); err != nil {
			return nil, false, err
		}
	}
	if err := d.root.Mkdir(name, dirMode); err != nil {
		return nil, false, err
	}
	sub, err = d.sub(name)
	return sub, err == nil, err
}

// lstat describes name inside d without following a link.
func (d *dir) lstat(name string) (fs.FileInfo, error) { return d.root.Lstat(name) }

// entries lists d's entries, sorted by name.
func (d *dir) entries() ([]fs.DirEntry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, nil
}

// readFile reads name inside d if it is a regular file of at most limit
// bytes, never following a link and never reading more than limit. It
// returns the file's stamp with the bytes.
func (d *dir) readFile(name string, limit int64) ([]byte, stamp, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, stamp{}, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, stamp{}, &LinkError{Path: d.rel(name)}
	case !fi.Mode().IsRegular():
		return nil, stamp{}, fmt.Errorf("%s is not a regular file", d.rel(name))
	case fi.Size() > limit:
		return nil, stamp{}, &TooLargeError{Path: d.rel(name), Size: fi.Size(), Limit: limit}
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return nil, stamp{}, err
	}
	defer f.Close()
	ffi, err := f.Stat()
	if err != nil {
		return nil, stamp{}, err
	}
	if !os.SameFile(fi, ffi) {
		return nil, stamp{}, fmt.Errorf("%s changed while read", d.rel(name))
	}
	if ffi.Size() > limit {
		return nil, stamp{}, &TooLargeError{Path: d.rel(name), Size: ffi.Size(), Limit: limit}
	}
	data, err := readAtMost(f, ffi.Size(), limit)
	switch {
	case err != nil:
		return nil, stamp{}, err
	case int64(len(data)) > limit:
		return nil, stamp{}, &TooLargeError{Path: d.rel(name), Size: int64(len(data)), Limit: limit}
	case int64(len(data)) != ffi.Size():
		return nil, stamp{}, fmt.Errorf("%s changed while read", d.rel(name))
	}
	return data, stampOf(ffi), nil
}

// readAtMost reads r to its end but never more than limit+1 bytes, into a
// buffer sized for the size r claims (at most limit) and one byte more, so
// that a reader that holds what it claims is read without a copy, and one
// that holds more is cut off past limit.
func readAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	lr := io.LimitReader(r, limit+1)
	data := make([]byte, 0, min(size, limit)+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // more than it claimed
		}
		n, err := lr.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// writeFileAtomic writes data to name inside d through a temporary file in
// d that is synced and renamed over the old file, so a crash leaves the old
// or the new bytes. The caller syncs d afterwards.
func (d *dir) writeFileAtomic(name string, data []byte) error {
	return d.writeFileWith(name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileWith is writeFileAtomic with the content written by write to the
// temporary file (unbuffered: write buffers what it needs).
func (d *dir) writeFileWith(name string, write func(io.Writer) error) (err error) {
	var f *os.File
	var tmp string
	for range 100 {
		tmp = tempPrefix + name + "-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err = d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			d.root.Remove(tmp)
		}
	}()
	if err = f.Chmod(fileMode); err != nil {
		return err
	}
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return d.root.Rename(tmp, name)
}

// sync makes d's entries (renames, removals) durable.
func (d *dir) sync() error {
	f, err := d.root.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// stamp identifies one version of a file cheaply, so that a save can tell a
// file it wrote or verified is still as it left it.
type stamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(fi fs.FileInfo) stamp {
	return stamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
}

// lstampOf returns the stamp of a regular file name inside d, and false when
// there is none (missing, a link, or not a regular file).
func (d *dir) lstamp(name string) (stamp, bool) {
	fi, err := d.root.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return stamp{}, false
	}
	return stampOf(fi), true
}

func isTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

func isLink(fi fs.FileInfo) bool { return fi.Mode()&fs.ModeSymlink != 0 }

// statFolder checks that dir is a folder (following a link to one), for
// the error of an operation op on it: "open package X: not a folder".
func statFolder(op, dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, by op
		}
		return fmt.Errorf("%s %s: %w", op, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s: %w", op, dir, ErrNotFolder)
	}
	return nil
}
