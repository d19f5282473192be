package codex

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
	"spbridge/internal/claude"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
)

const (
	codexFixture = "testdata/history/codex/sessions/2026/12/02/rollout-2026-12-02T05-37-53-01a23542-6502-7f33-80f4-cae31bfb0ab9.jsonl"
	codexApp     = "testdata/history/codex-app/sessions/2026/12/02/rollout-2026-12-02T06-03-20-01a23559-b260-7371-9189-4fad4ef4b174.jsonl"
	codexImage   = "testdata/history/codex/sessions/2026/12/02/rollout-2026-12-02T05-37-56-01a23542-7241-71b3-8ca5-629e22deb51c.jsonl"
	codexPicture = "testdata/history/codex-picture/sessions/2026/12/02/rollout-2026-12-02T09-49-32-01a23628-c9a8-74e0-8e3b-16baa728c919.jsonl"
)

// stores are the stores an import tells a file's CLI among: Claude
// Code's and the Codex CLI's, as the table has them.
var stores = []history.Store{claude.History, History}

// dirs names the stores' folders ("" for a store's own).
func dirs(claudeDir, codexHome string) map[string]string {
	return map[string]string{"claude": claudeDir, "codex": codexHome}
}

// TestImportGolden: each recorded session imports to its golden
// conversation.json (historytest.Golden), and the backend told by the
// content is the one that wrote it.
func TestImportGolden(t *testing.T) {
	historytest.Golden(t, stores, []historytest.Case{
		{Name: "codex", Backend: "codex", Path: codexFixture},
		{Name: "codex-image", Backend: "codex", Path: codexImage},
		{Name: "codex-picture", Backend: "codex", Path: codexPicture},
		{Name: "codex-app", Backend: "codex", Path: codexApp},
	}, *update)
}

// TestImportCodex: the recorded Codex thread's two turns, commands (the
// failing one failed), patches, reasoning, the model's own calls in the
// history, usage and model.
func TestImportCodex(t *testing.T) {
	conv, rep := historytest.Import(t, stores, "codex", codexFixture)
	got := strings.Join(historytest.Kinds(conv), "\n")
	want := "user Say hello\nthinking Greeting back.\nassistant Hello! How can I help?\n" +
		"user Use the tools\nassistant Running a command.\ntool shell succeeded\ntool apply_patch succeeded\n" +
		"tool apply_patch succeeded\ntool shell failed\nassistant Done: notes.txt is edited and the command failed with 3."
	if got != want {
		t.Errorf("items\n%s\nwant\n%s", got, want)
	}
	if rep.Turns != 2 || conv.Provider != "codex" || conv.Model != "gpt-5.5" || conv.Usage.Input != "600" || conv.Usage.Output != "86" {
		t.Errorf("report %+v provider %q model %q usage %+v", rep, conv.Provider, conv.Model, conv.Usage)
	}
	var calls []string
	for _, m := range conv.History {
		for _, b := range m.Content {
			if b.Type() == archive.BlockToolCall {
				calls = append(calls, b.String("name")+" "+b.String("arguments"))
			}
		}
	}
	if len(calls) != 4 || calls[0] != `exec_command {"cmd":"echo hello from codex"}` {
		t.Errorf("calls %q", calls)
	}
}

// TestImportCodexPicture: the recorded `codex exec -i` turn with a picture
// codex read: the user's item is marked as having an image and the history
// holds the picture codex sent, byte for byte; the one codex could not read
// (codex-image) holds codex's own words for it and no image.
func TestImportCodexPicture(t *testing.T) {
	for _, tc := range []struct {
		path   string
		images int
	}{{codexPicture, 1}, {codexImage, 0}} {
		conv, _ := historytest.Import(t, stores, "codex", tc.path)
		if got := strings.Join(historytest.Kinds(conv), "\n"); !strings.HasPrefix(got, "user What colour is this?\nassistant It is ") {
			t.Errorf("%s: items\n%s", tc.path, got)
		}
		if conv.Items[0].Bool("hasImage") != (tc.images > 0) {
			t.Errorf("%s: hasImage %v", tc.path, conv.Items[0].Bool("hasImage"))
		}
		var images int
		for _, m := range conv.History {
			for _, b := range m.Content {
				if b.Type() == archive.BlockImage {
					images++
					if !bytes.Equal(b.ImageData(), bluePNG()) {
						t.Errorf("%s: the picture's bytes differ from what codex sent", tc.path)
					}
				}
			}
		}
		if images != tc.images {
			t.Errorf("%s: %d images in the history, want %d", tc.path, images, tc.images)
		}
	}
}

