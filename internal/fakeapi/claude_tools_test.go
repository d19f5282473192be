//go:build unix

package fakeapi

// Recordings of the real claude using its editing, planning, subagent and
// image tools, and interrupted in the middle of a tool, for the mappings of
// those tools:
//
//	go test ./internal/fakeapi -run 'TestClaudeTools' -record
//
// Each run talks to claude the way internal/claude does: stream-json in and
// out, partial messages, permission requests over the control protocol
// (--permission-prompt-tool stdio), answered "allow" with the input as
// asked.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// claudeArgs are the arguments internal/claude gives claude.
var claudeArgs = []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json",
	"--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio"}

// claudeSession is a running claude that the test talks to line by line.
type claudeSession struct {
	t          *testing.T
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	out        chan map[string]any // stdout lines, parsed; closed at EOF
	stderr     *os.File
	home, work string

	wmu   sync.Mutex // held while writing stdin
	mu    sync.Mutex
	raw   [][]byte // stdout lines as printed
	in    [][]byte // {"line": …} or {"note": …}, what the test did
	asked []map[string]any
	// allow answers can_use_tool requests; nil allows everything.
	deny func(req map[string]any) string
}

// startClaude starts the real claude with claudeArgs and args against srv,
// with a throwaway home, env added to ClaudeEnv's, in work (a new folder
// when empty), and sends the initialize control request.
func startClaude(t *testing.T, srv *Server, work string, env []string, args ...string) *claudeSession {
	t.Helper()
	bin := claudePath(t)
	if work == "" {
		work = t.TempDir()
	}
	s := &claudeSession{t: t, home: t.TempDir(), work: work, out: make(chan map[string]any, 10000), stderr: stderrFile(t)}
	cmd := exec.Command(bin, append(slices.Clone(claudeArgs), args...)...)
	cmd.Dir = work
	cmd.Env = append(srv.ClaudeEnv(s.home), env...)
	ownGroup(cmd)
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	go func() {
		defer close(s.out)
		rd := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := rd.ReadBytes('\n')
			line = bytes.TrimRight(line, "\n")
			if len(bytes.TrimSpace(line)) > 0 {
				var m map[string]any
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					t.Errorf("claude stdout line is not JSON: %q", line)
				} else {
					s.mu.Lock()
					s.raw = append(s.raw, line)
					s.mu.Unlock()
					s.answer(m)
					s.out <- m
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if s.cmd != nil {
			_ = killGroup(s.cmd)
			s.stdin.Close()
			for range s.out {
			}
			_ = s.cmd.Wait()
		}
	})
	s.send(map[string]any{"type": "control_request", "request_id": "spbridge-init", "request": map[string]any{"subtype": "initialize"}})
	return s
}

// send writes one line to claude's stdin.
func (s *claudeSession) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Error(err)
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.log(map[string]any{"line": json.RawMessage(b)})
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		s.t.Errorf("write to claude: %v", err)
	}
}

// answer answers a permission request (allow, with the input as asked,
// unless deny gives a message).
func (s *claudeSession) answer(m map[string]any) {
	if m["type"] != "control_request" {
		return
	}
	req, _ := m["request"].(map[string]any)
	if req["subtype"] != "can_use_tool" {
		return
	}
	s.mu.Lock()
	s.asked = append(s.asked, req)
	s.mu.Unlock()
	resp := map[string]any{"behavior": "allow", "updatedInput": req["input"]}
	if s.deny != nil {
		if msg := s.deny(req); msg != "" {
			resp = map[string]any{"behavior": "deny", "message": msg}
		}
	}
	s.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": m["request_id"], "response": resp}})
}

// note records what the test did besides writing to stdin.
func (s *claudeSession) note(text string) { s.log(map[string]any{"note": text}) }

func (s *claudeSession) log(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	s.in = append(s.in, b)
	s.mu.Unlock()
}

