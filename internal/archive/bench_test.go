package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// bigConversation builds a conversation of items items (half user, half
// assistant) whose history holds images images of imageSize bytes each.
func bigConversation(b *testing.B, items, images, imageSize int) *Conversation {
	b.Helper()
	c := &Conversation{Model: "sonnet", Provider: "claude-code"}
	for i := 0; i < items/2; i++ {
		u := NewItem(TypeUser)
		u.Set("text", fmt.Sprintf("message %d: please change the poster's headline to something shorter", i))
		a := NewItem(TypeAssistant)
		a.Set("text", fmt.Sprintf("reply %d: I changed the headline and moved the subtitle below the picture, keeping the grid.", i))
		c.Items = append(c.Items, u, a)
		content := []Block{NewTextBlock(u.String("text"))}
		if i < images {
			data := []byte(fmt.Sprintf("%0*d", imageSize, i))
			img, err := NewImageBlock("image/png", data)
			if err != nil {
				b.Fatal(err)
			}
			content = append(content, img)
		}
		c.History = append(c.History,
			Message{Role: "user", Content: content},
			Message{Role: "assistant", Content: []Block{NewTextBlock(a.String("text")), NewToolCallBlock(fmt.Sprintf("toolu_%d", i), "Edit", `{"file_path":"poster.json","old_string":"a","new_string":"b"}`)}},
			Message{Role: "tool", Content: []Block{NewToolResultBlock(fmt.Sprintf("toolu_%d", i), "Edit", "The file poster.json has been updated.", false)}})
	}
	return c
}

const (
	benchItems     = 10_000
	benchImages    = 300
	benchImageSize = 60_000 // 300 × 60 kB = 18 MB, under the cap
)

// BenchmarkLoad opens a package holding a 10,000-item conversation with 300
// images (every image read and its hash checked).
func BenchmarkLoad(b *testing.B) {
	pkg := b.TempDir()
	p, err := Open(pkg, KindDocument, true)
	if err != nil {
		b.Fatal(err)
	}
	p.Conv = bigConversation(b, benchItems, benchImages, benchImageSize)
	if _, err := p.Save(true); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		q, err := Open(pkg, KindDocument, true)
		if err != nil || len(q.Conv.Items) != benchItems {
			b.Fatalf("Open: %v", err)
		}
	}
}

// BenchmarkSaveFull saves the same conversation into a fresh package each
// time: every image and conversation.json written and synced.
func BenchmarkSaveFull(b *testing.B) {
	conv := bigConversation(b, benchItems, benchImages, benchImageSize)
	root := b.TempDir()
	n := 0
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		pkg := filepath.Join(root, fmt.Sprint(n))
		n++
		if err := os.Mkdir(pkg, 0o755); err != nil {
			b.Fatal(err)
		}
		p, err := Open(pkg, KindDocument, true)
		if err != nil {
			b.Fatal(err)
		}
		p.Conv = conv
		b.StartTimer()
		if _, err := p.Save(true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveUnchanged saves a conversation that did not change since the
// last save: nothing may be written.
func BenchmarkSaveUnchanged(b *testing.B) {
	pkg := b.TempDir()
	p, err := Open(pkg, KindDocument, true)
	if err != nil {
		b.Fatal(err)
	}
	p.Conv = bigConversation(b, benchItems, benchImages, benchImageSize)
	if _, err := p.Save(true); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := p.Save(true)
		if err != nil {
			b.Fatal(err)
		}
		if r.Changed() {
			b.Fatalf("unchanged save wrote %v", r)
		}
	}
}

// BenchmarkDecode reads the 10,000-item conversation of BenchmarkLoad,
// without its images, from memory: the JSON reader and the format's checks
// alone.
func BenchmarkDecode(b *testing.B) {
	data, err := bigConversation(b, benchItems, 0, 0).Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
