package codex

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/archive"
)

var redPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII=")

func TestReadViewedImage(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("red.png", redPNG)
	write("notes.txt", []byte("not an image"))
	big, err := os.Create(filepath.Join(dir, "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	big.Write(redPNG)
	big.Truncate(archive.ImageCap + 1)
	big.Close()
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)

	for _, p := range []string{"red.png", filepath.Join(dir, "red.png")} {
		im, err := readViewedImage(dir, p)
		if err != nil || im.MimeType != "image/png" || !bytes.Equal(im.Data, redPNG) {
			t.Errorf("readViewedImage(%q) = %s %d bytes, %v; want the PNG", p, im.MimeType, len(im.Data), err)
		}
	}
	for _, p := range []string{"notes.txt", "big.png", "folder", "missing.png"} {
		if im, err := readViewedImage(dir, p); err == nil {
			t.Errorf("readViewedImage(%q) = %s, want an error", p, im.MimeType)
		}
	}
}

func TestViewedImagePath(t *testing.T) {
	for _, tc := range []struct {
		line     string
		id, path string
		ok       bool
	}{
		{`{"method":"item/completed","params":{"item":{"type":"imageView","id":"call_1","path":"/w/red.png"}}}`, "call_1", "/w/red.png", true},
		{`{"method":"item/started","params":{"item":{"type":"imageView","id":"call_1","path":"/w/red.png"}}}`, "", "", false},
		{`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"imageView"}}}`, "", "", false},
	} {
		id, path, ok := viewedImagePath([]byte(tc.line))
		if id != tc.id || path != tc.path || ok != tc.ok {
			t.Errorf("viewedImagePath(%q) = %q, %q, %v; want %q, %q, %v", tc.line, id, path, ok, tc.id, tc.path, tc.ok)
		}
	}
}
