package audit

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The appends of a long-running process (spbridge serve) keep what they
// read of the state folder: the key, the index as last written, and each
// log's last record. Each is used again only while its file is the very
// one it was read from or written as (same file, size and modification
// time); anything else, another process's append or prune included, is
// read again. appendMu guards the cache.

var dirs = map[string]*dirCache{}

// dirCache is what is kept of one state folder.
type dirCache struct {
	stateDir string
	key      []byte
	keyInfo  os.FileInfo
	ix       *index
	ixInfo   os.FileInfo
	logs     map[string]logCache
	// keyMade is set when the last loadKey made the key: the index is
	// then new as well.
	keyMade bool
	// bw is the buffer records go to their log through, reused.
	bw *bufio.Writer
}

// logCache is a log's last record as this process wrote it.
type logCache struct {
	info os.FileInfo // the log when it was opened for that append
	size int64       // its size after it
	last *lastInfo
}

// cacheOf is the cache of stateDir.
func cacheOf(stateDir string) *dirCache {
	dc := dirs[stateDir]
	if dc == nil {
		if len(dirs) >= 64 {
			clear(dirs)
		}
		dc = &dirCache{stateDir: stateDir}
		dirs[stateDir] = dc
	}
	return dc
}

// forget drops everything kept of the folder (after an error).
func (dc *dirCache) forget() {
	dc.key, dc.keyInfo, dc.ix, dc.ixInfo, dc.logs = nil, nil, nil, nil, nil
}

// same reports whether fi is the file was as kept.
func same(kept, fi os.FileInfo) bool {
	return kept != nil && fi != nil && os.SameFile(kept, fi) && kept.Size() == fi.Size() && kept.ModTime().Equal(fi.ModTime())
}

// loadKey is the folder's key (made when missing).
func (dc *dirCache) loadKey() ([]byte, error) {
	path := filepath.Join(dc.stateDir, KeyFile)
	if fi, err := os.Stat(path); err == nil && same(dc.keyInfo, fi) {
		dc.keyMade = false
		return dc.key, nil
	}
	dc.forget()
	_, statErr := os.Stat(path)
	dc.keyMade = statErr != nil
	key, err := loadKey(dc.stateDir, true)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err == nil {
		dc.key, dc.keyInfo = key, fi
	}
	return key, nil
}

// readIndex is the folder's index as Append takes it: read and checked
// against key, or started again when missing (marked, unless the key was
// just made) or not matching the key (kept aside, marked).
func (dc *dirCache) readIndex(key []byte) (*index, error) {
	path := filepath.Join(dc.stateDir, IndexFile)
	if dc.ix != nil {
		if fi, err := os.Stat(path); err == nil && same(dc.ixInfo, fi) {
			return dc.ix, nil
		}
	}
	dc.ix, dc.ixInfo = nil, nil
	now := time.Now().UTC().Format(time.RFC3339)
	ix, err := readIndex(dc.stateDir, key)
	switch {
	case errors.Is(err, ErrIndexMissing) && dc.keyMade:
		ix = &index{logs: map[string]*entry{}} // the first use: key and index are new
	case errors.Is(err, ErrIndexMissing):
		ix = &index{logs: map[string]*entry{}, restarted: now + ": the index was missing"}
	case err != nil:
		// Kept for whoever looks into it; a new index starts, marked.
		bad := filepath.Join(dc.stateDir, IndexFile+".bad-"+strings.ReplaceAll(now, ":", ""))
		os.Rename(path, bad)
		ix = &index{logs: map[string]*entry{}, restarted: now + ": the index did not match the key; it was kept as " + filepath.Base(bad)}
	}
	return ix, nil
}

// writeIndex writes ix and keeps it.
func (dc *dirCache) writeIndex(ix *index, key []byte) error {
	dc.ix, dc.ixInfo = nil, nil
	if err := ix.write(dc.stateDir, key); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Join(dc.stateDir, IndexFile)); err == nil {
		dc.ix, dc.ixInfo = ix, fi
	}
	return nil
}

// lastOf is the last record of the log at path, opened as fi, and the end
// of its whole part, when this process wrote it last; ok is false when it
// must be read.
func (dc *dirCache) lastOf(path string, fi os.FileInfo) (_ *lastInfo, end int64, ok bool) {
	c, found := dc.logs[path]
	if !found || !os.SameFile(c.info, fi) || fi.Size() != c.size {
		return nil, 0, false
	}
	return c.last, c.size, true
}

// setLast keeps the last record of the log at path (opened as fi) and its
// size after the append.
func (dc *dirCache) setLast(path string, fi os.FileInfo, size int64, last *lastInfo) {
	if dc.logs == nil {
		dc.logs = map[string]logCache{}
	}
	if len(dc.logs) >= 1024 {
		clear(dc.logs)
	}
	dc.logs[path] = logCache{info: fi, size: size, last: last}
}

// forgetLog drops what is kept of the log at path.
func (dc *dirCache) forgetLog(path string) { delete(dc.logs, path) }