// prompt sends a user message with one text block.
func (s *claudeSession) prompt(text string) {
	s.t.Helper()
	s.send(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
}

// next returns claude's next stdout line (permission requests are answered
// as they arrive, see answer).
func (s *claudeSession) next() map[string]any {
	s.t.Helper()
	m, ok := <-s.out
	if !ok {
		s.t.Fatalf("claude closed stdout; stderr:\n%s", readStderr(s.t, s.stderr))
	}
	return m
}

// until reads lines until one that match accepts, and returns it.
func (s *claudeSession) until(match func(map[string]any) bool) map[string]any {
	s.t.Helper()
	for {
		if m := s.next(); match(m) {
			return m
		}
	}
}

// result reads up to the turn's result line and returns it.
func (s *claudeSession) result() map[string]any {
	s.t.Helper()
	return s.until(func(m map[string]any) bool { return m["type"] == "result" })
}

// finish closes stdin, reads the rest of stdout and waits for claude to
// exit.
func (s *claudeSession) finish() error {
	s.t.Helper()
	s.stdin.Close()
	s.note("stdin closed")
	for range s.out {
	}
	err := s.cmd.Wait()
	s.cmd = nil
	return err
}

// lines returns the stdout lines so far, parsed.
func (s *claudeSession) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range s.raw {
		var m map[string]any
		_ = json.Unmarshal(l, &m)
		out = append(out, m)
	}
	return out
}

// toolResults returns the tool_result blocks of the user lines, by
// tool_use_id.
func (s *claudeSession) toolResults() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, l := range s.lines() {
		if l["type"] != "user" {
			continue
		}
		msg, _ := l["message"].(map[string]any)
		content, _ := msg["content"].([]any)
		for _, c := range content {
			if b, _ := c.(map[string]any); b["type"] == "tool_result" {
				out[fmt.Sprint(b["tool_use_id"])] = b
			}
		}
	}
	return out
}

