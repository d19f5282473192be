package archive

import (
	"crypto/sha256"
	"encoding/hex"
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
// file name. An image block without bytes, or whose hash or type cannot name
// a file, is omitted.
func capImages(history []Message) (omit map[string]bool, keep map[string]Block) {
	omit = make(map[string]bool)
	keep = make(map[string]Block)
	counted := make(map[string]bool)
	var total int64
	full := false
	for i := len(history) - 1; i >= 0; i-- {
		content := history[i].Content
		for j := len(content) - 1; j >= 0; j-- {
			b := content[j]
			if b.Type() != BlockImage {
				continue
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
			if full || name == "" || b.data == nil || total+int64(len(b.data)) > ImageCap {
				full = full || (name != "" && b.data != nil)
				omit[hash] = true
				continue
			}
			total += int64(len(b.data))
			keep[name] = b
		}
	}
	return omit, keep
}
