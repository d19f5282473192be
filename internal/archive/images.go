package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ImageCap is the most image bytes a saved conversation keeps (20 MiB).
const ImageCap = 20_971_520

var imageExts = map[string]string{
	"image/png":  "png",
	"image/jpeg": "jpg",
	"image/gif":  "gif",
	"image/webp": "webp",
}

// imageExt returns the file extension for a MIME type, or "".
func imageExt(mimeType string) string { return imageExts[mimeType] }

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

// imageFileName returns the file name an image block's bytes are stored
// under, or "" when the block's hash or MIME type cannot name a file.
func imageFileName(b Block) string {
	hash, ext := b.String("sha256"), imageExt(b.String("mimeType"))
	if !validHash(hash) || ext == "" {
		return ""
	}
	return hash + "." + ext
}

// parseImageFileName splits a stored image's file name into its hash and
// extension, and reports whether the name is one spbridge would write.
func parseImageFileName(name string) (hash string, ok bool) {
	hash, ext, found := strings.Cut(name, ".")
	if !found || !validHash(hash) {
		return "", false
	}
	for _, e := range imageExts {
		if e == ext {
			return hash, true
		}
	}
	return "", false
}

// capImages applies the image cap to a history: counting images newest first
// (the last message's last block first), each hash once at its newest place,
// the first image that does not fit within ImageCap and every older one are
// omitted. It returns the hashes to omit and the image blocks to store, by
// file name. An image block without bytes (but one read from a file over
// the cap, counted by its size), or whose hash or type cannot name a file,
// is omitted.
func capImages(history []Message) (omit map[string]bool, keep map[string]Block) {
	// The maps are made at the first image: a history without one (a
	// turn's end looks at every block) makes none.
	var counted map[string]bool
	var total int64
	full := false
	for i := len(history) - 1; i >= 0; i-- {
		content := history[i].Content
		for j := len(content) - 1; j >= 0; j-- {
			b := content[j]
			if !b.isImage() {
				continue
			}
			if counted == nil {
				omit, keep, counted = make(map[string]bool), make(map[string]Block), make(map[string]bool)
			}
			hash := b.String("sha256")
			name := imageFileName(b)
			if counted[hash] {
				if !omit[hash] && name != "" {
					keep[name] = b
				}
				continue
			}
			counted[hash] = true
			size := b.storedSize()
			if full || name == "" || size < 0 || b.data == nil || total+size > ImageCap {
				// An image whose file is over the cap (its bytes not
				// held) is counted as any other, and never fits.
				full = full || (name != "" && size >= 0)
				omit[hash] = true
				continue
			}
			total += size
			keep[name] = b
		}
	}
	return omit, keep
}

// storedSize is the size of an image block's bytes: those it holds, else
// those of its file over ImageCap that was read without holding them; -1
// when it has none.
func (b Block) storedSize() int64 {
	switch {
	case b.data != nil:
		return int64(len(b.data))
	case b.overCap > 0:
		return b.overCap
	}
	return -1
}

// imageCheckLimit is the largest image file that is read to check its
// bytes against its name: a larger one reads as imageOmitted unread.
const imageCheckLimit = 256 << 20

// storedImage is an image file of agent/images as an image block refers
// to it.
type storedImage struct {
	data []byte // its bytes, when it is within ImageCap
	size int64  // its size
	st   stamp
	ok   bool // the file is there and its bytes hash to its name
}

// readStoredImage reads images/name, whose bytes must hash to hash. A file
// within ImageCap is read whole. A larger one (up to imageCheckLimit) is
// an image like any other when its bytes match: it is hashed as it is
// read, its bytes are not held, and the cap counts it by its size at the
// next save (where it never fits: it and every older image are saved as
// imageOmitted).
func readStoredImage(images *dir, name, hash string) storedImage {
	data, st, err := images.readFile(name, ImageCap)
	var tl *TooLargeError
	switch {
	case err == nil:
		return storedImage{data: data, size: int64(len(data)), st: st, ok: hashHex(data) == hash}
	case errors.As(err, &tl) && tl.Size <= imageCheckLimit:
		sum, size, st, err := images.hashFile(name, imageCheckLimit)
		return storedImage{size: size, st: st, ok: err == nil && sum == hash}
	}
	return storedImage{}
}

// hashFile returns the SHA-256 (lowercase hex) and the size of the regular
// file name inside d, read in pieces, and its stamp; a file larger than
// limit is not read.
func (d *dir) hashFile(name string, limit int64) (string, int64, stamp, error) {
	fi, err := d.root.Lstat(name)
	if err != nil {
		return "", 0, stamp{}, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return "", 0, stamp{}, &LinkError{Path: d.rel(name)}
	case !fi.Mode().IsRegular():
		return "", 0, stamp{}, fmt.Errorf("%s is not a regular file", d.rel(name))
	case fi.Size() > limit:
		return "", 0, stamp{}, &TooLargeError{Path: d.rel(name), Size: fi.Size(), Limit: limit}
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|openReadFlags, 0)
	if err != nil {
		return "", 0, stamp{}, err
	}
	defer f.Close()
	ffi, err := f.Stat()
	if err != nil {
		return "", 0, stamp{}, err
	}
	if !os.SameFile(fi, ffi) {
		return "", 0, stamp{}, fmt.Errorf("%s changed while read", d.rel(name))
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return "", 0, stamp{}, err
	case n > limit:
		return "", 0, stamp{}, &TooLargeError{Path: d.rel(name), Size: n, Limit: limit}
	case n != ffi.Size():
		return "", 0, stamp{}, fmt.Errorf("%s changed while read", d.rel(name))
	}
	return hex.EncodeToString(h.Sum(nil)), n, stampOf(ffi), nil
}