// save writes stdout to testdata/claude/name.stdout.jsonl and what the test
// wrote and did to name.stdin.jsonl when -record is set, with the throwaway
// folders' paths rewritten.
func (s *claudeSession) save(name string) {
	s.t.Helper()
	if !*record {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rewrite := func(lines [][]byte) []byte {
		var b bytes.Buffer
		for _, l := range lines {
			l = bytes.ReplaceAll(l, []byte(s.work), []byte("/home/dev/capture/claude-work"))
			l = bytes.ReplaceAll(l, []byte(s.home), []byte("/home/dev/capture/claude-home"))
			b.Write(l)
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	writeTestdata(s.t, filepath.Join("claude", name+".stdout.jsonl"), rewrite(s.raw))
	writeTestdata(s.t, filepath.Join("claude", name+".stdin.jsonl"), rewrite(s.in))
}

// toolNames returns the names of the tools a /v1/messages request offered.
func toolNames(body map[string]any) []string {
	var out []string
	tools, _ := body["tools"].([]any)
	for _, tl := range tools {
		if m, _ := tl.(map[string]any); m != nil {
			out = append(out, fmt.Sprint(m["name"]))
		}
	}
	return out
}

// mkfifo makes a named pipe at path: a command that opens it blocks until
// the test opens the other end, which lets the test wait for the command
// to be running.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// readFifo opens the named pipe at path for reading (waiting for a writer)
// and reads it to its end.
func readFifo(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestClaudeToolsList(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"default", nil, nil},
		{"todo", []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=true", "CLAUDE_CODE_ENABLE_TASKS=false"}, nil},
		{"tasks", []string{"CLAUDE_CODE_ENABLE_TASKS=true"}, nil},
		{"plan", nil, []string{"--permission-mode", "plan"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := start(t, Reply{Blocks: []Block{{Type: "text", Text: "ok"}}})
			s := startClaude(t, srv, "", c.env, c.args...)
			s.prompt("hi")
			s.result()
			if err := s.finish(); err != nil {
				t.Errorf("claude: %v", err)
			}
			for _, body := range conversationRequests(t, srv) {
				t.Logf("tools: %v", toolNames(body))
				t.Logf("deferred: %v", deferredTools(body))
				tools, _ := body["tools"].([]any)
				for _, tl := range tools {
					if m, _ := tl.(map[string]any); m["name"] == "Agent" {
						schema, _ := json.Marshal(m["input_schema"])
						t.Logf("Agent input schema: %s", schema)
					}
				}
			}
		})
	}
}

// deferredTools returns the tools a request names as deferred (their
// schemas loaded through ToolSearch).
func deferredTools(body map[string]any) []string {
	msgs, _ := json.Marshal(body["messages"])
	var text string
	_ = json.Unmarshal(msgs, &[]any{})
	text = string(msgs)
	const head = `Use ToolSearch with query \"select:\u003cname\u003e[,\u003cname\u003e...]\" to load tool schemas before calling them:\n`
	i := strings.Index(text, head)
	if i < 0 {
		return nil
	}
	text = text[i+len(head):]
	if j := strings.Index(text, `\n\n`); j >= 0 {
		text = text[:j]
	}
	return strings.Split(text, `\n`)
}

// turnOK runs one prompt in a new claude with replies as the fake model's
// script, reads to the result, closes stdin and saves the session as name.
func turnOK(t *testing.T, name, prompt string, work string, env, args []string, replies ...Reply) (*claudeSession, *Server, map[string]any) {
	t.Helper()
	srv := start(t, replies...)
	s := startClaude(t, srv, work, env, args...)
	s.prompt(prompt)
	res := s.result()
	if err := s.finish(); err != nil {
		t.Errorf("claude: %v; stderr:\n%s", err, readStderr(t, s.stderr))
	}
	s.save(name)
	if res["is_error"] != false {
		t.Errorf("result = %v", res)
	}
	return s, srv, res
}

func tool(id, name string, input map[string]any) Block {
	return Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

func text(s string) Reply { return Reply{Blocks: []Block{{Type: "text", Text: s}}} }

func TestClaudeToolsEdit(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(work, "notes.txt")
	if err := os.WriteFile(file, []byte("alpha\nbeta\ngamma\ndelta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, _ := turnOK(t, "tool_edit", "change beta to BETA in notes.txt", work, nil, nil,
		Reply{Blocks: []Block{{Type: "text", Text: "I'll read the file first."}, tool("toolu_read_1", "Read", map[string]any{"file_path": file})}},
		Reply{Blocks: []Block{tool("toolu_edit_1", "Edit", map[string]any{"file_path": file, "old_string": "beta\ngamma", "new_string": "BETA\ngamma, edited", "replace_all": false})}},
		text("Changed beta to BETA."),
	)
	if b, _ := os.ReadFile(file); string(b) != "alpha\nBETA\ngamma, edited\ndelta\n" {
		t.Errorf("notes.txt = %q", b)
	}
	if r := s.toolResults()["toolu_edit_1"]; r == nil || r["is_error"] == true {
		t.Errorf("Edit result = %v", r)
	}
}

func TestClaudeToolsMultiEdit(t *testing.T) {
	// 2.1.328 does not offer MultiEdit (neither among its tools nor its
	// deferred ones): a call of it is answered with an error result.
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(work, "notes.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, srv, _ := turnOK(t, "tool_multiedit_unavailable", "rename one and two in notes.txt", work, nil, nil,
		Reply{Blocks: []Block{tool("toolu_read_1", "Read", map[string]any{"file_path": file})}},
		Reply{Blocks: []Block{tool("toolu_multi_1", "MultiEdit", map[string]any{"file_path": file, "edits": []any{
			map[string]any{"old_string": "one", "new_string": "ONE"},
			map[string]any{"old_string": "two", "new_string": "TWO"},
		}})}},
		text("MultiEdit is not available."),
	)
	if slices.Contains(toolNames(conversationRequests(t, srv)[0]), "MultiEdit") {
		t.Errorf("claude offers MultiEdit: record a real MultiEdit")
	}
	r := s.toolResults()["toolu_multi_1"]
	t.Logf("MultiEdit result: %v", r)
	if r == nil || r["is_error"] != true {
		t.Errorf("MultiEdit result = %v, want an error", r)
	}
}

func TestClaudeToolsWrite(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(work, "sub", "new.txt")
	turnOK(t, "tool_write_new_file", "write sub/new.txt", work, nil, nil,
		Reply{Blocks: []Block{tool("toolu_write_1", "Write", map[string]any{"file_path": file, "content": "first line\nsecond line\n"})}},
		text("Wrote sub/new.txt."),
	)
	if b, _ := os.ReadFile(file); string(b) != "first line\nsecond line\n" {
		t.Errorf("new.txt = %q", b)
	}
}

func TestClaudeToolsBash(t *testing.T) {
	t.Parallel()
	s, _, _ := turnOK(t, "tool_bash_multiline", "count to three", "", nil, nil,
		Reply{Blocks: []Block{tool("toolu_bash_1", "Bash", map[string]any{
			"command": "for i in 1 2 3; do echo \"line $i\"; done; echo 'to stderr' >&2; echo 'last line'", "description": "Print a few lines"})}},
		text("It printed three lines and one more."),
	)
	t.Logf("Bash result: %v", s.toolResults()["toolu_bash_1"])
}

func TestClaudeToolsTodoWrite(t *testing.T) {
	t.Parallel()
	env := []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=true", "CLAUDE_CODE_ENABLE_TASKS=false"}
	todos := func(s1, s2, s3 string) map[string]any {
		return map[string]any{"todos": []any{
			map[string]any{"content": "Read the code", "status": s1, "activeForm": "Reading the code"},
			map[string]any{"content": "Write the fix", "status": s2, "activeForm": "Writing the fix"},
			map[string]any{"content": "Run the tests", "status": s3, "activeForm": "Running the tests"},
		}}
	}
	s, srv, _ := turnOK(t, "tool_todowrite", "plan the fix", "", env, nil,
		Reply{Blocks: []Block{tool("toolu_search_1", "ToolSearch", map[string]any{"query": "select:TodoWrite", "max_results": 1})}},
		Reply{Blocks: []Block{tool("toolu_todo_1", "TodoWrite", todos("in_progress", "pending", "pending"))}},
		Reply{Blocks: []Block{tool("toolu_todo_2", "TodoWrite", todos("completed", "completed", "in_progress"))}},
		text("Planned."),
	)
	reqs := conversationRequests(t, srv)
	if !slices.Contains(deferredTools(reqs[0]), "TodoWrite") {
		t.Errorf("TodoWrite not among the deferred tools: %v", deferredTools(reqs[0]))
	}
	if n := len(reqs); n >= 2 {
		t.Logf("tools after ToolSearch: %v", toolNames(reqs[1]))
	}
	for _, id := range []string{"toolu_search_1", "toolu_todo_1", "toolu_todo_2"} {
		r := s.toolResults()[id]
		if r == nil || r["is_error"] == true {
			t.Errorf("%s result = %v", id, r)
		}
	}
}

func TestClaudeToolsExitPlanMode(t *testing.T) {
	t.Parallel()
	plan := "# Plan: shorten the headline\n\n1. Read `poster.txt`.\n2. Cut the headline to five words.\n\n- Keep the subtitle.\n"
	s, _, _ := turnOK(t, "tool_exitplanmode", "plan how to shorten the headline", "", nil, []string{"--permission-mode", "plan"},
		Reply{Blocks: []Block{tool("toolu_search_1", "ToolSearch", map[string]any{"query": "select:ExitPlanMode", "max_results": 1})}},
		Reply{Blocks: []Block{{Type: "text", Text: "Here is my plan."}, tool("toolu_plan_1", "ExitPlanMode", map[string]any{"plan": plan})}},
		text("Plan approved; starting."),
	)
	t.Logf("asked: %v", s.asked)
	t.Logf("ExitPlanMode result: %v", s.toolResults()["toolu_plan_1"])
}

// isSubagent reports whether a /v1/messages request is the subagent's: its
// first message carries the subagent's prompt.
func isSubagent(body []byte) bool {
	var req struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return false
	}
	return bytes.Contains(req.Messages[0].Content, []byte("SUBAGENT TASK"))
}

func TestClaudeToolsSubagent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		background bool
	}{{"tool_agent_foreground", false}, {"tool_agent_background", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			file := filepath.Join(work, "readme.txt")
			if err := os.WriteFile(file, []byte("hello from the readme\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			main := func(body []byte) bool { return !isSubagent(body) && !isSide(body) }
			sub := func(body []byte) bool { return isSubagent(body) && !isSide(body) }
			input := map[string]any{"description": "Look at the readme", "prompt": "SUBAGENT TASK: read readme.txt and count its words.", "subagent_type": "claude"}
			if !c.background {
				input["run_in_background"] = false
			}
			srv := start(t,
				Reply{Match: main, Blocks: []Block{{Type: "text", Text: "I'll ask a subagent."}, tool("toolu_agent_1", "Agent", input)}},
				Reply{Match: sub, Blocks: []Block{{Type: "text", Text: "Reading it."}, tool("toolu_sub_read", "Read", map[string]any{"file_path": file})}},
				Reply{Match: sub, Blocks: []Block{tool("toolu_sub_bash", "Bash", map[string]any{"command": "wc -w " + file, "description": "Count words"})}},
				Reply{Match: sub, Blocks: []Block{{Type: "text", Text: "The readme has 4 words."}}},
				Reply{Match: main, Blocks: []Block{{Type: "text", Text: "The subagent is done or on its way."}}},
				Reply{Match: main, Blocks: []Block{{Type: "text", Text: "The subagent reported 4 words."}}},
			)
			s := startClaude(t, srv, work, nil)
			s.prompt("have a subagent look at readme.txt")
			s.result()
			if c.background {
				// The subagent's end starts a turn of its own, which the
				// notification of the finished task opens.
				s.until(func(m map[string]any) bool {
					return m["type"] == "result" && m["result"] == "The subagent reported 4 words."
				})
			}
			if err := s.finish(); err != nil {
				t.Errorf("claude: %v", err)
			}
			s.save(c.name)
			var children int
			for _, l := range s.lines() {
				if p, _ := l["parent_tool_use_id"].(string); p == "toolu_agent_1" {
					children++
				}
			}
			if children == 0 {
				t.Errorf("no lines with parent_tool_use_id toolu_agent_1")
			}
			t.Logf("%d child lines; Agent result %.300v", children, s.toolResults()["toolu_agent_1"])
		})
	}
}

// isSide reports whether a request is one of claude's one-token side
// requests.
func isSide(body []byte) bool {
	var req messagesRequest
	return json.Unmarshal(body, &req) == nil && req.isSide()
}

func TestClaudeToolsReadImage(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(work, "red.png")
	writePNG(t, file)
	s, _, _ := turnOK(t, "tool_read_png", "what is in red.png?", work, nil, nil,
		Reply{Blocks: []Block{tool("toolu_read_png", "Read", map[string]any{"file_path": file})}},
		text("A red square."),
	)
	r := s.toolResults()["toolu_read_png"]
	if !strings.Contains(fmt.Sprint(r["content"]), "image") {
		t.Errorf("Read result = %v, want an image block", r)
	}
}

// interruptedBash runs a Bash tool that signals through a named pipe once
// it runs, then stops it with stop; the session is saved as name.
func interruptedBash(t *testing.T, name string, stop func(s *claudeSession)) *claudeSession {
	work := t.TempDir()
	fifo := filepath.Join(work, "started.fifo")
	mkfifo(t, fifo)
	srv := start(t,
		Reply{Blocks: []Block{{Type: "text", Text: "Running the slow command."}, tool("toolu_slow_1", "Bash", map[string]any{
			"command": "echo running > " + fifo + "; sleep 600", "description": "Run a slow command"})}},
		text("Still here."),
	)
	s := startClaude(t, srv, work, nil)
	s.prompt("run the slow command")
	// The command is running once it has written the pipe (claude's lines
	// queue meanwhile, its permission request answered as it comes).
	readFifo(t, fifo)
	s.note("the Bash command is running")
	stop(s)
	return s
}

// userTexts returns the texts of the user lines' text blocks.
func (s *claudeSession) userTexts() []string {
	var out []string
	for _, l := range s.lines() {
		if l["type"] != "user" {
			continue
		}
		msg, _ := l["message"].(map[string]any)
		content, _ := msg["content"].([]any)
		for _, c := range content {
			if b, _ := c.(map[string]any); b["type"] == "text" {
				out = append(out, fmt.Sprint(b["text"]))
			}
		}
	}
	return out
}

func TestClaudeToolsInterruptControl(t *testing.T) {
	t.Parallel()
	s := interruptedBash(t, "tool_bash_interrupt_control", func(s *claudeSession) {
		s.send(map[string]any{"type": "control_request", "request_id": "spbridge-interrupt", "request": map[string]any{"subtype": "interrupt"}})
	})
	// The interrupted turn ends; the process takes the next message.
	s.until(func(m map[string]any) bool { return m["type"] == "result" })
	s.prompt("are you there?")
	s.until(func(m map[string]any) bool { return m["type"] == "result" && m["result"] == "Still here." })
	if err := s.finish(); err != nil {
		t.Errorf("claude: %v", err)
	}
	s.save("tool_bash_interrupt_control")
	t.Logf("tool result: %v", s.toolResults()["toolu_slow_1"])
	t.Logf("user texts: %q", s.userTexts())
}

func TestClaudeToolsInterruptSIGINT(t *testing.T) {
	t.Parallel()
	s := interruptedBash(t, "tool_bash_sigint", func(s *claudeSession) {
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		s.note("sent SIGINT to claude")
	})
	err := s.finish()
	s.save("tool_bash_sigint")
	t.Logf("exit: %v", err)
	t.Logf("tool result: %v", s.toolResults()["toolu_slow_1"])
	t.Logf("user texts: %q", s.userTexts())
}

// writeFifo opens the named pipe at path for writing (waiting for a
// reader) and writes text to it.
func writeFifo(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClaudeToolsSubagentRace records the user sending a message while a
// background subagent still runs: the subagent's Bash waits on a pipe past
// the first turn's result; the second prompt's own Bash waits on another
// while the subagent's is let go, so that the subagent's last lines and
// its notification come during the second turn.
func TestClaudeToolsSubagentRace(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	subStarted, subRelease := filepath.Join(work, "sub-started.fifo"), filepath.Join(work, "sub-release.fifo")
	mainStarted, mainRelease := filepath.Join(work, "main-started.fifo"), filepath.Join(work, "main-release.fifo")
	for _, f := range []string{subStarted, subRelease, mainStarted, mainRelease} {
		mkfifo(t, f)
	}
	main := func(body []byte) bool { return !isSubagent(body) && !isSide(body) }
	sub := func(body []byte) bool { return isSubagent(body) && !isSide(body) }
	input := map[string]any{"description": "Run the slow command", "prompt": "SUBAGENT TASK: run the slow command.", "subagent_type": "claude"}
	srv := start(t,
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "I'll ask a subagent."}, tool("toolu_agent_1", "Agent", input)}},
		Reply{Match: sub, Blocks: []Block{tool("toolu_sub_bash", "Bash", map[string]any{
			"command": "echo running > " + subStarted + "; cat " + subRelease, "description": "Slow command"})}},
		Reply{Match: sub, Blocks: []Block{{Type: "text", Text: "The slow command said go."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "The subagent is on its way."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "Running mine."}, tool("toolu_main_bash", "Bash", map[string]any{
			"command": "echo running > " + mainStarted + "; cat " + mainRelease, "description": "Other command"})}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "Mine said done."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "The subagent reported go."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "Anything else is done."}}},
	)
	s := startClaude(t, srv, work, nil)
	s.prompt("have a subagent run the slow command")
	readFifo(t, subStarted)
	s.note("the subagent's Bash command is running")
	s.result()
	s.note("read the first turn's result")
	s.prompt("meanwhile, run the other command")
	readFifo(t, mainStarted)
	s.note("the second turn's Bash command is running")
	writeFifo(t, subRelease, "go\n")
	s.note("let the subagent's command go")
	s.until(func(m map[string]any) bool { return m["type"] == "system" && m["subtype"] == "task_notification" })
	s.note("read the subagent's task_notification")
	writeFifo(t, mainRelease, "done\n")
	s.note("let the second turn's command go")
	results := 1
	for results < 2 {
		if m := s.next(); m["type"] == "result" {
			results++
		}
	}
	s.note("read the second result")
	if err := s.finish(); err != nil {
		t.Errorf("claude: %v", err)
	}
	s.save("tool_agent_background_race")
	var children int
	var results2 []string
	for _, l := range s.lines() {
		if p, _ := l["parent_tool_use_id"].(string); p == "toolu_agent_1" {
			children++
		}
		if l["type"] == "result" {
			origin, _ := l["origin"].(map[string]any)
			results2 = append(results2, fmt.Sprintf("%v (origin %v)", l["result"], origin["kind"]))
		}
	}
	if children == 0 {
		t.Errorf("no lines with parent_tool_use_id toolu_agent_1")
	}
	t.Logf("%d child lines; results %q; asked %d", children, results2, len(s.asked))
}

