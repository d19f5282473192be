package fakeapi

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// startOpenAI runs a fake Responses API with replies for the length of the
// test.
func startOpenAI(t *testing.T, replies ...ResponsesReply) *OpenAIServer {
	t.Helper()
	srv, err := NewOpenAI(replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// codexRun is the outcome of one run of the real codex exec.
type codexRun struct {
	raw       [][]byte         // stdout lines, as printed
	lines     []map[string]any // stdout, one parsed JSON line each
	stderr    string
	err       error  // from Wait
	dir, work string // the throwaway folder (homes) and the working folder
}

// dump returns the run's output for a failure message.
func (r *codexRun) dump() string {
	var b strings.Builder
	for _, l := range r.raw {
		if len(l) > 600 {
			l = append(l[:600:600], "…"...)
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	b.WriteString("stderr: ")
	b.WriteString(r.stderr)
	return b.String()
}

// runCodex runs the real codex with args in work (a new folder when empty)
// against srv with the throwaway homes in dir (a new folder when empty),
// writes stdin to it and closes stdin, and waits for it to exit (a codex
// that hangs is ended by go test's own timeout).
func runCodex(t *testing.T, srv *OpenAIServer, dir, work, stdin string, args ...string) *codexRun {
	t.Helper()
	bin := CodexPath(t)
	if dir == "" {
		dir = t.TempDir()
	}
	if work == "" {
		work = t.TempDir()
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = work
	cmd.Env = srv.CodexEnv(t, dir)
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
	run := &codexRun{dir: dir, work: work}
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

// stderrFile returns a new file for a process's stderr. The process writes
// it itself: waiting for the process never waits for a pipe that something
// it started still holds open.
func stderrFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readStderr returns what was written to f, a stderrFile.
func readStderr(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Errorf("read stderr: %v", err)
	}
	return string(b)
}

// postResponses sends a Responses API request to srv, as Codex does.
func postResponses(t *testing.T, srv *OpenAIServer, path string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer dummy")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// responsesTurn is the body of a Responses API request.
func responsesTurn(stream bool) map[string]any {
	return map[string]any{
		"model":  "gpt-test-1",
		"stream": stream,
		"input": []any{map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}},
	}
}

// streamedItem is an output item put back together from its events.
type streamedItem struct {
	typ, id string
	text    string   // message text, function_call arguments or custom_tool_call input
	summary []string // reasoning summary parts
	content string   // reasoning text
	done    map[string]any
}

// streamedResponse is a response put back together from its stream.
type streamedResponse struct {
	id        string
	items     []*streamedItem
	completed map[string]any // response.completed's response, nil without one
	failed    map[string]any // response.failed's response
}

// assembleResponse puts a streamed response back together and checks that
// the events are consistent: sequence numbers, indexes and item ids.
func assembleResponse(t *testing.T, events []sseEvent) streamedResponse {
	t.Helper()
	var r streamedResponse
	for i, e := range events {
		if seq, _ := e.data["sequence_number"].(float64); int(seq) != i {
			t.Errorf("event %d (%s) has sequence_number %v", i, e.name, e.data["sequence_number"])
		}
		var it *streamedItem
		if idx, ok := e.data["output_index"].(float64); ok && e.name != "response.output_item.added" {
			if int(idx) >= len(r.items) {
				t.Fatalf("event %s for output_index %v before its output_item.added", e.name, idx)
			}
			it = r.items[int(idx)]
			if id, ok := e.data["item_id"]; ok && id != it.id {
				t.Errorf("event %s has item_id %v, want %s", e.name, id, it.id)
			}
		}
		delta, _ := e.data["delta"].(string)
		switch e.name {
		case "response.created":
			resp := e.data["response"].(map[string]any)
			r.id = resp["id"].(string)
			if resp["status"] != "in_progress" {
				t.Errorf("response.created status %v", resp["status"])
			}
		case "response.output_item.added":
			item := e.data["item"].(map[string]any)
			if int(e.data["output_index"].(float64)) != len(r.items) {
				t.Errorf("output_item.added output_index %v, want %d", e.data["output_index"], len(r.items))
			}
			r.items = append(r.items, &streamedItem{typ: item["type"].(string), id: item["id"].(string)})
		case "response.output_text.delta", "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			it.text += delta
		case "response.reasoning_summary_part.added":
			if int(e.data["summary_index"].(float64)) != len(it.summary) {
				t.Errorf("summary_index %v, want %d", e.data["summary_index"], len(it.summary))
			}
			it.summary = append(it.summary, "")
		case "response.reasoning_summary_text.delta":
			it.summary[int(e.data["summary_index"].(float64))] += delta
		case "response.reasoning_text.delta":
			it.content += delta
		case "response.output_item.done":
			it.done = e.data["item"].(map[string]any)
		case "response.completed":
			r.completed = e.data["response"].(map[string]any)
		case "response.failed":
			r.failed = e.data["response"].(map[string]any)
		}
	}
	return r
}

func TestResponsesStream(t *testing.T) {
	text := "Hello, wörld — a reply long enough to come in several chunks."
	srv := startOpenAI(t, ResponsesReply{
		Items: []OutputItem{
			{Type: "reasoning", Summary: []string{"**Plan**\n\nGreet.", "Then run a command."}, Text: "raw thoughts"},
			{Type: "message", Text: text, Phase: "commentary"},
			ExecCommandCall("echo hi"),
			ApplyPatchCall("*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"),
		},
		Usage: ResponsesUsage{InputTokens: 1000, CachedTokens: 600, OutputTokens: 50, ReasoningTokens: 20, TotalTokens: 1050},
	})
	resp := postResponses(t, srv, "/v1/responses", responsesTurn(true))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	if !strings.HasPrefix(resp.Header.Get("x-request-id"), "req_fake_") {
		t.Errorf("x-request-id = %q", resp.Header.Get("x-request-id"))
	}
	events, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := names(events)
	if got[0] != "response.created" || got[len(got)-1] != "response.completed" {
		t.Errorf("events = %v", got)
	}

	r := assembleResponse(t, events)
	if !strings.HasPrefix(r.id, "resp_") || r.completed == nil || r.completed["id"] != r.id || r.completed["status"] != "completed" {
		t.Fatalf("response.completed = %v, want the id %q of response.created", r.completed, r.id)
	}
	if r.completed["model"] != "gpt-test-1" {
		t.Errorf("model = %v, want the request's", r.completed["model"])
	}
	wantUsage := map[string]any{
		"input_tokens": 1000.0, "input_tokens_details": map[string]any{"cached_tokens": 600.0},
		"output_tokens": 50.0, "output_tokens_details": map[string]any{"reasoning_tokens": 20.0},
		"total_tokens": 1050.0,
	}
	if !reflect.DeepEqual(r.completed["usage"], wantUsage) {
		t.Errorf("usage = %v, want %v", r.completed["usage"], wantUsage)
	}
	if out, _ := r.completed["output"].([]any); len(out) != 4 {
		t.Errorf("response.completed has %d output items, want 4", len(out))
	}
	if len(r.items) != 4 {
		t.Fatalf("%d items, want 4", len(r.items))
	}
	for _, it := range r.items {
		if it.done == nil || it.done["id"] != it.id || it.done["type"] != it.typ {
			t.Errorf("item %s %s: output_item.done = %v", it.typ, it.id, it.done)
		}
	}

	rs := r.items[0]
	if rs.typ != "reasoning" || !strings.HasPrefix(rs.id, "rs_") ||
		!reflect.DeepEqual(rs.summary, []string{"**Plan**\n\nGreet.", "Then run a command."}) || rs.content != "raw thoughts" {
		t.Errorf("reasoning = %+v", rs)
	}
	wantSummary := []any{
		map[string]any{"type": "summary_text", "text": "**Plan**\n\nGreet."},
		map[string]any{"type": "summary_text", "text": "Then run a command."},
	}
	if !reflect.DeepEqual(rs.done["summary"], wantSummary) {
		t.Errorf("reasoning done summary = %v", rs.done["summary"])
	}

	msg := r.items[1]
	if msg.typ != "message" || !strings.HasPrefix(msg.id, "msg_") || msg.text != text {
		t.Errorf("message = %+v", msg)
	}
	wantContent := []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}
	if msg.done["role"] != "assistant" || msg.done["phase"] != "commentary" || !reflect.DeepEqual(msg.done["content"], wantContent) {
		t.Errorf("message done = %v", msg.done)
	}

	fc := r.items[2]
	if fc.typ != "function_call" || !strings.HasPrefix(fc.id, "fc_") || fc.text != `{"cmd":"echo hi"}` {
		t.Errorf("function_call = %+v", fc)
	}
	if fc.done["name"] != "exec_command" || fc.done["arguments"] != `{"cmd":"echo hi"}` ||
		!strings.HasPrefix(fc.done["call_id"].(string), "call_") {
		t.Errorf("function_call done = %v", fc.done)
	}

	ctc := r.items[3]
	patch := "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"
	if ctc.typ != "custom_tool_call" || !strings.HasPrefix(ctc.id, "ctc_") || ctc.text != patch {
		t.Errorf("custom_tool_call = %+v", ctc)
	}
	if ctc.done["name"] != "apply_patch" || ctc.done["input"] != patch || ctc.done["call_id"] == fc.done["call_id"] {
		t.Errorf("custom_tool_call done = %v", ctc.done)
	}
}

func TestResponsesDefaults(t *testing.T) {
	srv := startOpenAI(t)
	resp := postResponses(t, srv, "/v1/responses", responsesTurn(true))
	events, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := assembleResponse(t, events)
	if len(r.items) != 1 || r.items[0].typ != "message" || r.items[0].text != "ok" {
		t.Errorf("items = %+v, want the message ok", r.items)
	}
	u, _ := r.completed["usage"].(map[string]any)
	if u["input_tokens"] != 100.0 || u["output_tokens"].(float64) < 1 ||
		u["total_tokens"] != u["input_tokens"].(float64)+u["output_tokens"].(float64) {
		t.Errorf("usage = %v", u)
	}
}

func TestResponsesNotStreaming(t *testing.T) {
	srv := startOpenAI(t, ResponsesReply{
		Items: []OutputItem{MessageItem("whole"), {Type: "function_call", Name: "exec_command", CallID: "call_1", Arguments: json.RawMessage(`{"cmd":"ls"}`)}},
		Usage: ResponsesUsage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10},
	})
	resp := postResponses(t, srv, "/v1/responses", responsesTurn(false))
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var r struct {
		ID, Object, Status, Model string
		Output                    []map[string]any
		Usage                     map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.Status != "completed" || r.Model != "gpt-test-1" {
		t.Errorf("response = %+v", r)
	}
	if len(r.Output) != 2 || r.Output[0]["type"] != "message" || r.Output[1]["call_id"] != "call_1" || r.Output[1]["arguments"] != `{"cmd":"ls"}` {
		t.Errorf("output = %v", r.Output)
	}
	if r.Usage["total_tokens"] != 10.0 {
		t.Errorf("usage = %v", r.Usage)
	}
}

func TestResponsesErrors(t *testing.T) {
	tests := []struct {
		reply          ResponsesReply
		typ, code, msg any
	}{
		{ResponsesReply{Status: 400, ErrorMessage: "bad input"}, "invalid_request_error", nil, "bad input"},
		{ResponsesReply{Status: 401}, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."},
		{ResponsesReply{Status: 429}, "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 20s."},
		{ResponsesReply{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "quota"}, "insufficient_quota", "insufficient_quota", "quota"},
		{ResponsesReply{Status: 500}, "server_error", "server_error", "The server had an error while processing your request. Sorry about that!"},
	}
	for _, tt := range tests {
		srv := startOpenAI(t, tt.reply)
		resp := postResponses(t, srv, "/v1/responses", responsesTurn(true))
		var body struct {
			Error map[string]any
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.reply.Status {
			t.Errorf("status %d, want %d", resp.StatusCode, tt.reply.Status)
		}
		want := map[string]any{"type": tt.typ, "code": tt.code, "message": tt.msg, "param": nil}
		if !reflect.DeepEqual(body.Error, want) {
			t.Errorf("error for %d = %v, want %v", tt.reply.Status, body.Error, want)
		}
		if resp.Header.Get("x-request-id") == "" {
			t.Errorf("no x-request-id on a %d", resp.StatusCode)
		}
	}
}

func TestResponsesDrop(t *testing.T) {
	srv := startOpenAI(t, ResponsesReply{Drop: true, Items: []OutputItem{MessageItem("This will break midway through the stream")}})
	resp := postResponses(t, srv, "/v1/responses", responsesTurn(true))
	events, err := readSSE(t, resp.Body)
	if err == nil {
		t.Error("the stream ended cleanly, want a broken connection")
	}
	got := names(events)
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestResponsesFailed(t *testing.T) {
	srv := startOpenAI(t, ResponsesReply{Failed: true, ErrorCode: "server_is_overloaded", Items: []OutputItem{MessageItem("partial")}})
	resp := postResponses(t, srv, "/v1/responses", responsesTurn(true))
	events, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := assembleResponse(t, events)
	if r.completed != nil || r.failed == nil || r.failed["status"] != "failed" {
		t.Fatalf("events = %v, want response.failed and no response.completed", names(events))
	}
	want := map[string]any{"code": "server_is_overloaded", "message": "The server had an error while processing your request."}
	if !reflect.DeepEqual(r.failed["error"], want) {
		t.Errorf("error = %v, want %v", r.failed["error"], want)
	}
}

func TestResponsesScript(t *testing.T) {
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("for the tool output")}, Match: func(body []byte) bool {
			return bytes.Contains(body, []byte(`"function_call_output"`))
		}},
		ResponsesReply{Items: []OutputItem{MessageItem("first")}},
	)
	srv.Push(ResponsesReply{Items: []OutputItem{MessageItem("pushed")}})
	textOf := func(body any) string {
		t.Helper()
		events, err := readSSE(t, postResponses(t, srv, "/v1/responses", body).Body)
		if err != nil {
			t.Fatal(err)
		}
		r := assembleResponse(t, events)
		if len(r.items) != 1 {
			t.Fatalf("%d items", len(r.items))
		}
		return r.items[0].text
	}
	withOutput := responsesTurn(true)
	withOutput["input"] = append(withOutput["input"].([]any), map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "hi"})
	for i, want := range []string{"first", "for the tool output", "pushed", "ok"} {
		body := responsesTurn(true)
		if i == 1 {
			body = withOutput
		}
		if got := textOf(body); got != want {
			t.Errorf("reply %d = %q, want %q", i+1, got, want)
		}
	}
}

func TestResponsesRequests(t *testing.T) {
	srv := startOpenAI(t)
	postResponses(t, srv, "/v1/responses", responsesTurn(true)).Body.Close()
	resp := postResponses(t, srv, "/v1/models?x=1", map[string]any{})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/models: status %d, want 404", resp.StatusCode)
	}
	resp = postResponses(t, srv, "/v1/responses", map[string]any{"stream": true})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("request without a model: status %d, want 400", resp.StatusCode)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(reqs))
	}
	if r := reqs[1]; r.Method != "POST" || r.Path != "/v1/models" || r.Query != "x=1" {
		t.Errorf("request 2 = %s %s ? %s", r.Method, r.Path, r.Query)
	}
	if reqs[0].Header.Get("Authorization") != "Bearer dummy" {
		t.Errorf("header not recorded: %v", reqs[0].Header)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || body["model"] != "gpt-test-1" {
		t.Errorf("body not recorded: %s", reqs[0].Body)
	}
	reqs[0].Body[0] = 'X'
	if srv.Requests()[0].Body[0] == 'X' {
		t.Error("Requests returned the server's own slice")
	}
}

func TestResponsesCloseEndsSlowStream(t *testing.T) {
	srv, err := NewOpenAI(ResponsesReply{ChunkDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp := postResponses(t, srv, "/v1/responses", responsesTurn(true))
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "event: response.created\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	<-closed // a Close that does not return is ended by go test's timeout
	rest, _ := io.ReadAll(br)
	if bytes.Contains(rest, []byte("response.completed")) {
		t.Errorf("the stream went on after Close: %q", rest)
	}
}

func TestResponsesChunkDelay(t *testing.T) {
	srv := startOpenAI(t, ResponsesReply{ChunkDelay: 20 * time.Millisecond})
	begin := time.Now()
	events, err := readSSE(t, postResponses(t, srv, "/v1/responses", responsesTurn(true)).Body)
	if err != nil {
		t.Fatal(err)
	}
	if least := time.Duration(len(events)-1) * 20 * time.Millisecond; time.Since(begin) < least {
		t.Errorf("%d events in %v, want at least %v", len(events), time.Since(begin), least)
	}
}

func TestCodexEnv(t *testing.T) {
	srv := startOpenAI(t)
	dir := t.TempDir()
	env := srv.CodexEnv(t, dir)
	want := map[string]string{
		"HOME":         filepath.Join(dir, "home"),
		"CODEX_HOME":   filepath.Join(dir, "codex-home"),
		"FAKE_API_KEY": "dummy",
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["PATH"]; !ok {
		t.Error("no PATH")
	}
	config, err := os.ReadFile(filepath.Join(dir, "codex-home", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`model_provider = "fake"`,
		`base_url = "` + srv.URL + `/v1"`,
		`env_key = "FAKE_API_KEY"`,
		`wire_api = "responses"`,
		`request_max_retries = 0`,
		`stream_max_retries = 0`,
		`check_for_update_on_startup = false`,
	} {
		if !strings.Contains(string(config), line+"\n") {
			t.Errorf("config.toml lacks %q:\n%s", line, config)
		}
	}
}

// execArgs are the arguments of codex exec before the prompt.
var execArgs = []string{"exec", "--json", "--skip-git-repo-check"}

// args returns execArgs, then more, then "-": the prompt comes from stdin.
func args(more ...string) []string {
	out := append([]string(nil), execArgs...)
	out = append(out, more...)
	return append(out, "-")
}

// find returns the first stdout line whose "type" is typ, or nil.
func (r *codexRun) find(typ string) map[string]any {
	for _, l := range r.lines {
		if l["type"] == typ {
			return l
		}
	}
	return nil
}

// items returns the items of the run's item.completed lines of type typ.
func (r *codexRun) items(typ string) []map[string]any {
	var out []map[string]any
	for _, l := range r.lines {
		if it, _ := l["item"].(map[string]any); l["type"] == "item.completed" && it["type"] == typ {
			out = append(out, it)
		}
	}
	return out
}

// usage returns the usage of the run's turn.completed line, failing the
// test without one.
func (r *codexRun) usage(t *testing.T) map[string]any {
	t.Helper()
	tc := r.find("turn.completed")
	if tc == nil {
		t.Fatalf("no turn.completed (exit: %v):\n%s", r.err, r.dump())
	}
	u, _ := tc["usage"].(map[string]any)
	return u
}

// responsesBodies returns the bodies of the POST /v1/responses requests srv
// received, decoded, and fails the test on any other request.
func responsesBodies(t *testing.T, srv *OpenAIServer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range srv.Requests() {
		if r.Method != "POST" || r.Path != "/v1/responses" {
			t.Errorf("unexpected request %s %s", r.Method, r.Path)
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

// inputOf returns the input items of a request body.
func inputOf(body map[string]any) []map[string]any {
	var out []map[string]any
	in, _ := body["input"].([]any)
	for _, it := range in {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// inputOfType returns the input items of body with type typ.
func inputOfType(body map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, it := range inputOf(body) {
		if it["type"] == typ {
			out = append(out, it)
		}
	}
	return out
}

// messageTexts returns the texts of the content parts of body's input
// messages with role, in order.
func messageTexts(body map[string]any, role string) []string {
	var out []string
	for _, it := range inputOfType(body, "message") {
		if it["role"] != role {
			continue
		}
		content, _ := it["content"].([]any)
		for _, c := range content {
			if p, _ := c.(map[string]any); p["text"] != nil {
				out = append(out, p["text"].(string))
			}
		}
	}
	return out
}

// saveExecRecording writes run's stdout to testdata/codex/exec/name.stdout.jsonl
// when the -record flag is set, with the throwaway folders' paths rewritten
// to the ones the shared fixtures use.
func saveExecRecording(t *testing.T, run *codexRun, name string) {
	t.Helper()
	if !*record {
		return
	}
	var b bytes.Buffer
	for _, l := range run.raw {
		b.Write(rewritePaths(l, run.dir, run.work))
		b.WriteByte('\n')
	}
	writeTestdata(t, filepath.Join("codex", "exec", name+".stdout.jsonl"), b.Bytes())
}

// rewritePaths replaces the throwaway folders in b with the paths the
// shared fixtures use. Extra pairs of folder and replacement may follow.
func rewritePaths(b []byte, dir, work string, extra ...string) []byte {
	pairs := append([]string{
		filepath.Join(dir, "codex-home"), "/home/dev/capture/codex-home",
		filepath.Join(dir, "home"), "/home/dev/capture/codex-userhome",
		work, "/home/dev/capture/codex-work",
	}, extra...)
	for i := 0; i+1 < len(pairs); i += 2 {
		b = bytes.ReplaceAll(b, []byte(pairs[i]), []byte(pairs[i+1]))
	}
	return b
}

// writeTestdata writes data to rel under the module's testdata folder.
func writeTestdata(t *testing.T, rel string, data []byte) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "testdata", rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// testUsage is a usage with distinct numbers, to see where each lands.
var testUsage = ResponsesUsage{InputTokens: 1000, CachedTokens: 600, OutputTokens: 50, ReasoningTokens: 20, TotalTokens: 1050}

// execUsage is testUsage as codex exec reports it in turn.completed.
var execUsage = map[string]any{
	"input_tokens": 1000.0, "cached_input_tokens": 600.0, "cache_write_input_tokens": 0.0,
	"output_tokens": 50.0, "reasoning_output_tokens": 20.0,
}

func TestCodexExecText(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem("Hello from the fake API.")}, Usage: testUsage})
	run := runCodex(t, srv, "", "", "say hello", args()...)
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	if ts := run.find("thread.started"); ts == nil || ts["thread_id"] == "" {
		t.Errorf("no thread.started with a thread_id:\n%s", run.dump())
	}
	if msgs := run.items("agent_message"); len(msgs) != 1 || msgs[0]["text"] != "Hello from the fake API." {
		t.Errorf("agent messages = %v:\n%s", msgs, run.dump())
	}
	if u := run.usage(t); !reflect.DeepEqual(u, execUsage) {
		t.Errorf("turn.completed usage = %v, want %v", u, execUsage)
	}

	bodies := responsesBodies(t, srv)
	if len(bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(bodies))
	}
	b := bodies[0]
	if b["stream"] != true || b["model"] != CodexModel {
		t.Errorf("request stream %v, model %v", b["stream"], b["model"])
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer dummy" {
		t.Errorf("Authorization = %q", got)
	}
	if texts := messageTexts(b, "user"); len(texts) == 0 || texts[len(texts)-1] != "say hello" {
		t.Errorf("user texts = %q, want the prompt last", texts)
	}
	// The tools codex offers: exec_command runs commands, apply_patch (a
	// freeform custom tool) edits files.
	tools := map[string]string{}
	list, _ := b["tools"].([]any)
	for _, tl := range list {
		m, _ := tl.(map[string]any)
		if name, ok := m["name"].(string); ok {
			tools[name] = m["type"].(string)
		}
	}
	if tools["exec_command"] != "function" || tools["apply_patch"] != "custom" {
		t.Errorf("tools = %v, want exec_command (function) and apply_patch (custom)", tools)
	}
}

func TestCodexExecReasoning(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{
		ReasoningItem("**Greeting the user**\n\nThe user said hi; reply briefly."),
		MessageItem("Hi there!"),
	}})
	run := runCodex(t, srv, "", "", "hi", args()...)
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	rs := run.items("reasoning")
	if len(rs) != 1 || rs[0]["text"] != "**Greeting the user**\n\nThe user said hi; reply briefly." {
		t.Errorf("reasoning items = %v:\n%s", rs, run.dump())
	}
	if msgs := run.items("agent_message"); len(msgs) != 1 || msgs[0]["text"] != "Hi there!" {
		t.Errorf("agent messages = %v", msgs)
	}
}

func TestCodexExecCommand(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("I'll run the command."), ExecCommandCall("echo hi > out.txt && cat out.txt")}},
		ResponsesReply{Items: []OutputItem{MessageItem("Wrote out.txt.")}},
	)
	run := runCodex(t, srv, "", "", "run echo hi > out.txt", args("--sandbox", "workspace-write")...)
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	if b, err := os.ReadFile(filepath.Join(run.work, "out.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("out.txt = %q, %v; want the command to have run", b, err)
	}
	cmds := run.items("command_execution")
	if len(cmds) != 1 {
		t.Fatalf("%d command_execution items, want 1:\n%s", len(cmds), run.dump())
	}
	c := cmds[0]
	if c["command"] != "/bin/bash -lc 'echo hi > out.txt && cat out.txt'" || c["exit_code"] != 0.0 ||
		c["aggregated_output"] != "hi\n" || c["status"] != "completed" {
		t.Errorf("command_execution = %v", c)
	}
	if msgs := run.items("agent_message"); len(msgs) != 2 || msgs[1]["text"] != "Wrote out.txt." {
		t.Errorf("agent messages = %v", msgs)
	}

	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	calls := inputOfType(bodies[1], "function_call")
	outs := inputOfType(bodies[1], "function_call_output")
	if len(calls) != 1 || len(outs) != 1 || calls[0]["call_id"] != outs[0]["call_id"] || calls[0]["name"] != "exec_command" {
		t.Fatalf("second request: function calls %v, outputs %v", calls, outs)
	}
	if out, _ := outs[0]["output"].(string); !strings.Contains(out, "Process exited with code 0") || !strings.HasSuffix(out, "Output:\nhi\n") {
		t.Errorf("function_call_output = %q", out)
	}
}

func TestCodexExecApplyPatch(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{ApplyPatchCall("*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n")}},
		ResponsesReply{Items: []OutputItem{MessageItem("Created hello.txt.")}},
	)
	run := runCodex(t, srv, "", "", "create hello.txt", args("--sandbox", "workspace-write")...)
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	if b, err := os.ReadFile(filepath.Join(run.work, "hello.txt")); err != nil || string(b) != "hello from codex\n" {
		t.Errorf("hello.txt = %q, %v; want the patch applied", b, err)
	}
	fcs := run.items("file_change")
	want := []any{map[string]any{"path": filepath.Join(run.work, "hello.txt"), "kind": "add"}}
	if len(fcs) != 1 || !reflect.DeepEqual(fcs[0]["changes"], want) || fcs[0]["status"] != "completed" {
		t.Errorf("file_change items = %v, want one with changes %v:\n%s", fcs, want, run.dump())
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	outs := inputOfType(bodies[1], "custom_tool_call_output")
	calls := inputOfType(bodies[1], "custom_tool_call")
	if len(outs) != 1 || len(calls) != 1 || outs[0]["call_id"] != calls[0]["call_id"] ||
		!strings.Contains(outs[0]["output"].(string), "Success. Updated the following files:\nA hello.txt") {
		t.Errorf("second request: custom tool calls %v, outputs %v", calls, outs)
	}
}

func TestCodexExecUnauthorized(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Status: 401})
	run := runCodex(t, srv, "", "", "hi", args()...)
	var ee *exec.ExitError
	if !errors.As(run.err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("codex: %v, want exit status 1", run.err)
	}
	tf := run.find("turn.failed")
	msg, _ := tf["error"].(map[string]any)["message"].(string)
	if tf == nil || !strings.Contains(msg, "401 Unauthorized: Incorrect API key provided.") {
		t.Errorf("turn.failed = %v:\n%s", tf, run.dump())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: no retries", n)
	}
}

