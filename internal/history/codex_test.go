package history

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
)

// redPNG is the 4×4 "red PNG" the recordings of 2026-12-02 sent; its last
// chunks are cut short, so codex could not read it (codex-image: "image
// content omitted") while the fake Anthropic API took it as it was.
var redPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x04\x00\x00\x00\x04\x08\x02\x00\x00\x00&\x93\t)\x00\x00\x00\x10IDATx\x9cc\xf8\xcf\xc0\x00\x85\x10\x0c\x00\x95\x04\x0f\xf1!\x9a\x02_\x00\x00\x00\x00IEND\xaeB`\x82")

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

func codexLines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

const (
	codexMeta    = `{"type":"session_meta","payload":{"id":"01a23542-0000-7000-8000-000000000001","cwd":"/w","thread_source":"user","source":"exec"}}`
	codexStarted = `{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`
)

func codexUser(text string) string {
	return `{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u","content":[{"type":"text","text":"` + text + `"}]}}}`
}

// TestImportCodexEvents: a user's picture (the data URL of their response
// item) in the history; a plan from update_plan; a turn codex recorded as
// aborted, with its command cancelled; a compaction.
func TestImportCodexEvents(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(redPNG)
	p := write(t, t.TempDir(), "rollout-x.jsonl", codexLines(
		codexMeta, codexStarted,
		`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,`+png+`"}]}}`,
		codexUser("look"),
		`{"type":"response_item","payload":{"type":"function_call","name":"update_plan","arguments":"{\"plan\":[{\"step\":\"Look\",\"status\":\"in_progress\"},{\"step\":\"Say\",\"status\":\"pending\"}]}","call_id":"c1"}}`,
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Plan updated"}}`,
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"m1","content":[{"type":"Text","text":"Red."}]}}}`,
		`{"type":"event_msg","payload":{"type":"task_complete"}}`,
		codexStarted, codexUser("run it"),
		`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"sleep 9\"}","call_id":"c2"}}`,
		`{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`,
		`{"type":"compacted","payload":{"message":"summary"}}`,
		codexStarted, codexUser("again"),
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"c3","command":["/bin/bash","-lc","echo it's"],"status":"completed","aggregated_output":"it's\n","exit_code":0}}}`,
	))
	conv, rep := importFixture(t, "", p)
	got := strings.Join(kinds(conv), "\n")
	want := "user look\ndirections [ ] Look\n[ ] Say\nassistant Red.\nuser run it\nnotice Interrupted.\nnotice Codex compacted the conversation.\n" +
		"user again\ntool shell succeeded\nnotice Interrupted."
	if got != want || rep.Turns != 3 || rep.Backend != Codex {
		t.Errorf("items\n%s\nwant\n%s\n%+v", got, want, rep)
	}
	if !conv.Items[0].Bool("hasImage") {
		t.Error("the picture's message is not marked")
	}
	var images int
	for _, m := range conv.History {
		for _, b := range m.Content {
			if b.Type() == archive.BlockImage && string(b.ImageData()) == string(redPNG) {
				images++
			}
		}
	}
	if images != 1 {
		t.Errorf("%d images in the history", images)
	}
	for _, it := range conv.Items {
		if it.Type() == archive.TypeTool && it.String("summary") != "echo it's" {
			t.Errorf("command %q", it.String("summary"))
		}
	}
}

// TestListCodexNames: a thread's name from codex's session index is its
// title; a subagent's thread is not listed.
func TestListCodexNames(t *testing.T) {
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "01")
	write(t, day, "rollout-2026-12-01T10-00-00-01a23542-0000-7000-8000-000000000001.jsonl", codexLines(codexMeta, codexStarted, codexUser("first words")))
	sub := strings.Replace(strings.ReplaceAll(codexMeta, "000000000001", "000000000002"), `"thread_source":"user"`, `"thread_source":"subagent"`, 1)
	write(t, day, "rollout-2026-12-01T10-00-00-01a23542-0000-7000-8000-000000000002.jsonl", codexLines(sub, codexStarted, codexUser("sub")))
	write(t, home, "session_index.jsonl", `{"id":"01a23542-0000-7000-8000-000000000001","thread_name":"Named by codex","updated_at":"x"}`+"\n")
	got, err := List(Options{Backend: Codex, CodexHome: home})
	if err != nil || len(got) != 1 || got[0].Title != "Named by codex" || got[0].Cwd != "/w" {
		t.Errorf("%s %v", describe(got), err)
	}
}
