package fakeapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// record makes the tests that say so write what the real claude printed to
// testdata/claude, with the throwaway folders' paths rewritten.
var record = flag.Bool("record", false, "write the real claude's stdout to testdata/claude")

func claudePath(t *testing.T) string { return ClaudePath(t) }

// claudeRun is the outcome of one run of the real claude.
type claudeRun struct {
	raw        [][]byte         // stdout lines, as printed
	lines      []map[string]any // stdout, one parsed JSON line each
	stderr     string
	err        error  // from Wait
	home, work string // the throwaway home and working folder
}

// find returns the first stdout line whose "type" is typ, or nil.
func (r *claudeRun) find(typ string) map[string]any {
	for _, l := range r.lines {
		if l["type"] == typ {
			return l
		}
	}
	return nil
}

// dump returns the run's output for a failure message.
func (r *claudeRun) dump() string {
	var b strings.Builder
	for _, l := range r.lines {
		j, _ := json.Marshal(l)
		if len(j) > 600 {
			j = append(j[:600], "…"...)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	b.WriteString("stderr: ")
	b.WriteString(r.stderr)
	return b.String()
}

// userLine is a stream-json user message with one text block.
func userLine(text string) string {
	b, _ := json.Marshal(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
	return string(b) + "\n"
}

// runClaude runs the real claude in stream-json mode against srv with a
// throwaway home, with extra args after the fixed ones, writes stdin to it and
// closes stdin, and waits for it to exit (a claude that hangs is ended by
// go test's own timeout).
func runClaude(t *testing.T, srv *Server, stdin string, args ...string) *claudeRun {
	t.Helper()
	bin := claudePath(t)
	home := t.TempDir()
	work := t.TempDir()
	argv := append([]string{"-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.Dir = work
	cmd.Env = srv.ClaudeEnv(home)
	ownGroup(cmd)
	cmd.Stdin = strings.NewReader(stdin)
	stderr := stderrFile(t)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := &claudeRun{home: home, work: work}
	rd := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m map[string]any
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				t.Errorf("stdout line is not JSON: %q", line)
			} else {
				run.raw = append(run.raw, bytes.TrimRight(line, "\n"))
				run.lines = append(run.lines, m)
			}
		}
		if err != nil {
			if err != io.EOF {
				t.Errorf("read stdout: %v", err)
			}
			break
		}
	}
	run.err = cmd.Wait()
	run.stderr = readStderr(t, stderr)
	return run
}

// result returns the run's result line, failing the test without one.
func (r *claudeRun) result(t *testing.T) map[string]any {
	t.Helper()
	res := r.find("result")
	if res == nil {
		t.Fatalf("no result line (exit: %v):\n%s", r.err, r.dump())
	}
	return res
}

// assistantBlocks returns the content blocks of the run's assistant lines.
func (r *claudeRun) assistantBlocks() []map[string]any {
	var out []map[string]any
	for _, l := range r.lines {
		if l["type"] != "assistant" {
			continue
		}
		msg, _ := l["message"].(map[string]any)
		content, _ := msg["content"].([]any)
		for _, c := range content {
			if b, ok := c.(map[string]any); ok {
				out = append(out, b)
			}
		}
	}
	return out
}

// conversationRequests returns the POST /v1/messages requests srv received,
// each body decoded, and fails the test on any other request.
func conversationRequests(t *testing.T, srv *Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range srv.Requests() {
		if r.Method != "POST" || r.Path != "/v1/messages" || r.Query != "beta=true" {
			t.Errorf("unexpected request %s %s?%s", r.Method, r.Path, r.Query)
			continue
		}
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request body: %v", err)
		}
		out = append(out, body)
	}
	return out
}

func TestClaudeText(t *testing.T) {
	srv := start(t, Reply{Blocks: []Block{{Type: "text", Text: "Hello from the fake API."}}})
	run := runClaude(t, srv, userLine("hi"))
	res := run.result(t)
	if res["is_error"] != false || res["result"] != "Hello from the fake API." {
		t.Errorf("result is_error %v, result %q, want false and the scripted text:\n%s", res["is_error"], res["result"], run.dump())
	}
	if run.err != nil {
		t.Errorf("claude: %v", run.err)
	}
	reqs := conversationRequests(t, srv)
	if len(reqs) != 1 || reqs[0]["stream"] != true {
		t.Errorf("%d requests, want 1 streaming: %v", len(reqs), reqs)
	}
}

func TestClaudeThinking(t *testing.T) {
	srv := start(t, Reply{Blocks: []Block{
		{Type: "thinking", Thinking: "The user said hi. I should greet them back briefly.", Signature: "EqQBmockSignature=="},
		{Type: "text", Text: "Hi there!"},
	}})
	run := runClaude(t, srv, userLine("hi"))
	if res := run.result(t); res["is_error"] != false || res["result"] != "Hi there!" {
		t.Errorf("result is_error %v, result %q:\n%s", res["is_error"], res["result"], run.dump())
	}
	var thinking map[string]any
	for _, b := range run.assistantBlocks() {
		if b["type"] == "thinking" {
			thinking = b
		}
	}
	if thinking == nil || thinking["thinking"] != "The user said hi. I should greet them back briefly." || thinking["signature"] != "EqQBmockSignature==" {
		t.Errorf("thinking block = %v:\n%s", thinking, run.dump())
	}
}

func TestClaudeToolRoundTrip(t *testing.T) {
	srv := start(t,
		Reply{Blocks: []Block{
			{Type: "text", Text: "I'll run that command."},
			{Type: "tool_use", ID: "toolu_e2e_1", Name: "Bash", Input: map[string]any{"command": "echo hi", "description": "Print hi"}},
		}},
		Reply{Blocks: []Block{{Type: "text", Text: "The command printed hi."}}},
	)
	run := runClaude(t, srv, userLine("run echo hi"), "--allowedTools", "Bash")
	if res := run.result(t); res["is_error"] != false || res["result"] != "The command printed hi." {
		t.Errorf("result is_error %v, result %q:\n%s", res["is_error"], res["result"], run.dump())
	}

	reqs := conversationRequests(t, srv)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2:\n%s", len(reqs), run.dump())
	}
	msgs, _ := reqs[1]["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("second request has no messages")
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].([]any)
	var result map[string]any
	for _, c := range content {
		if b, _ := c.(map[string]any); b["type"] == "tool_result" {
			result = b
		}
	}
	if last["role"] != "user" || result == nil || result["tool_use_id"] != "toolu_e2e_1" ||
		result["is_error"] != false || result["content"] != "hi" {
		t.Errorf("second request's last message = %v, want a user tool_result for toolu_e2e_1 with content hi", last)
	}
}

