package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
)

// Fake claudes for the terminal display's tests: the test binary plays
// claude in stream-json mode when one of these variables is set.
const (
	fakeAsksEnv = "SPBRIDGE_FAKE_CLAUDE_ASKS" // the commands to ask about, one a line
	fakeEditEnv = "SPBRIDGE_FAKE_CLAUDE_EDIT"
	fakeSlowEnv = "SPBRIDGE_FAKE_CLAUDE_SLOW" // a FIFO the long command waits on
	// A FIFO the command waits on, which runs without a question after the
	// model's text (as one Claude Code allows by its own settings does).
	fakeUnaskedEnv = "SPBRIDGE_FAKE_CLAUDE_UNASKED"
)

// slowCommand is the command fakeClaudeSlow runs: longer than a narrow
// terminal is wide, over several lines.
const slowCommand = "for f in $(git ls-files '*.go'); do\n\tgofmt -l \"$f\" && go vet \"./$(dirname \"$f\")\"\ndone"

func init() {
	helperModes[fakeAsksEnv] = fakeClaudeAsks
	helperModes[fakeEditEnv] = fakeClaudeEdits
	helperModes[fakeSlowEnv] = fakeClaudeSlow
	helperModes[fakeUnaskedEnv] = fakeClaudeUnasked
}

// fakeStream is one fake claude session on standard input and output.
type fakeStream struct {
	in *bufio.Scanner
}

func newFakeStream() *fakeStream {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	return &fakeStream{in: in}
}

func (f *fakeStream) emit(v any) {
	data, _ := json.Marshal(v)
	os.Stdout.Write(append(data, '\n'))
}

// init says the session began, in the folder the fake runs in, as the
// real CLI does.
func (f *fakeStream) init() {
	cwd, _ := os.Getwd()
	f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": "fake-1", "model": "claude-sonnet-4-5", "cwd": cwd})
}

// waitUser waits for the user's message.
func (f *fakeStream) waitUser() bool {
	for f.in.Scan() {
		var m map[string]any
		if json.Unmarshal(f.in.Bytes(), &m) == nil && m["type"] == "user" {
			return true
		}
	}
	return false
}

// answer waits for the response to control request id and returns its
// behavior.
func (f *fakeStream) answer(id string) string {
	for f.in.Scan() {
		var c struct {
			Type     string
			Response struct {
				RequestID string `json:"request_id"`
				Response  struct{ Behavior string }
			}
		}
		if json.Unmarshal(f.in.Bytes(), &c) == nil && c.Type == "control_response" && c.Response.RequestID == id {
			return c.Response.Response.Behavior
		}
	}
	return ""
}

func (f *fakeStream) tool(msgID, id, name string, input any) {
	f.emit(map[string]any{"type": "assistant", "message": map[string]any{"id": msgID, "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{
		map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}})
}

func (f *fakeStream) result(id, content string, isError bool) {
	f.emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isError}}}})
}

func (f *fakeStream) finish(text string) {
	f.emit(map[string]any{"type": "assistant", "message": map[string]any{"id": "m-end", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{
		map[string]any{"type": "text", "text": text}}}})
	f.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": "fake-1", "total_cost_usd": 0.0042,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 100}})
}

// fakeClaudeAsks asks permission to run each command of $SPBRIDGE_FAKE_CLAUDE_ASKS
// in turn and ends its reply with the answers.
func fakeClaudeAsks() int {
	f := newFakeStream()
	if !f.waitUser() {
		return 0
	}
	f.init()
	var answers []string
	for i, cmd := range strings.Split(os.Getenv(fakeAsksEnv), "\n") {
		id, req := "toolu_"+string(rune('a'+i)), "perm-"+string(rune('a'+i))
		input := map[string]any{"command": cmd}
		f.tool("m"+id, id, "Bash", input)
		f.emit(map[string]any{"type": "control_request", "request_id": req, "request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash",
			"tool_use_id": id, "input": input}})
		behavior := f.answer(req)
		answers = append(answers, behavior)
		if behavior == "allow" {
			f.result(id, "ran "+cmd, false)
		} else {
			f.result(id, "denied", true)
		}
	}
	f.finish("answers: " + strings.Join(answers, ","))
	return 0
}

// fakeClaudeEdits makes one edit, allowed without asking.
func fakeClaudeEdits() int {
	f := newFakeStream()
	if !f.waitUser() {
		return 0
	}
	f.init()
	f.tool("m1", "toolu_e", "Edit", map[string]any{"file_path": "poem.txt", "old_string": "roses are red\n", "new_string": "roses are blue\n"})
	f.result("toolu_e", "The file poem.txt has been updated.", false)
	f.finish("edited")
	return 0
}

// fakeClaudeSlow thinks, then runs slowCommand, which lasts until
// something is written to the FIFO $SPBRIDGE_FAKE_CLAUDE_SLOW and it is
// closed.
func fakeClaudeSlow() int {
	f := newFakeStream()
	if !f.waitUser() {
		return 0
	}
	f.init()
	f.emit(map[string]any{"type": "assistant", "message": map[string]any{"id": "m0", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{
		map[string]any{"type": "thinking", "thinking": "The user wants the files checked.", "signature": "c2ln"}}}})
	f.tool("m1", "toolu_s", "Bash", map[string]any{"command": slowCommand})
	fifo, err := os.Open(os.Getenv(fakeSlowEnv)) // blocks until the test opens it
	if err != nil {
		return 1
	}
	io.ReadAll(fifo)
	fifo.Close()
	f.result("toolu_s", "all clean", false)
	f.finish("checked")
	return 0
}

// fakeClaudeUnasked says what it will do (a line with no newline at its
// end), then runs `cat FIFO` without asking: it lasts until the FIFO
// $SPBRIDGE_FAKE_CLAUDE_UNASKED is written and closed.
func fakeClaudeUnasked() int {
	f := newFakeStream()
	if !f.waitUser() {
		return 0
	}
	f.init()
	fifo := os.Getenv(fakeUnaskedEnv)
	f.emit(map[string]any{"type": "assistant", "message": map[string]any{"id": "m0", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{
		map[string]any{"type": "text", "text": "I will wait for the build."}}}})
	f.tool("m1", "toolu_u", "Bash", map[string]any{"command": "cat " + fifo})
	r, err := os.Open(fifo) // blocks until the test opens it
	if err != nil {
		return 1
	}
	io.ReadAll(r)
	r.Close()
	f.result("toolu_u", "built", false)
	f.finish("built")
	return 0
}
