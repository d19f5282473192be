package session

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// replayBackend plays a recorded Claude stream through the mapper, as the
// claude backend does with the CLI's stdout.
type replayBackend struct {
	fakeBackend
	path string
}

func (r *replayBackend) Turn(_ context.Context, _ backend.Message, h backend.Host) *itemmap.TurnEnd {
	r.started = true
	data, err := os.ReadFile(r.path)
	if err != nil {
		return backend.FailBeforeStart(nil, h, err.Error(), "")
	}
	m := itemmap.NewClaude(nil)
	var end *itemmap.TurnEnd
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		res := m.Line(sc.Bytes())
		for _, c := range res.Changes {
			h.Change(c)
		}
		if res.End != nil {
			end = res.End
		}
	}
	return end
}

// TestToolImageSaved: the image Claude's Read returned is saved in
// agent/images/ under its SHA-256, and reads back as an image block after
// the tool's result.
func TestToolImageSaved(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(pkg, 0o755)
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	be := &replayBackend{fakeBackend: fakeBackend{name: "claude"}, path: "../../testdata/claude/tool_read_png.stdout.jsonl"}
	s := &Session{pkg: p, be: be, auditDir: t.TempDir()}
	if _, err := s.Send(context.Background(), "look at red.png", nil, nopHost{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII=")
	sum := sha256.Sum256(png)
	name := filepath.Join(pkg, "agent", "images", hex.EncodeToString(sum[:])+".png")
	if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, png) {
		t.Fatalf("ReadFile(%s) = %d bytes, %v; want the PNG the tool returned", name, len(got), err)
	}
	q, _ := archive.Open(pkg, archive.KindDocument, true)
	var blocks []string
	for _, m := range q.Conv.History {
		if m.Role == "tool" {
			for _, b := range m.Content {
				blocks = append(blocks, b.Type())
			}
		}
	}
	if len(blocks) != 2 || blocks[0] != archive.BlockToolResult || blocks[1] != archive.BlockImage {
		t.Errorf("reopened tool message blocks = %v, want [toolResult image]", blocks)
	}
}