func TestCodexExecDroppedStream(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Drop: true, Items: []OutputItem{MessageItem("This will break midway through the stream")}})
	run := runCodex(t, srv, "", "", "hi", args()...)
	saveExecRecording(t, run, "stream_dropped")
	var ee *exec.ExitError
	if !errors.As(run.err, &ee) || ee.ExitCode() != 1 || run.find("turn.failed") == nil {
		t.Errorf("codex: %v, want exit status 1 after turn.failed:\n%s", run.err, run.dump())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: no retries", n)
	}
	t.Logf("stdout:\n%s", run.dump())
}

func TestCodexExecResume(t *testing.T) {
	t.Parallel()
	second := ResponsesUsage{InputTokens: 2000, CachedTokens: 1500, OutputTokens: 70, ReasoningTokens: 30, TotalTokens: 2070}
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("Noted: the word is heron.")}, Usage: testUsage},
		ResponsesReply{Items: []OutputItem{MessageItem("You said heron.")}, Usage: second},
	)
	dir, work := t.TempDir(), t.TempDir()
	first := runCodex(t, srv, dir, work, "remember the word heron", args()...)
	ts := first.find("thread.started")
	if first.err != nil || ts == nil {
		t.Fatalf("first turn: %v\n%s", first.err, first.dump())
	}
	thread, _ := ts["thread_id"].(string)
	run := runCodex(t, srv, dir, work, "what was the word?", "exec", "resume", "--json", "--skip-git-repo-check", thread, "-")
	saveExecRecording(t, run, "resume_second_turn")
	if run.err != nil {
		t.Errorf("codex exec resume: %v\n%s", run.err, run.dump())
	}
	if ts := run.find("thread.started"); ts == nil || ts["thread_id"] != thread {
		t.Errorf("thread.started = %v, want the same thread %s", ts, thread)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	// The whole history goes to the API again.
	users := messageTexts(bodies[1], "user")
	assistants := messageTexts(bodies[1], "assistant")
	if !containsAll(users, "remember the word heron", "what was the word?") || !containsAll(assistants, "Noted: the word is heron.") {
		t.Errorf("second request: user texts %q, assistant texts %q, want the first turn in them", users, assistants)
	}
	// turn.completed on the resumed thread reports the thread's total, not
	// the turn's own usage.
	want := map[string]any{
		"input_tokens": 3000.0, "cached_input_tokens": 2100.0, "cache_write_input_tokens": 0.0,
		"output_tokens": 120.0, "reasoning_output_tokens": 50.0,
	}
	if u := run.usage(t); !reflect.DeepEqual(u, want) {
		t.Errorf("resumed turn.completed usage = %v, want the thread's total %v", u, want)
	}
}