// TestImportCodexAppServer: a thread run through codex app-server: its
// reasoning, plan, command and answer, then a turn interrupted.
func TestImportCodexAppServer(t *testing.T) {
	conv, rep := historytest.Import(t, stores, "codex", codexApp)
	got := strings.Join(historytest.Kinds(conv), "\n")
	want := "user List the files\nthinking Planning.\ndirections [ ] List the files\n[ ] Report\ntool shell succeeded\n" +
		"assistant There is one file: red.png.\nuser Tell me a long story\nnotice Interrupted."
	if got != want || rep.Turns != 2 {
		t.Errorf("items\n%s\nwant\n%s", got, want)
	}
}

// cutPNG is the 4×4 "red PNG" the recordings of 2026-12-02 sent; its last
// chunks are cut short, so codex could not read it (codex-image: "image
// content omitted") while the fake Anthropic API took it as it was.
var cutPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x04\x00\x00\x00\x04\x08\x02\x00\x00\x00&\x93\t)\x00\x00\x00\x10IDATx\x9cc\xf8\xcf\xc0\x00\x85\x10\x0c\x00\x95\x04\x0f\xf1!\x9a\x02_\x00\x00\x00\x00IEND\xaeB`\x82")

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
	png := base64.StdEncoding.EncodeToString(cutPNG)
	p := historytest.Write(t, t.TempDir(), "rollout-x.jsonl", codexLines(
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
	conv, rep := historytest.Import(t, stores, "", p)
	got := strings.Join(historytest.Kinds(conv), "\n")
	want := "user look\ndirections [ ] Look\n[ ] Say\nassistant Red.\nuser run it\nnotice Interrupted.\nnotice Codex compacted the conversation.\n" +
		"user again\ntool shell succeeded\nnotice Interrupted."
	if got != want || rep.Turns != 3 || rep.Backend != "codex" {
		t.Errorf("items\n%s\nwant\n%s\n%+v", got, want, rep)
	}
	if !conv.Items[0].Bool("hasImage") {
		t.Error("the picture's message is not marked")
	}
	var images int
	for _, m := range conv.History {
		for _, b := range m.Content {
			if b.Type() == archive.BlockImage && string(b.ImageData()) == string(cutPNG) {
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
	historytest.Write(t, day, "rollout-2026-12-01T10-00-00-01a23542-0000-7000-8000-000000000001.jsonl", codexLines(codexMeta, codexStarted, codexUser("first words")))
	sub := strings.Replace(strings.ReplaceAll(codexMeta, "000000000001", "000000000002"), `"thread_source":"user"`, `"thread_source":"subagent"`, 1)
	historytest.Write(t, day, "rollout-2026-12-01T10-00-00-01a23542-0000-7000-8000-000000000002.jsonl", codexLines(sub, codexStarted, codexUser("sub")))
	historytest.Write(t, home, "session_index.jsonl", `{"id":"01a23542-0000-7000-8000-000000000001","thread_name":"Named by codex","updated_at":"x"}`+"\n")
	got, err := history.List(history.Options{Stores: stores, Backend: "codex", Dirs: dirs("", home)})
	if err != nil || len(got) != 1 || got[0].Title != "Named by codex" || got[0].Cwd != "/w" {
		t.Errorf("%s %v", historytest.Describe(got), err)
	}
}
