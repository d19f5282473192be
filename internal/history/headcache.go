package history

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"spbridge/internal/regfile"
	"spbridge/internal/statefile"
)

// HeadCacheFile is the name of the cache of the CLIs' session files'
// heads in the state folder.
const HeadCacheFile = "cli-sessions-cache.json"

// Bounds of the cache: how long a file not listed is kept, and what is
// read of the cache.
const (
	cacheUnused  = 30 * 24 * time.Hour
	maxCacheFile = 64 << 20
	// usedEvery is how stale a kept head's last use may be before it is
	// written again: a listing that only reads the cache writes nothing.
	usedEvery = 24 * time.Hour
)

// maxCachedHeads bounds how many files the cache keeps.
var maxCachedHeads = 50000

// headCacheVersion is the cache file's format; another is read as empty.
const headCacheVersion = 1

// HeadCache keeps, for each session file a listing read, what the listing
// needs of it (its id, folder, title, and whether it is a session at
// all), so that a listing reads only the files that changed since: a
// file's entry holds while its size, modification time and inode (where
// the system has one) are the same. It lives in one file in the state
// folder, replaced atomically; a cache that cannot be read (missing,
// corrupt, of another format) is built again. Several processes may share
// it: the last to write wins, and a head it lost is read again. Safe for
// concurrent use.
type HeadCache struct {
	path string

	// writeMu serializes the cache's writes; mu guards what follows it
	// and is never held across a write.
	writeMu sync.Mutex
	mu      sync.Mutex
	loaded  bool
	heads   map[string]*cachedHead
	dirty   bool
	indexes map[string]titleIndex // the stores' title indexes as last read, by path
	now     func() time.Time
}

// cachedHead is what the cache keeps of one file.
type cachedHead struct {
	Backend string `json:"backend"`
	Size    int64  `json:"size"`
	Mod     int64  `json:"mod"` // UnixNano
	Ino     uint64 `json:"ino,omitempty"`
	Used    int64  `json:"used"` // Unix seconds: when a listing last used it
	Session bool   `json:"session,omitempty"`
	ID      string `json:"id,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	// Title is the CLI's title in the file, else its first message, cut
	// (a store's title index, kept apart, comes before it).
	Title string `json:"title,omitempty"`
}

type headCacheFile struct {
	Version int                    `json:"version"`
	Heads   map[string]*cachedHead `json:"heads"`
}

// titleIndex is a store's title index (see TitleIndex) as last read, and
// the file's identity then.
type titleIndex struct {
	size, mod int64
	ino       uint64
	m         map[string]string
}

// NewHeadCache is the cache kept in stateDir (HeadCacheFile); nothing is
// read before the first listing.
func NewHeadCache(stateDir string) *HeadCache {
	return &HeadCache{path: filepath.Join(stateDir, HeadCacheFile), now: time.Now}
}

// load reads the cache file once; one that cannot be read is started
// again (and written at the next save).
func (hc *HeadCache) load() {
	if hc.loaded {
		return
	}
	hc.loaded = true
	hc.heads = map[string]*cachedHead{}
	f, err := regfile.Open(hc.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		hc.dirty = true
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCacheFile+1))
	var file headCacheFile
	if err != nil || len(data) > maxCacheFile || json.Unmarshal(data, &file) != nil || file.Version != headCacheVersion {
		hc.dirty = true
		return
	}
	for p, h := range file.Heads {
		if h != nil && h.Backend != "" {
			hc.heads[p] = h
		}
	}
}

// get is the entry kept for c, a file of the store named backend, false
// when none holds (none kept, or the file changed since).
func (hc *HeadCache) get(backend string, c File) (Entry, bool, bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.load()
	h := hc.heads[c.Path]
	if h == nil || h.Backend != backend || h.Size != c.Size || h.Mod != c.Mod.UnixNano() || h.Ino != c.Ino {
		return Entry{}, false, false
	}
	if now := hc.now().Unix(); now-h.Used > int64(usedEvery/time.Second) {
		h.Used, hc.dirty = now, true
	}
	return h.entry(c), h.Session, true
}

// put keeps what was read of c, a file of the store named backend.
func (hc *HeadCache) put(backend string, c File, e Entry, session bool) {
	h := &cachedHead{Backend: backend, Size: c.Size, Mod: c.Mod.UnixNano(), Ino: c.Ino, Session: session}
	if session {
		h.ID, h.Cwd, h.Title = e.ID, e.Cwd, e.Title
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.load()
	h.Used = hc.now().Unix()
	hc.heads[c.Path] = h
	hc.dirty = true
}

func (h *cachedHead) entry(c File) Entry {
	return Entry{Backend: h.Backend, ID: h.ID, Cwd: h.Cwd, Title: h.Title, UpdatedAt: c.Mod, Path: c.Path, Size: h.Size}
}

// save writes the cache when it changed: the heads used in the last
// cacheUnused, at most maxCachedHeads of them, the most recently used.
// A cache that cannot be written is only a slower next listing.
func (hc *HeadCache) save() error {
	hc.writeMu.Lock()
	defer hc.writeMu.Unlock()
	hc.mu.Lock()
	if !hc.dirty {
		hc.mu.Unlock()
		return nil
	}
	old := hc.now().Add(-cacheUnused).Unix()
	for p, h := range hc.heads {
		if h.Used < old {
			delete(hc.heads, p)
		}
	}
	if len(hc.heads) > maxCachedHeads {
		paths := make([]string, 0, len(hc.heads))
		for p := range hc.heads {
			paths = append(paths, p)
		}
		slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(hc.heads[b].Used, hc.heads[a].Used) })
		for _, p := range paths[maxCachedHeads:] {
			delete(hc.heads, p)
		}
	}
	data, err := json.Marshal(headCacheFile{Version: headCacheVersion, Heads: hc.heads})
	// A change made while this writes marks the cache dirty again.
	hc.dirty = err != nil
	hc.mu.Unlock()
	if err != nil {
		return err
	}
	err = os.MkdirAll(filepath.Dir(hc.path), 0o700)
	if err == nil {
		err = statefile.WriteAtomic(hc.path, data)
	}
	if err != nil {
		hc.mu.Lock()
		hc.dirty = true
		hc.mu.Unlock()
	}
	return err
}

// titles are the titles of the index at path (read with read), read
// again only when the file changed.
func (hc *HeadCache) titles(path string, read func(path string) map[string]string) map[string]string {
	fi, err := os.Lstat(path)
	hc.mu.Lock()
	n, ok := hc.indexes[path]
	hc.mu.Unlock()
	if err == nil && ok && n.m != nil && n.size == fi.Size() && n.mod == fi.ModTime().UnixNano() && n.ino == inode(fi) {
		return n.m
	}
	m := read(path)
	if err == nil {
		hc.mu.Lock()
		if hc.indexes == nil {
			hc.indexes = map[string]titleIndex{}
		}
		hc.indexes[path] = titleIndex{size: fi.Size(), mod: fi.ModTime().UnixNano(), ino: inode(fi), m: m}
		hc.mu.Unlock()
	}
	return m
}
