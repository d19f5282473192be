//go:build unix

package claude

// Recordings of Claude Code's own session files, made the way a user makes
// them (claude -p, claude -p --resume) against the fake model API:
//
//	go test ./internal/claude -run TestRecord -record
//
// Each writes its session file(s) into testdata/history/ under a fixed
// name, with the throwaway folders' paths replaced by /work/project (and
// the config folder's by /home/user), so that the fixtures do not depend on the
// machine that recorded them.

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
	"spbridge/internal/history/historytest"
)

var record = flag.Bool("record", false, "record Claude Code's session files into testdata/history/ (needs the real claude)")

func has(s string, yes bool) func([]byte) bool {
	return func(body []byte) bool { return bytes.Contains(body, []byte(s)) == yes }
}

// sessionID is the session_id of claude's stream-json output (its
// result).
func sessionID(t *testing.T, out []byte) string {
	t.Helper()
	for _, l := range bytes.Split(out, []byte("\n")) {
		var v struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(l, &v) == nil && v.Type == "result" && v.SessionID != "" {
			return v.SessionID
		}
	}
	t.Fatalf("no session id in\n%s", out)
	return ""
}

func TestRecordClaude(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.ClaudePath(t)
	root := t.TempDir()
	work := filepath.Join(root, "project")
	home := filepath.Join(root, "home")
	for _, d := range []string{work, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "red.png"), redPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--output-format", "stream-json", "--verbose", "--allowedTools", "Bash,Write,Edit,Read,Agent,Task"}
	// turn runs one claude -p against a server of its own with replies.
	turn := func(stdin string, args []string, replies ...fakeapi.Reply) []byte {
		srv, err := fakeapi.NewAnthropic(replies...)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		return historytest.Run(t, work, srv.ClaudeEnv(home), stdin, bin, append(append([]string{"-p"}, args...), common...)...)
	}
	// Turn 1: thinking and text.
	id := sessionID(t, turn("", []string{"Say hello"}, fakeapi.Reply{Blocks: []fakeapi.Block{
		{Type: "thinking", Thinking: "The user greets me; I greet back."},
		{Text: "Hello! How can I help?"},
	}}))
	// Turn 2 (resumed): a command with output, a new file, an edit, a
	// failed command, an image read, then text.
	turn("", []string{"Use the tools", "--resume", id},
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Text: "Running a command."},
			{Type: "tool_use", ID: "toolu_bash1", Name: "Bash", Input: map[string]any{"command": "echo hello from bash", "description": "Say hello"}},
		}},
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Type: "tool_use", ID: "toolu_write1", Name: "Write", Input: map[string]any{"file_path": work + "/notes.txt", "content": "one\ntwo\nthree\n"}},
		}},
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Type: "tool_use", ID: "toolu_edit1", Name: "Edit", Input: map[string]any{"file_path": work + "/notes.txt", "old_string": "two", "new_string": "TWO"}},
		}},
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Type: "tool_use", ID: "toolu_bash2", Name: "Bash", Input: map[string]any{"command": "echo failing >&2; exit 3", "description": "Fail"}},
		}},
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Type: "tool_use", ID: "toolu_read1", Name: "Read", Input: map[string]any{"file_path": work + "/red.png"}},
		}},
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Text: "Done: the file is edited, the command failed with 3, and the picture is red."},
		}},
	)
	// Turn 3: a subagent (claude runs it in the background and reports
	// in a turn of its own).
	turn("", []string{"Ask a helper", "--resume", id},
		fakeapi.Reply{Match: has("toolu_agent1", false), Blocks: []fakeapi.Block{
			{Type: "tool_use", ID: "toolu_agent1", Name: "Agent", Input: map[string]any{"description": "Count files", "prompt": "Count the files in the folder and report.", "subagent_type": "general-purpose"}},
		}},
		fakeapi.Reply{Match: has("toolu_agent1", false), Blocks: []fakeapi.Block{
			{Type: "tool_use", ID: "toolu_sub1", Name: "Bash", Input: map[string]any{"command": "ls | wc -l", "description": "Count"}},
		}},
		fakeapi.Reply{Match: has("toolu_agent1", false), Blocks: []fakeapi.Block{{Text: "There are 2 files."}}},
		fakeapi.Reply{Match: has("task-notification", false), Blocks: []fakeapi.Block{{Text: "A helper is counting."}}},
		fakeapi.Reply{Match: has("task-notification", true), Blocks: []fakeapi.Block{{Text: "The helper counted 2 files."}}},
	)
	// Turn 4: an image in the user's message.
	img, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "What colour is this?"},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": redPNG}},
	}}})
	turn(string(img)+"\n", []string{"--input-format", "stream-json", "--resume", id},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "It is red."}}})
	// Turn 5: a compaction.
	turn("", []string{"/compact", "--resume", id},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "<summary>The user asked for tools; a file was edited; a helper counted files.</summary>"}}})
	// Turn 6: after it.
	turn("", []string{"Anything else?", "--resume", id},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Nothing else."}}})
	repl := strings.NewReplacer(work, "/work/project", home, "/home/user", munge(work), munge("/work/project"))
	for _, n := range historytest.Keep(t, filepath.Join(home, ".claude", "projects"), "*.jsonl", filepath.Join("claude", "projects"), repl) {
		t.Log(n)
	}
}