func TestClaudeMidStreamError(t *testing.T) {
	srv := start(t,
		Reply{MidStreamError: true, Blocks: []Block{{Type: "text", Text: "This will break midway through the stream"}}},
		Reply{Blocks: []Block{{Type: "text", Text: "The whole answer, without streaming."}}},
	)
	run := runClaude(t, srv, userLine("hi"))
	if res := run.result(t); res["is_error"] != false || res["result"] != "The whole answer, without streaming." {
		t.Errorf("result is_error %v, result %q:\n%s", res["is_error"], res["result"], run.dump())
	}
	reqs := conversationRequests(t, srv)
	if len(reqs) != 2 || reqs[0]["stream"] != true || reqs[1]["stream"] == true {
		t.Errorf("requests' stream = %v, want a streaming one and then a retry without", func() (s []any) {
			for _, r := range reqs {
				s = append(s, r["stream"])
			}
			return s
		}())
	}
}

func TestClaudeUnauthorized(t *testing.T) {
	// CLAUDE_CODE_MAX_RETRIES=1: one try and one retry, even on 401.
	denied := Reply{Status: 401, ErrorMessage: "invalid x-api-key"}
	srv := start(t, denied, denied, denied)
	run := runClaude(t, srv, userLine("hi"))
	res := run.result(t)
	if res["is_error"] != true || res["api_error_status"] != float64(401) {
		t.Errorf("result is_error %v, api_error_status %v, want true and 401:\n%s", res["is_error"], res["api_error_status"], run.dump())
	}
	if n := len(conversationRequests(t, srv)); n != 2 {
		t.Errorf("%d requests, want 2 (a try and one retry)", n)
	}
	t.Logf("exit: %v; result: %v", run.err, res["result"])
}

// saveRecording writes run's stdout to testdata/claude/name.stdout.jsonl
// when the -record flag is set, with the throwaway folders' paths rewritten
// to the ones the shared fixtures use.
func saveRecording(t *testing.T, run *claudeRun, name string) {
	t.Helper()
	if !*record {
		return
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, l := range run.raw {
		l = bytes.ReplaceAll(l, []byte(run.work), []byte("/home/dev/capture/claude-work"))
		l = bytes.ReplaceAll(l, []byte(run.home), []byte("/home/dev/capture/claude-home"))
		b.Write(l)
		b.WriteByte('\n')
	}
	dir := filepath.Join(root, "testdata", "claude")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".stdout.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

func TestClaudeParallelTools(t *testing.T) {
	srv := start(t,
		Reply{Blocks: []Block{
			{Type: "thinking", Thinking: "Two independent commands: run both at once.", Signature: "EqQBmockSignature=="},
			{Type: "text", Text: "I'll run both commands."},
			{Type: "tool_use", ID: "toolu_par_1", Name: "Bash", Input: map[string]any{"command": "echo one", "description": "Print one"}},
			{Type: "tool_use", ID: "toolu_par_2", Name: "Bash", Input: map[string]any{"command": "echo two", "description": "Print two"}},
		}},
		Reply{Blocks: []Block{{Type: "text", Text: "They printed one and two."}}},
	)
	run := runClaude(t, srv, userLine("run echo one and echo two"), "--include-partial-messages", "--allowedTools", "Bash")
	saveRecording(t, run, "parallel_tools")
	if res := run.result(t); res["is_error"] != false || res["result"] != "They printed one and two." {
		t.Errorf("result is_error %v, result %q:\n%s", res["is_error"], res["result"], run.dump())
	}

	var types []any
	for _, b := range run.assistantBlocks() {
		types = append(types, b["type"])
	}
	if want := []any{"thinking", "text", "tool_use", "tool_use", "text"}; !reflect.DeepEqual(types, want) {
		t.Errorf("assistant blocks %v, want %v", types, want)
	}

	reqs := conversationRequests(t, srv)
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs, _ := reqs[1]["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].([]any)
	got := map[any]any{}
	for _, c := range content {
		if b, _ := c.(map[string]any); b["type"] == "tool_result" {
			got[b["tool_use_id"]] = b["content"]
		}
	}
	if want := map[any]any{"toolu_par_1": "one", "toolu_par_2": "two"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tool results in the second request = %v, want %v", got, want)
	}
}