// TestClaudeToolsSubagentPermission records a background subagent whose
// tool needs a permission after the turn's result: its first reply streams
// slowly, so that its Bash call, and the can_use_tool request for it, come
// between turns; then the turn claude runs on its own for the report, and
// a second prompt.
func TestClaudeToolsSubagentPermission(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	main := func(body []byte) bool { return !isSubagent(body) && !isSide(body) }
	sub := func(body []byte) bool { return isSubagent(body) && !isSide(body) }
	input := map[string]any{"description": "Make a file", "prompt": "SUBAGENT TASK: make a file.", "subagent_type": "claude"}
	srv := start(t,
		Reply{Match: main, Blocks: []Block{tool("toolu_agent_1", "Agent", input)}},
		Reply{Match: sub, ChunkDelay: 100 * time.Millisecond, Blocks: []Block{tool("toolu_sub_bash", "Bash", map[string]any{
			"command": "touch made.txt", "description": "Make the file"})}},
		Reply{Match: sub, Blocks: []Block{{Type: "text", Text: "Made it."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "The subagent is on its way."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "The subagent made the file."}}},
		Reply{Match: main, Blocks: []Block{{Type: "text", Text: "Second answer."}}},
	)
	s := startClaude(t, srv, work, nil)
	s.prompt("have a subagent make a file")
	s.result()
	s.note("read the first turn's result")
	s.until(func(m map[string]any) bool {
		return m["type"] == "result" && m["result"] == "The subagent made the file."
	})
	s.note("read the result of the turn for the report")
	s.prompt("anything else?")
	s.until(func(m map[string]any) bool { return m["type"] == "result" && m["result"] == "Second answer." })
	if err := s.finish(); err != nil {
		t.Errorf("claude: %v", err)
	}
	s.save("tool_agent_background_permission")
	var afterResult bool
	for _, l := range s.lines() {
		if l["type"] == "result" {
			afterResult = true
		}
		if req, _ := l["request"].(map[string]any); l["type"] == "control_request" && req["subtype"] == "can_use_tool" {
			t.Logf("can_use_tool %v after the first result: %v", req["tool_name"], afterResult)
			break
		}
	}
	if _, err := os.Stat(filepath.Join(work, "made.txt")); err != nil {
		t.Errorf("the subagent's command did not run: %v", err)
	}
}