// TestRecordClaudeInterrupt records a session interrupted while a command
// runs, as an editor (or Esc in the terminal) interrupts claude: stream-json
// in, the interrupt control request once the command started, then a
// message after it.
func TestRecordClaudeInterrupt(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.ClaudePath(t)
	root := t.TempDir()
	work := filepath.Join(root, "project")
	home := filepath.Join(root, "home")
	for _, d := range []string{work, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := fakeapi.NewAnthropic(
		fakeapi.Reply{Blocks: []fakeapi.Block{
			{Text: "Waiting a while."},
			{Type: "tool_use", ID: "toolu_sleep1", Name: "Bash", Input: map[string]any{"command": "python3 -c 'import time; time.sleep(30)'", "description": "Wait"}},
		}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Stopped, as you asked."}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cmd := exec.Command(bin, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash")
	cmd.Dir = work
	cmd.Env = srv.ClaudeEnv(home)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	user := func(text string) {
		send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	}
	user("Wait for me")
	dec := json.NewDecoder(stdout)
	results := 0
	for results < 2 {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("claude's output ended: %v\n%s", err, stderr.String())
		}
		line, _ := json.Marshal(v)
		switch {
		case v["type"] == "assistant" && bytes.Contains(line, []byte("toolu_sleep1")):
			// The command runs (or is about to): interrupt the turn.
			send(map[string]any{"type": "control_request", "request_id": "int1", "request": map[string]any{"subtype": "interrupt"}})
		case v["type"] == "result":
			results++
			if results == 1 {
				user("Never mind")
			}
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Logf("claude: %v\n%s", err, stderr.String())
	}
	repl := strings.NewReplacer(work, "/work/project", home, "/home/user", munge(work), munge("/work/project"))
	for _, n := range historytest.Keep(t, filepath.Join(home, ".claude", "projects"), "*.jsonl", filepath.Join("claude-interrupt", "projects"), repl) {
		t.Log(n)
	}
}

// TestRecordClaudeFork records a session that resumed another as a fork
// (claude -p --resume ID --fork-session): a new session id and file that
// begins with the first session's lines.
func TestRecordClaudeFork(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.ClaudePath(t)
	root := t.TempDir()
	work := filepath.Join(root, "project")
	home := filepath.Join(root, "home")
	for _, d := range []string{work, filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--output-format", "stream-json", "--verbose"}
	turn := func(args []string, replies ...fakeapi.Reply) []byte {
		srv, err := fakeapi.NewAnthropic(replies...)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		return historytest.Run(t, work, srv.ClaudeEnv(home), "", bin, append(append([]string{"-p"}, args...), common...)...)
	}
	id := sessionID(t, turn([]string{"Remember the number 7"}, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "I will remember 7."}}}))
	fork := sessionID(t, turn([]string{"What was the number?", "--resume", id, "--fork-session"}, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "It was 7."}}}))
	if fork == id {
		t.Fatalf("the fork kept the session id %s", id)
	}
	repl := strings.NewReplacer(work, "/work/project", home, "/home/user", munge(work), munge("/work/project"))
	for _, n := range historytest.Keep(t, filepath.Join(home, ".claude", "projects"), "*.jsonl", filepath.Join("claude-fork", "projects"), repl) {
		t.Log(n)
	}
}

// redPNG is the 4×4 "red PNG" the recordings of 2026-12-02 sent; its last
// chunks are cut short, so codex could not read it (codex-image: "image
// content omitted") while the fake Anthropic API took it as it was.
var redPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x04\x00\x00\x00\x04\x08\x02\x00\x00\x00&\x93\t)\x00\x00\x00\x10IDATx\x9cc\xf8\xcf\xc0\x00\x85\x10\x0c\x00\x95\x04\x0f\xf1!\x9a\x02_\x00\x00\x00\x00IEND\xaeB`\x82")
