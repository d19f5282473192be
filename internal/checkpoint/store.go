package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"spbridge/internal/canonjson"
)

// The layout inside a package.
const (
	Dir       = "agent/checkpoints"            // the checkpoints' folder
	IndexFile = "agent/checkpoints/index.json" // the index
	BlobsDir  = "agent/checkpoints/blobs"      // earlier contents, by SHA-256
)

// Policy bounds the checkpoints a package keeps: the last MaxTurns
// entries and at most MaxBytes of earlier contents (each counted once),
// the oldest dropped first (the newest entry is always kept). Zero
// fields take the defaults.
type Policy struct {
	MaxTurns int
	MaxBytes int64
}

// Defaults of Policy.
const (
	DefaultMaxTurns = 100
	DefaultMaxBytes = 512 << 20
)

func (p Policy) maxTurns() int {
	if p.MaxTurns > 0 {
		return p.MaxTurns
	}
	return DefaultMaxTurns
}

func (p Policy) maxBytes() int64 {
	if p.MaxBytes > 0 {
		return p.MaxBytes
	}
	return DefaultMaxBytes
}

// maxDropped is how many dropped keys the index remembers.
const maxDropped = 10_000

// ErrNoCheckpoints is matched by the error of a rewind of a package that
// holds no checkpoints (a conversation from before them, or a package
// moved without agent/checkpoints).
var ErrNoCheckpoints = errors.New("this conversation has no checkpoints of its files: only its conversation can be rewound")

// Store is a package's checkpoints: the index and the earlier contents.
// Its methods may be called from any goroutine; they run one at a time.
// The caller holds the package's lock (other processes stay out).
type Store struct {
	dir    string
	base   string // the folder holding the package, absolute
	policy Policy
	mu     sync.Mutex
}

// Open opens the checkpoints of the package at dir (nothing is read or
// written until a method needs it). The folders inside the one holding
// the package (its parent: the session's working folder by default) are
// kept relative to it as well, so that a rewind finds them where the
// package is now after the package moved with its folder; the others
// are kept by their absolute path only.
func Open(dir string, p Policy) (*Store, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, base: filepath.Dir(abs), policy: p}, nil
}

// SetPackage says where the package whose checkpoints these are is, when
// they are kept elsewhere (a host-saved package's, in the state folder):
// the folders are kept relative to the one holding it.
func (s *Store) SetPackage(pkg string) {
	if abs, err := filepath.Abs(pkg); err == nil {
		s.mu.Lock()
		s.base = filepath.Dir(abs)
		s.mu.Unlock()
	}
}

// openRoot opens the package as an os.Root, and, when create is set,
// makes the checkpoints' folders (0700). A link where one of them belongs
// is refused.
func (s *Store) openRoot(create bool) (*os.Root, error) {
	r, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"agent", Dir, BlobsDir} {
		fi, err := r.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist) && create:
			if err := r.Mkdir(d, 0o700); err != nil {
				r.Close()
				return nil, err
			}
		case err != nil:
			if errors.Is(err, fs.ErrNotExist) {
				return r, nil
			}
			r.Close()
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			r.Close()
			return nil, fmt.Errorf("%s is a symbolic link, which spbridge does not follow", d)
		case !fi.IsDir():
			r.Close()
			return nil, fmt.Errorf("%s is not a folder", d)
		}
	}
	return r, nil
}

// readIndex reads the index; nil when there is none.
func (s *Store) readIndex(r *os.Root) (*index, error) {
	fi, err := r.Lstat(IndexFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", IndexFile)
	}
	data, err := r.ReadFile(IndexFile)
	if err != nil {
		return nil, err
	}
	idx, err := decodeIndex(data)
	if err != nil {
		var ve *VersionError
		if errors.As(err, &ve) {
			return nil, err
		}
		return nil, fmt.Errorf("%s is damaged: %w", IndexFile, err)
	}
	idx.resolve(s.base)
	return idx, nil
}

func (s *Store) writeIndex(r *os.Root, idx *index) error {
	data, err := canonjson.Encode(idx.related(s.base).value())
	if err != nil {
		return err
	}
	return writeInRoot(r, IndexFile, data, 0o600)
}

