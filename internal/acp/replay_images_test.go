package acp

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"spbridge/internal/archive"
)

// TestLoadReplaysUserImages: session/load replays a user message's images
// after its text as user_message_chunk image content (the bytes kept in
// agent/images/, base64), in their order; an image the package no longer
// holds replays as the omitted-image text; a message without images
// replays its text alone.
func TestLoadReplaysUserImages(t *testing.T) {
	pkg := newPackage(t)
	png1 := append([]byte("\x89PNG\r\n\x1a\n"), "first"...)
	png2 := append([]byte("\x89PNG\r\n\x1a\n"), "second"...)
	image := func(data []byte) map[string]any {
		return map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(data)}
	}
	c := startServer(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("look at these"), image(png1), image(png2)}})
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("no picture")}})
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{image(png2)}})
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}

	type chunk struct{ kind, text, mime string }
	replayed := func() []chunk {
		t.Helper()
		c := startServer(t)
		_, seen := c.request("session/load", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
			"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}})
		var out []chunk
		for _, u := range updates(seen, "user_message_chunk") {
			content := u["content"].(map[string]any)
			switch content["type"] {
			case "text":
				out = append(out, chunk{"text", content["text"].(string), ""})
			case "image":
				data, err := base64.StdEncoding.DecodeString(content["data"].(string))
				if err != nil {
					t.Errorf("image data %v: %v", content["data"], err)
				}
				out = append(out, chunk{"image", string(data), content["mimeType"].(string)})
			default:
				t.Errorf("user_message_chunk content %v", content)
			}
		}
		c.wait()
		return out
	}
	want := []chunk{
		{"text", "look at these", ""}, {"image", string(png1), "image/png"}, {"image", string(png2), "image/png"},
		{"text", "no picture", ""},
		{"image", string(png2), "image/png"}, // an image alone: no empty text
	}
	if got := replayed(); !slices.Equal(got, want) {
		t.Errorf("replayed user chunks:\n%q\nwant\n%q", got, want)
	}

	// The first image's file is gone: it reads as omitted.
	b, err := archive.NewImageBlock("image/png", png1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(pkg, "agent", "images", b.String("sha256")+".png")); err != nil {
		t.Fatal(err)
	}
	want[1] = chunk{"text", "\n\n" + archive.ImageOmittedText, ""}
	if got := replayed(); !slices.Equal(got, want) {
		t.Errorf("with the first image missing, replayed user chunks:\n%q\nwant\n%q", got, want)
	}
}
