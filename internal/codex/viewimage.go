package codex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/regfile"
)

// viewedImagePath is the file a completed imageView item (a view_image
// call) named, and the item's id; ok is false for any other line.
// The server reports only the path: the bytes the model saw are read here,
// for the history, the item and the editor.
func viewedImagePath(line []byte) (id, path string, ok bool) {
	if !bytes.Contains(line, []byte(`"imageView"`)) {
		return "", "", false
	}
	v := gjson.ParseBytes(line)
	if v.Get("method").String() != "item/completed" || v.Get("params.item.type").String() != "imageView" {
		return "", "", false
	}
	id, path = v.Get("params.item.id").String(), v.Get("params.item.path").String()
	return id, path, id != "" && path != ""
}

// errNotImage is returned for a file that is not an image format 1 keeps.
var errNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// readViewedImage reads the image a view_image call looked at: path, as
// codex reported it (relative paths against dir, the thread's folder). It
// must be a regular file (a link is followed, as codex followed it to show
// the model the file) of at most archive.ImageCap bytes, the most the
// conversation keeps, whose bytes are a PNG, JPEG, GIF or WebP image. The
// file is not confined to dir: codex already sent its bytes to the model,
// and the history keeps what the model saw.
func readViewedImage(dir, path string) (itemmap.Image, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	f, err := regfile.Open(path)
	if err != nil {
		return itemmap.Image{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return itemmap.Image{}, err
	}
	if !fi.Mode().IsRegular() {
		return itemmap.Image{}, fmt.Errorf("view image %s: not a regular file", path)
	}
	if fi.Size() > archive.ImageCap {
		return itemmap.Image{}, fmt.Errorf("view image %s: %d bytes, over %d", path, fi.Size(), archive.ImageCap)
	}
	data, err := io.ReadAll(io.LimitReader(f, archive.ImageCap+1))
	if err != nil {
		return itemmap.Image{}, fmt.Errorf("view image %s: %w", path, err)
	}
	if len(data) > archive.ImageCap {
		return itemmap.Image{}, fmt.Errorf("view image %s: over %d bytes", path, archive.ImageCap)
	}
	mimeType := http.DetectContentType(data)
	if _, err := archive.NewImageBlock(mimeType, nil); err != nil {
		return itemmap.Image{}, fmt.Errorf("view image %s: %w", path, errNotImage)
	}
	return itemmap.Image{MimeType: mimeType, Data: data}, nil
}