// containsAll reports whether list holds every one of want.
func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(list, w) {
			return false
		}
	}
	return true
}

// writePNG writes a small red PNG to path and returns its bytes.
func writePNG(t *testing.T, path string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for y := range 8 {
		for x := range 8 {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// inputImages returns the image_url of every input_image in body's input
// messages.
func inputImages(body map[string]any) []string {
	var out []string
	for _, it := range inputOfType(body, "message") {
		content, _ := it["content"].([]any)
		for _, c := range content {
			if p, _ := c.(map[string]any); p["type"] == "input_image" {
				u, _ := p["image_url"].(string)
				out = append(out, u)
			}
		}
	}
	return out
}

func TestCodexExecImage(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem("I see a small red square.")}})
	work := t.TempDir()
	pngBytes := writePNG(t, filepath.Join(work, "red.png"))
	run := runCodex(t, srv, "", work, "what is in this image?", "exec", "--json", "-i", "red.png", "--skip-git-repo-check", "-")
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(bodies))
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	if imgs := inputImages(bodies[0]); len(imgs) != 1 || imgs[0] != want {
		t.Errorf("input images = %.200q, want the file's bytes %.200q", imgs, want)
	}
	if texts := messageTexts(bodies[0], "user"); len(texts) == 0 || texts[len(texts)-1] != "what is in this image?" {
		t.Errorf("user texts = %q, want the prompt last", texts)
	}
}

