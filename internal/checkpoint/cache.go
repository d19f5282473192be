package checkpoint

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The baseline cache of one folder, in the state folder
// (<cacheDir>/<sha256 of the folder's absolute path>/): "index", a line a
// file (its path, metadata and content hash), and blobs/<sha256>, each
// file's contents as of the last walk, compressed (DEFLATE). It is an
// optimisation only: missing, damaged or stale, it is rebuilt (the next
// walk reads every file once), and a blob is checked against its hash
// whenever it is read.

// cacheHeader starts a cache index.
const cacheHeader = "spbridge checkpoint cache 1"

// record is a file as a walk found it, with its contents' hash once read
// (""	for a link, a file over the size limit, or one that could not be
// read: why is in problem).
type record struct {
	meta
	hash    string
	problem string // "over N MiB", "unreadable: ..."
}

// cache is one folder's baseline.
type cache struct {
	dir     string
	files   map[string]record
	orphans map[string]bool // blobs the baseline dropped (removed at the next Begin unless used again)
	swept   bool            // the blobs folder was swept of what the index does not use
	zw      *flate.Writer   // reused: a writer holds about a megabyte
	zbuf    bytes.Buffer
}

func cacheKey(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:16])
}

// loadCache reads the cache of folder abs under cacheDir; a missing or
// damaged one is empty.
func loadCache(cacheDir, abs string) *cache {
	c := &cache{dir: filepath.Join(cacheDir, cacheKey(abs)), files: make(map[string]record), orphans: make(map[string]bool)}
	data, err := os.ReadFile(filepath.Join(c.dir, "index"))
	if err == nil {
		if files, err := parseCacheIndex(data); err == nil {
			c.files = files
		}
	}
	return c
}

// parseCacheIndex reads a cache index; any line that is not as written is
// an error (the cache is then rebuilt).
func parseCacheIndex(data []byte) (map[string]record, error) {
	files := make(map[string]record)
	first := true
	for len(data) > 0 {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			return nil, errors.New("cache index: last line unfinished")
		}
		data = rest
		if first {
			if string(line) != cacheHeader {
				return nil, errors.New("cache index: not a cache index")
			}
			first = false
			continue
		}
		f := strings.Split(string(line), " ")
		if len(f) != 9 {
			return nil, errors.New("cache index: a line of the wrong length")
		}
		p, err1 := hex.DecodeString(f[0])
		link, err2 := hex.DecodeString(f[8])
		var n [6]int64
		for i := range n {
			v, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("cache index: %w", err)
			}
			n[i] = v
		}
		hash := f[7]
		if hash == "-" {
			hash = ""
		}
		if err1 != nil || err2 != nil || len(p) == 0 || (hash != "" && !validHash(hash)) || n[0] < 0 || !validRel(string(p)) {
			return nil, errors.New("cache index: a damaged line")
		}
		mode := fs.FileMode(n[3]) & (fs.ModeSymlink | fs.ModePerm)
		files[string(p)] = record{meta: meta{size: n[0], mtime: n[1], mode: mode, ino: uint64(n[4]), dev: uint64(n[2]), ctime: n[5], link: string(link)}, hash: hash}
	}
	if first {
		return nil, errors.New("cache index: empty")
	}
	return files, nil
}

// encodeCacheIndex writes what parseCacheIndex reads. Records without a
// hash are written without one: they are read again next time.
func encodeCacheIndex(files map[string]record) []byte {
	var b bytes.Buffer
	b.WriteString(cacheHeader + "\n")
	for p, r := range files {
		if r.hash == "" && !r.isLink() {
			continue
		}
		h := r.hash
		if h == "" {
			h = "-"
		}
		fmt.Fprintf(&b, "%x %d %d %d %d %d %d %s %x\n", p, r.size, r.mtime, int64(r.dev), int64(r.mode), int64(r.ino), r.ctime, h, r.link)
	}
	return b.Bytes()
}

// save writes the index (a temporary file renamed into place; not synced:
// a cache lost in a crash is rebuilt).
func (c *cache) save() error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	return writeTemp(filepath.Join(c.dir, "index"), encodeCacheIndex(c.files), false)
}

// blobPath is where the cache keeps the contents with this hash.
func (c *cache) blobPath(hash string) string { return filepath.Join(c.dir, "blobs", hash) }

// put stores data (whose hash is hash) in the cache, once.
func (c *cache) put(hash string, data []byte) error {
	p := c.blobPath(hash)
	if _, err := os.Lstat(p); err == nil {
		delete(c.orphans, hash)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	c.zbuf.Reset()
	if c.zw == nil {
		c.zw, _ = flate.NewWriter(&c.zbuf, flate.BestSpeed)
	} else {
		c.zw.Reset(&c.zbuf)
	}
	c.zw.Write(data)
	if err := c.zw.Close(); err != nil {
		return err
	}
	delete(c.orphans, hash)
	err := writeTemp(p, c.zbuf.Bytes(), false)
	if c.zbuf.Cap() > 1<<20 {
		c.zbuf = bytes.Buffer{} // a large file's buffer is not kept
	}
	return err
}

// get reads the contents with this hash back, checked against it; limit
// bounds what is read.
func (c *cache) get(hash string, limit int64) ([]byte, error) {
	return readBlob(c.blobPath(hash), hash, limit, true)
}

// readBlob reads the blob at p, inflated when compressed, and checks that
// its contents hash to hash.
func readBlob(p, hash string, limit int64, compressed bool) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if compressed {
		zr := flate.NewReader(bufio.NewReader(f))
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrDamagedBlob, err)
	case int64(len(data)) > limit:
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrDamagedBlob, limit)
	case hashHex(data) != hash:
		return nil, fmt.Errorf("%w: its contents do not match its name", ErrDamagedBlob)
	}
	return data, nil
}

// ErrDamagedBlob is matched by the error of a stored contents whose bytes
// do not match their hash.
var ErrDamagedBlob = errors.New("damaged contents")

// sweep removes the blobs the baseline dropped and no file uses any more;
// all unused blobs the first time (a crash may have left some).
func (c *cache) sweep() {
	used := make(map[string]bool, len(c.files))
	for _, r := range c.files {
		if r.hash != "" {
			used[r.hash] = true
		}
	}
	if !c.swept {
		c.swept = true
		if list, err := os.ReadDir(filepath.Join(c.dir, "blobs")); err == nil {
			for _, e := range list {
				if !used[e.Name()] {
					os.Remove(filepath.Join(c.dir, "blobs", e.Name()))
				}
			}
		}
	}
	for h := range c.orphans {
		if !used[h] {
			os.Remove(c.blobPath(h))
		}
	}
	clear(c.orphans)
}

// writeTemp writes data to p through a temporary file beside it renamed
// into place, synced first when sync is set; the file is 0600.
func writeTemp(p string, data []byte, sync bool) (err error) {
	dir, name := filepath.Split(p)
	var f *os.File
	var tmp string
	for range 100 {
		tmp = filepath.Join(dir, ".spbridge-tmp-"+name+"-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if sync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func hashHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// validHash reports whether s is 64 lowercase hex digits.
func validHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validRel reports whether p is a relative slash-separated path that
// stays inside its folder: no empty, "." or ".." element, no leading
// slash, no NUL.
func validRel(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}
