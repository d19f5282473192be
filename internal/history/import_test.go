package history

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

var update = flag.Bool("update", false, "rewrite the golden files of the imports")

const (
	claudeFixture = "testdata/claude/projects/-work-project/ca0632fd-a8b0-4a1c-9271-caa77e5d4c40.jsonl"
	codexFixture  = "testdata/codex/sessions/2026/12/02/rollout-2026-12-02T05-37-53-01a23542-6502-7f33-80f4-cae31bfb0ab9.jsonl"
	claudeStopped = "testdata/claude-interrupt/projects/-work-project/06c063d3-5368-41f8-87b9-778f42872b06.jsonl"
	codexApp      = "testdata/codex-app/sessions/2026/12/02/rollout-2026-12-02T06-03-20-01a23559-b260-7371-9189-4fad4ef4b174.jsonl"
	codexImage    = "testdata/codex/sessions/2026/12/02/rollout-2026-12-02T05-37-56-01a23542-7241-71b3-8ca5-629e22deb51c.jsonl"
	codexPicture  = "testdata/codex-picture/sessions/2026/12/02/rollout-2026-12-02T09-49-32-01a23628-c9a8-74e0-8e3b-16baa728c919.jsonl"
)

func importFixture(t *testing.T, backend, path string) (*archive.Conversation, *Report) {
	t.Helper()
	conv, rep, err := ImportFile(backend, path, ImportOptions{NewID: itemmap.SequentialIDs()})
	if err != nil {
		t.Fatal(err)
	}
	return conv, rep
}

// TestImportGolden: each recorded session imports to its golden
// conversation.json, byte for byte in format 1's canonical encoding, and
// the backend told by the content is the one that wrote it.
func TestImportGolden(t *testing.T) {
	for _, tc := range []struct{ name, backend, path string }{
		{"claude", Claude, claudeFixture},
		{"claude-interrupt", Claude, claudeStopped},
		{"codex", Codex, codexFixture},
		{"codex-image", Codex, codexImage},
		{"codex-picture", Codex, codexPicture},
		{"codex-app", Codex, codexApp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv, rep := importFixture(t, "", tc.path)
			if rep.Backend != tc.backend || rep.Skipped != 0 || rep.Partial {
				t.Errorf("report %+v", rep)
			}
			got, err := conv.Encode()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", tc.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the import (run with -update to see how)", golden)
			}
			// What was imported reads back as format 1.
			back, err := archive.Decode(got)
			if err != nil || len(back.Items) != len(conv.Items) {
				t.Errorf("decode: %v", err)
			}
		})
	}
}

// kinds lists items as "type name status text", one a string.
func kinds(c *archive.Conversation) []string {
	var out []string
	for _, it := range c.Items {
		s := it.Type()
		if n := it.String("name"); n != "" {
			s += " " + n + " " + it.String("status")
		}
		if tx := it.String("text"); tx != "" {
			s += " " + tx
		}
		out = append(out, s)
	}
	return out
}

// TestImportClaude: the recorded Claude Code session's turns, tools (a
// failed one failed), subagent call, compaction, images, usage, cost and
// model.
func TestImportClaude(t *testing.T) {
	conv, rep := importFixture(t, Claude, claudeFixture)
	got := strings.Join(kinds(conv), "\n")
	for _, want := range []string{
		"user Say hello\nthinking The user greets me; I greet back.\nassistant Hello! How can I help?",
		"tool Bash succeeded\ntool Write succeeded\ntool Edit succeeded\ntool Bash failed\ntool Read succeeded",
		"user Ask a helper\ntool Agent succeeded\ntool Bash succeeded", // the subagent's own call under it
		"user /compact\nnotice Claude Code compacted the conversation.\nuser Anything else?\nassistant Nothing else.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("items lack\n%s\nin\n%s", want, got)
		}
	}
	if rep.Turns != 6 || rep.ID != "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40" || rep.Cwd != "/work/project" {
		t.Errorf("report %+v", rep)
	}
	if conv.Provider != "claude-code" || conv.Model != "claude-opus-5-5" || conv.EstimatedCost.Kind != archive.CostReported ||
		conv.EstimatedCost.Dollars == "" || conv.Usage.Input == "" || conv.Usage.Input == "0" {
		t.Errorf("provider %q model %q cost %+v usage %+v", conv.Provider, conv.Model, conv.EstimatedCost, conv.Usage)
	}
	// The history: the user's messages with their images, the calls and
	// results as the CLI recorded them (the failed one an error), the
	// picture the Read returned after its result; the subagent's call is
	// not the conversation's.
	var images, errs, calls int
	for _, m := range conv.History {
		for _, b := range m.Content {
			switch b.Type() {
			case archive.BlockImage:
				images++
				if len(b.ImageData()) == 0 {
					t.Error("image block without its bytes")
				}
			case archive.BlockToolResult:
				if b.Bool("isError") {
					errs++
					if b.String("content") != "Exit code 3\nfailing" {
						t.Errorf("failed result %q", b.String("content"))
					}
				}
			case archive.BlockToolCall:
				calls++
			}
		}
	}
	if images != 2 || errs != 1 || calls != 6 {
		t.Errorf("history: %d images, %d errors, %d calls", images, errs, calls)
	}
	for _, it := range conv.Items {
		if it.Type() == archive.TypeUser && it.String("text") == "What colour is this?" && !it.Bool("hasImage") {
			t.Error("the message with an image is not marked hasImage")
		}
	}
}