// itemTypes lists the types of the run's item.started and item.completed
// items, each prefixed with "started " or "completed ".
func (r *codexRun) itemTypes() []string {
	var out []string
	for _, l := range r.lines {
		it, _ := l["item"].(map[string]any)
		switch l["type"] {
		case "item.started":
			out = append(out, "started "+fmt.Sprint(it["type"]))
		case "item.completed":
			out = append(out, "completed "+fmt.Sprint(it["type"]))
		}
	}
	return out
}

func TestCodexExecReasoningCommandPatch(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{
			ReasoningItem("**Looking around**\n\nList the folder first."),
			{Type: "message", Text: "I'll list the folder, then add a file.", Phase: "commentary"},
			ExecCommandCall("ls -a"),
		}},
		ResponsesReply{Items: []OutputItem{
			ReasoningItem("**Adding the file**"),
			ApplyPatchCall("*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n"),
		}},
		ResponsesReply{Items: []OutputItem{{Type: "message", Text: "Added notes.txt.", Phase: "final_answer"}}},
	)
	run := runCodex(t, srv, "", "", "look around and add notes.txt", args("--sandbox", "workspace-write")...)
	saveExecRecording(t, run, "reasoning_command_patch")
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	want := []string{
		"completed reasoning", "completed agent_message",
		"started command_execution", "completed command_execution",
		"completed reasoning", "started file_change", "completed file_change",
		"completed agent_message",
	}
	if got := run.itemTypes(); !reflect.DeepEqual(got, want) {
		t.Errorf("items = %q, want %q:\n%s", got, want, run.dump())
	}
	if b, err := os.ReadFile(filepath.Join(run.work, "notes.txt")); err != nil || string(b) != "first line\n" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestCodexExecCommandFailures(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "denied.txt")
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{ExecCommandCall("echo oops >&2; exit 3")}},
		ResponsesReply{Items: []OutputItem{ExecCommandCall("touch " + outside)}},
		ResponsesReply{Items: []OutputItem{MessageItem("Both failed.")}},
	)
	// With /tmp left out of the writable roots, the other temporary folder
	// is outside the workspace.
	run := runCodex(t, srv, "", "", "run two commands", args("--sandbox", "workspace-write",
		"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true")...)
	saveExecRecording(t, run, "command_failures")
	if run.err != nil {
		t.Errorf("codex: %v\n%s", run.err, run.dump())
	}
	// The failing command is an item. The one the sandbox stopped (approval
	// policy never: codex exec does not ask) usually is not; on a loaded
	// machine codex sometimes reports it as a failed command too, which is
	// as true: either way it failed and wrote nothing.
	cmds := run.items("command_execution")
	if len(cmds) < 1 || cmds[0]["status"] != "failed" || cmds[0]["exit_code"] != 3.0 || cmds[0]["aggregated_output"] != "oops\n" {
		t.Errorf("command_execution items = %v, want the failed one first:\n%s", cmds, run.dump())
	}
	if len(cmds) > 2 || len(cmds) == 2 && (cmds[1]["status"] != "failed" || !strings.Contains(fmt.Sprint(cmds[1]["command"]), "touch ")) {
		t.Errorf("command_execution items = %v, want at most the stopped command after it, failed:\n%s", cmds, run.dump())
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("the sandbox let the command write %s", outside)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	outs := inputOfType(bodies[2], "function_call_output")
	if out, _ := outs[len(outs)-1]["output"].(string); !strings.Contains(out, "Read-only file system") {
		t.Errorf("output of the stopped command = %q", out)
	}
}