// Record keeps a turn's change set under key (the id of the notice item
// that ends the turn; userItem is the turn's user item): the earlier
// contents of the files it modified or deleted are copied from the
// tracker's cache into the package, then the index names them. An empty
// change set writes nothing, but the first turn's makes the index (so
// that a rewind knows where checkpoints began). Then the policy drops
// the oldest entries and the contents no entry uses.
//
// A damaged index is set aside (index.json.damaged) and a new one begun;
// one written by a newer spbridge is left alone (a *VersionError).
func (s *Store) Record(key, userItem string, cs ChangeSet) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.openRoot(true)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer r.Close()
	idx, err := s.readIndex(r)
	var ve *VersionError
	switch {
	case errors.As(err, &ve):
		return err
	case err != nil:
		if rerr := r.Rename(IndexFile, IndexFile+".damaged"); rerr != nil {
			return err
		}
		idx = nil
	}
	if idx == nil {
		idx = &index{since: userItem}
	} else if cs.Empty() {
		return nil
	}
	if !cs.Empty() {
		e := Entry{Key: key, Kind: EntryTurn, UserItem: userItem}
		for _, f := range cs.Files {
			if f.Before != nil && f.Before.SHA256 != "" {
				if err := s.keepBlob(r, f); err != nil {
					e.Skipped = append(e.Skipped, Skipped{Root: f.Root, Path: f.Path, Reason: "earlier contents lost: " + reason(err)})
					continue
				}
			}
			f.cache = nil
			e.Files = append(e.Files, f)
		}
		e.Skipped = append(e.Skipped, cs.Skipped...)
		e.Folders = slices.Clone(cs.Folders)
		idx.entries = append(idx.entries, e)
	}
	dropped := s.applyPolicy(idx)
	if err := s.writeIndex(r, idx); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if dropped {
		s.sweep(r, idx)
	}
	return nil
}

// keepBlob copies the earlier contents of f from the cache into the
// package, unless they are there.
func (s *Store) keepBlob(r *os.Root, f FileChange) error {
	name := path.Join(BlobsDir, f.Before.SHA256)
	if fi, err := r.Lstat(name); err == nil && fi.Mode().IsRegular() && fi.Size() == f.Before.Size {
		return nil
	}
	if f.cache == nil {
		return errors.New("not at hand")
	}
	data, err := f.cache.get(f.Before.SHA256, max(f.Before.Size, 0))
	if err != nil {
		return err
	}
	return writeInRoot(r, name, data, 0o600)
}

// applyPolicy drops the oldest entries past the policy; it reports
// whether it dropped any.
func (s *Store) applyPolicy(idx *index) bool {
	n := 0
	for len(idx.entries) > 1 && (len(idx.entries) > s.policy.maxTurns() || blobBytes(idx.entries) > s.policy.maxBytes()) {
		idx.dropped = append(idx.dropped, idx.entries[0].Key)
		idx.entries = idx.entries[1:]
		n++
	}
	if len(idx.dropped) > maxDropped {
		idx.dropped = idx.dropped[len(idx.dropped)-maxDropped:]
	}
	return n > 0
}

// blobBytes is the size of the earlier contents entries use, each once.
func blobBytes(entries []Entry) int64 {
	seen := make(map[string]bool)
	var n int64
	for _, e := range entries {
		for _, f := range e.Files {
			if f.Before != nil && f.Before.SHA256 != "" && !seen[f.Before.SHA256] {
				seen[f.Before.SHA256] = true
				n += f.Before.Size
			}
		}
	}
	return n
}

// used is the set of blobs the index's entries use.
func used(idx *index) map[string]bool {
	u := make(map[string]bool)
	if idx == nil {
		return u
	}
	for _, e := range idx.entries {
		for _, f := range e.Files {
			if f.Before != nil && f.Before.SHA256 != "" {
				u[f.Before.SHA256] = true
			}
		}
	}
	return u
}

