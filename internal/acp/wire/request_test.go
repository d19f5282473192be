package wire

import (
	"encoding/json"
	"testing"
)

// TestPromptContent: what the CLI is sent for each kind of prompt block.
func TestPromptContent(t *testing.T) {
	raw := `[{"type":"text","text":"Look at this:"},
	  {"type":"resource_link","uri":"file:///w/notes.md","name":"notes.md"},
	  {"type":"resource","resource":{"uri":"file:///w/src/app.go","mimeType":"text/x-go","text":"package app\n"}},
	  {"type":"resource","resource":{"uri":"file:///w/empty.txt","text":""}},
	  {"type":"resource","resource":{"uri":"file:///w/logo.png","mimeType":"image/png","blob":"iVBORw=="}},
	  {"type":"resource","resource":{"uri":"file:///w/a.pdf","mimeType":"application/pdf","blob":"JVBE"}}]`
	text, images, err := Prompt(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := "Look at this:\n[notes.md](file:///w/notes.md)\n" +
		"[app.go](file:///w/src/app.go)\n<context ref=\"file:///w/src/app.go\">\npackage app\n\n</context>\n" +
		"[empty.txt](file:///w/empty.txt)\n<context ref=\"file:///w/empty.txt\">\n\n</context>\n" +
		"[a.pdf](file:///w/a.pdf)"
	if text != want {
		t.Errorf("text\n%q\nwant\n%q", text, want)
	}
	if len(images) != 1 || images[0].MimeType != "image/png" || string(images[0].Data) != "\x89PNG" {
		t.Errorf("images %v", images)
	}
	for _, bad := range []string{`[{"type":"resource"}]`, `[{"type":"resource","resource":{"uri":"x","mimeType":"image/png","blob":"!"}}]`, `[{"type":"audio","data":""}]`} {
		if _, _, err := Prompt(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
