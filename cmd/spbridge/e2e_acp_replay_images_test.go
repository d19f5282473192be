package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeLoadReplaysUserImage drives the real claude through spbridge
// serve with the official ACP client: a prompt with an image, the session
// closed (saved), then loaded: the replay gives the user message's text
// and then its image, the same bytes, as user_message_chunk.
func TestE2EServeLoadReplaysUserImage(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "A red dot."}}})
	work := filepath.Dir(e.pkg)
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	dot := filepath.Join(t.TempDir(), "dot.png")
	os.WriteFile(dot, buf.Bytes(), 0o644)
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "what is this?", "images": []any{map[string]any{"mimeType": "image/png", "path": dot}}},
			map[string]any{"op": "ext", "method": "session/close", "params": map[string]any{"sessionId": "$s1"}}, // 3
			map[string]any{"op": "loadSession", "sessionId": e.pkg, "cwd": work, "meta": meta},                   // 4
			map[string]any{"op": "closeStdin"},
		},
	})
	response(t, events, 4)
	var got []string
	closed := false // the replay comes after the close's answer
	for _, ev := range events {
		if ev.Step != nil && *ev.Step == 3 {
			closed = true
		}
		if !closed || ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct{ Update map[string]any }
		json.Unmarshal(ev.Params, &p)
		if p.Update["sessionUpdate"] != "user_message_chunk" {
			continue
		}
		c := p.Update["content"].(map[string]any)
		switch c["type"] {
		case "text":
			got = append(got, "text: "+c["text"].(string))
		case "image":
			data, _ := base64.StdEncoding.DecodeString(c["data"].(string))
			got = append(got, fmt.Sprintf("image %v: same bytes %v", c["mimeType"], bytes.Equal(data, buf.Bytes())))
		}
	}
	if want := []string{"text: what is this?", "image image/png: same bytes true"}; !slices.Equal(got, want) {
		t.Errorf("replayed user chunks %q, want %q", got, want)
	}
}