// sweep removes the blobs no entry uses (and temporary files left over).
func (s *Store) sweep(r *os.Root, idx *index) {
	f, err := r.Open(BlobsDir)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	u := used(idx)
	for _, n := range names {
		if !u[n] {
			r.Remove(path.Join(BlobsDir, n))
		}
	}
}

// Entries are the entries the index holds, oldest first; none when it
// does not exist (ErrNoCheckpoints).
func (s *Store) Entries() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.openRoot(false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	idx, err := s.readIndex(r)
	if err != nil {
		return nil, err
	}
	if idx == nil {
		return nil, ErrNoCheckpoints
	}
	return idx.entries, nil
}

// Since is the id of the user item of the first turn whose files were
// checkpointed: the turns before it cannot be rewound. ErrNoCheckpoints
// when there are none.
func (s *Store) Since() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, r, err := s.open()
	if err != nil {
		return "", err
	}
	r.Close()
	return idx.since, nil
}

// Usage is what a package's checkpoints hold.
type Usage struct {
	Entries int   // entries kept (turns and rewinds)
	Turns   int   // of them, turns
	Dropped int   // entries the policy dropped (their files cannot be restored)
	Bytes   int64 // the size of the blobs folder's files
	Blobs   int   // files in it
	// Missing and Damaged are the blobs entries use that are not there,
	// or whose contents do not match their name.
	Missing, Damaged []string
	// Unused are blobs no entry uses (a sweep interrupted).
	Unused []string
}

// Usage reports the checkpoints' space and entries, each blob checked
// against its hash. ErrNoCheckpoints when there are none.
func (s *Store) Usage() (Usage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var u Usage
	r, err := s.openRoot(false)
	if err != nil {
		return u, err
	}
	defer r.Close()
	idx, err := s.readIndex(r)
	if err != nil {
		return u, err
	}
	if idx == nil {
		return u, ErrNoCheckpoints
	}
	u.Entries, u.Dropped = len(idx.entries), len(idx.dropped)
	for _, e := range idx.entries {
		if e.Kind == EntryTurn {
			u.Turns++
		}
	}
	want := used(idx)
	have := make(map[string]bool)
	if f, err := r.Open(BlobsDir); err == nil {
		list, _ := f.ReadDir(-1)
		f.Close()
		for _, e := range list {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			u.Blobs++
			u.Bytes += fi.Size()
			have[e.Name()] = true
			if !want[e.Name()] {
				u.Unused = append(u.Unused, e.Name())
			} else if _, err := readBlobIn(r, e.Name()); err != nil {
				u.Damaged = append(u.Damaged, e.Name())
			}
		}
	}
	for h := range want {
		if !have[h] {
			u.Missing = append(u.Missing, h)
		}
	}
	slices.Sort(u.Missing)
	slices.Sort(u.Damaged)
	slices.Sort(u.Unused)
	return u, nil
}

// readBlobIn reads the package's blob hash, checked against its name.
func readBlobIn(r *os.Root, hash string) ([]byte, error) {
	if !validHash(hash) {
		return nil, fmt.Errorf("%w: not a content name", ErrDamagedBlob)
	}
	name := path.Join(BlobsDir, hash)
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrDamagedBlob)
	}
	f, err := r.OpenFile(name, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	if hashHex(data) != hash {
		return nil, fmt.Errorf("%w: its contents do not match its name", ErrDamagedBlob)
	}
	return data, nil
}

// writeInRoot writes data to name inside r through a synced temporary
// file beside it renamed into place, then syncs the folder; the file gets
// perm.
func writeInRoot(r *os.Root, name string, data []byte, perm fs.FileMode) (err error) {
	dir, base := path.Split(name)
	var f *os.File
	var tmp string
	for range 100 {
		tmp = dir + ".spbridge-tmp-" + base + "-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
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
			r.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = r.Rename(tmp, name); err != nil {
		return err
	}
	syncDir(r, dir)
	return nil
}

// syncDir makes the entries of the folder dir inside r durable, where the
// system allows it.
func syncDir(r *os.Root, dir string) {
	if dir == "" {
		dir = "."
	}
	if f, err := r.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
}