// TestImportClaudeInterrupt: the turn Claude Code recorded as interrupted
// while its command ran ends interrupted, the command stopped; the next
// message is a turn of its own.
func TestImportClaudeInterrupt(t *testing.T) {
	conv, rep := importFixture(t, Claude, claudeStopped)
	got := strings.Join(kinds(conv), "\n")
	want := "user Wait for me\nassistant Waiting a while.\ntool Bash cancelled\nnotice Interrupted.\nuser Never mind\nassistant Stopped, as you asked."
	if got != want || rep.Turns != 2 {
		t.Errorf("items\n%s\nwant\n%s", got, want)
	}
}

// TestImportCodex: the recorded Codex thread's two turns, commands (the
// failing one failed), patches, reasoning, the model's own calls in the
// history, usage and model.
func TestImportCodex(t *testing.T) {
	conv, rep := importFixture(t, Codex, codexFixture)
	got := strings.Join(kinds(conv), "\n")
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
		conv, _ := importFixture(t, Codex, tc.path)
		if got := strings.Join(kinds(conv), "\n"); !strings.HasPrefix(got, "user What colour is this?\nassistant It is ") {
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
	conv, rep := importFixture(t, Codex, codexApp)
	got := strings.Join(kinds(conv), "\n")
	want := "user List the files\nthinking Planning.\ndirections [ ] List the files\n[ ] Report\ntool shell succeeded\n" +
		"assistant There is one file: red.png.\nuser Tell me a long story\nnotice Interrupted."
	if got != want || rep.Turns != 2 {
		t.Errorf("items\n%s\nwant\n%s", got, want)
	}
}

// write writes a file under dir and returns its path.
func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	claudeUser  = `{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":"hello"}}`
	claudeReply = `{"type":"assistant","sessionId":"s1","message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}}`
)

