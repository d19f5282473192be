package history_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
)

// noisePNG is a PNG of noise of about n bytes: a photograph's size, which
// no compression makes smaller.
func noisePNG(t testing.TB, n int) []byte {
	t.Helper()
	side := 1
	for side*side*3 < n {
		side++
	}
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imagesIn counts the images of the conversation's history whose bytes
// are want's.
func imagesIn(t *testing.T, conv *archive.Conversation, want []byte) int {
	t.Helper()
	n := 0
	for _, m := range conv.History {
		for _, b := range m.Content {
			if b.Type() == archive.BlockImage {
				if !bytes.Equal(b.ImageData(), want) {
					t.Errorf("an image of %d bytes, want the %d sent", len(b.ImageData()), len(want))
				}
				n++
			}
		}
	}
	return n
}

// bluePNG is a well-formed 8×8 blue PNG (what codex-picture sent).
func bluePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{0, 0, 255, 255}}, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// TestBigFirstLine: a session whose first message carries a picture of
// about 1 MB (a JSON line of 1.4 MB, past what listing read of a file's
// head) is listed with its folder and title, found by its id, and
// imported with its picture: a Claude Code session file and a Codex
// rollout, as the CLIs write them.
func TestBigFirstLine(t *testing.T) {
	pic := noisePNG(t, 1<<20)
	b64 := base64.StdEncoding.EncodeToString(pic)
	root := t.TempDir()
	opts := history.Options{Stores: stores, Dirs: dirs(filepath.Join(root, "claude"), filepath.Join(root, "codex"))}

	claudeID := "7d1c3a52-1b0e-4f7e-9a51-0c2b9e1d4f10"
	claudeLines := []string{
		`{"type":"queue-operation","operation":"enqueue","sessionId":"` + claudeID + `","content":"What is in this picture?"}`,
		`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"What is in this picture?"},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}}]},"uuid":"u1","sessionId":"` + claudeID + `","cwd":"/work/pictures"}`,
		strings.ReplaceAll(claudeReply, `"s1"`, `"`+claudeID+`"`),
	}
	claudePath := filepath.Join(opts.Dirs["claude"], "projects", "-work-pictures", claudeID+".jsonl")
	setFile(t, claudePath, []byte(strings.Join(claudeLines, "\n")+"\n"), base.Add(2*time.Hour))

	// The recorded codex exec -i turn, its picture made 1 MB.
	data, err := os.ReadFile(codexPicture)
	if err != nil {
		t.Fatal(err)
	}
	small := base64.StdEncoding.EncodeToString(bluePNG())
	if !bytes.Contains(data, []byte(small)) {
		t.Fatal("the recorded rollout does not hold its picture")
	}
	data = bytes.ReplaceAll(data, []byte(small), []byte(b64))
	codexID := "01a23628-c9a8-74e0-8e3b-16baa728c919"
	codexPath := filepath.Join(opts.Dirs["codex"], "sessions", "2026", "12", "02", filepath.Base(codexPicture))
	setFile(t, codexPath, data, base.Add(time.Hour))

	got, err := history.List(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := "claude " + claudeID + " /work/pictures What is in this picture? 12:00\n" +
		"codex " + codexID + " /work/project What colour is this? 11:00"
	if d := historytest.Describe(got); d != want {
		t.Errorf("list\n%s\nwant\n%s", d, want)
	}
	for _, tc := range []struct{ backend, id, path string }{{"claude", claudeID, claudePath}, {"codex", codexID, codexPath}} {
		e, err := history.Find(history.Options{Stores: stores, Backend: tc.backend, Dirs: dirs(opts.Dirs["claude"], opts.Dirs["codex"])}, tc.id)
		if err != nil || e.Path != tc.path {
			t.Errorf("%s: Find = %+v, %v", tc.backend, e, err)
			continue
		}
		// By its content (as spbridge import FILE reads it), and as found.
		for _, backend := range []string{"", tc.backend} {
			conv, rep := historytest.Import(t, stores, backend, tc.path)
			if rep.Backend != tc.backend || rep.Skipped != 0 {
				t.Errorf("%s: report %+v", tc.backend, rep)
			}
			if !conv.Items[0].Bool("hasImage") || imagesIn(t, conv, pic) != 1 {
				t.Errorf("%s: the picture was not imported: items %q", tc.backend, historytest.Kinds(conv))
			}
		}
	}
}

// TestListLineLongerThanImportTakes: listing reads a first line longer
// than Import takes whole (maxLine, lowered here below the picture's line):
// the session is listed all the same.
func TestListLineLongerThanImportTakes(t *testing.T) {
	old := *history.MaxLine
	*history.MaxLine = 1 << 20
	defer func() { *history.MaxLine = old }()
	b64 := base64.StdEncoding.EncodeToString(noisePNG(t, 2<<20))
	root := t.TempDir()
	opts := history.Options{Stores: stores, Dirs: dirs(filepath.Join(root, "claude"), filepath.Join(root, "codex"))}
	user := `{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 +
		`"}},{"type":"text","text":"And this one?"}]},"sessionId":"s1","cwd":"/w"}`
	setFile(t, filepath.Join(opts.Dirs["claude"], "projects", "-w", "s1.jsonl"), []byte(user+"\n"+claudeReply+"\n"), base)
	got, err := history.List(opts)
	if d := historytest.Describe(got); err != nil || d != "claude s1 /w And this one? 10:00" {
		t.Errorf("list %q, %v", d, err)
	}
}