// TestImportBadInput: lines that are not understood are skipped and
// counted in one notice; a cut last line, invalid UTF-8, a file that is
// not a session, a symbolic link and a missing file give clear results.
func TestImportBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Run("unknown lines", func(t *testing.T) {
		p := write(t, dir, "u.jsonl", claudeUser+"\nnot json\n"+`{"type":"brand-new-kind"}`+"\n"+claudeReply+"\n")
		conv, rep := importFixture(t, "", p)
		if rep.Skipped != 2 || rep.Partial {
			t.Errorf("report %+v", rep)
		}
		got := kinds(conv)
		if len(got) != 3 || got[0] != "user hello" || got[1] != "assistant hi" ||
			got[2] != "notice 2 lines of the session file were not understood and were skipped." {
			t.Errorf("items %q", got)
		}
	})
	t.Run("cut last line", func(t *testing.T) {
		p := write(t, dir, "c.jsonl", claudeUser+"\n"+claudeReply+"\n"+claudeReply[:40])
		conv, rep := importFixture(t, Claude, p)
		if rep.Skipped != 1 || !rep.Partial {
			t.Errorf("report %+v", rep)
		}
		if got := kinds(conv); len(got) != 3 || !strings.Contains(got[2], "(the last line was cut short)") {
			t.Errorf("items %q", got)
		}
	})
	t.Run("invalid UTF-8", func(t *testing.T) {
		p := write(t, dir, "i.jsonl", strings.Replace(claudeUser, "hello", "hel\xff\xfelo", 1)+"\n"+claudeReply+"\n")
		conv, _ := importFixture(t, Claude, p)
		if got := kinds(conv); len(got) != 2 || got[0] != "user hel\uFFFDlo" {
			t.Errorf("items %q", got)
		}
		if _, err := conv.Encode(); err != nil {
			t.Error(err)
		}
	})
	t.Run("not a session", func(t *testing.T) {
		p := write(t, dir, "n.jsonl", "hello\nworld\n")
		if _, _, err := ImportFile("", p, ImportOptions{}); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("err %v", err)
		}
		if _, _, err := ImportFile(Claude, p, ImportOptions{}); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("err %v", err)
		}
		if _, _, err := ImportFile("", write(t, dir, "e.jsonl", ""), ImportOptions{}); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("empty: err %v", err)
		}
	})
	t.Run("symbolic link", func(t *testing.T) {
		target := write(t, t.TempDir(), "outside.jsonl", claudeUser+"\n"+claudeReply+"\n")
		link := filepath.Join(dir, "link.jsonl")
		if err := os.Symlink(target, link); err != nil {
			t.Skip(err)
		}
		var ns *NotSessionError
		if _, _, err := ImportFile("", link, ImportOptions{}); !errors.As(err, &ns) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, _, err := ImportFile("", filepath.Join(dir, "none.jsonl"), ImportOptions{}); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		call := `{"type":"assistant","sessionId":"s1","message":{"id":"m2","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 9"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":2}}}`
		// As Claude Code writes an interrupt during a tool: the call's
		// error result, then the mark.
		res := `{"type":"user","sessionId":"s1","message":{"role":"user","content":[{"type":"tool_result","content":"[Request interrupted by user for tool use]","is_error":true,"tool_use_id":"t1"}]}}`
		stop := `{"type":"user","sessionId":"s1","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`
		p := write(t, dir, "x.jsonl", claudeUser+"\n"+call+"\n"+res+"\n"+stop+"\n"+strings.Replace(claudeUser, "hello", "again", 1)+"\n"+claudeReply+"\n")
		conv, rep := importFixture(t, Claude, p)
		got := strings.Join(kinds(conv), "\n")
		if rep.Turns != 2 || got != "user hello\ntool Bash cancelled\nnotice Interrupted.\nuser again\nassistant hi" {
			t.Errorf("turns %d items\n%s", rep.Turns, got)
		}
		// The call has a result, so that the history can be sent again.
		var results int
		for _, m := range conv.History {
			for _, b := range m.Content {
				if b.Type() == archive.BlockToolResult {
					results++
				}
			}
		}
		if results != 1 {
			t.Errorf("%d results", results)
		}
	})
}

// TestLineReaderLong: a line longer than the bound is skipped and counted
// without being held whole; the lines around it are read.
func TestLineReaderLong(t *testing.T) {
	old := maxLine
	maxLine = 1000
	defer func() { maxLine = old }()
	data := "a\n" + strings.Repeat("x", 300<<10) + "\nb\n" + strings.Repeat("y", 5000)
	lr := newLineReader(strings.NewReader(data))
	var lines []string
	for {
		l, ok := lr.Next()
		if !ok {
			break
		}
		lines = append(lines, string(l))
	}
	if strings.Join(lines, ",") != "a,b" || lr.TooLong != 2 || lr.Err() != nil {
		t.Errorf("lines %q, %d too long, %v", lines, lr.TooLong, lr.Err())
	}
}

// FuzzImport: any bytes as a session file of either CLI import without a
// panic, and what they give encodes as format 1.
func FuzzImport(f *testing.F) {
	for _, p := range []string{claudeFixture, codexFixture} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		lines := bytes.Split(data, []byte("\n"))
		for i := 0; i < len(lines); i += 7 {
			f.Add(bytes.Join(lines[i:min(i+7, len(lines))], []byte("\n")))
		}
	}
	f.Add([]byte(claudeUser + "\n" + claudeReply))
	f.Add([]byte("{\"type\":\"user\"\n\xff\n{}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, backend := range []string{"", Claude, Codex} {
			conv, _, err := ImportFile(backend, p, ImportOptions{NewID: itemmap.SequentialIDs()})
			if err != nil {
				continue
			}
			if _, err := conv.Encode(); err != nil {
				t.Fatalf("%s: encode: %v", backend, err)
			}
		}
	})
}
