package fakeapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// start runs a server with replies for the length of the test.
func start(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	srv, err := NewAnthropic(replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// post sends a Messages request for model to srv, as Claude Code does.
func post(t *testing.T, srv *Server, path string, body any) *http.Response {
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
	req.Header.Set("X-Api-Key", "dummy")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// turn is the body of a conversation request.
func turn(stream bool) map[string]any {
	return map[string]any{
		"model":      "claude-test-1",
		"max_tokens": 32000,
		"stream":     stream,
		"messages":   []any{map[string]any{"role": "user", "content": "hi"}},
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// readSSE parses a whole event stream. It fails the test on a malformed
// event; err is the read error that ended the stream, nil for a clean end.
func readSSE(t *testing.T, r io.Reader) (events []sseEvent, err error) {
	t.Helper()
	br := bufio.NewReader(r)
	var ev sseEvent
	for {
		line, rerr := br.ReadString('\n')
		if rerr != nil {
			if rerr == io.EOF && line == "" && ev.name == "" {
				return events, nil
			}
			return events, rerr
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name == "" || ev.data == nil {
				t.Fatalf("event without a name or data: %+v", ev)
			}
			if ev.data["type"] != ev.name {
				t.Errorf("event %q has data type %v", ev.name, ev.data["type"])
			}
			events = append(events, ev)
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				t.Fatalf("data is not JSON: %q", line)
			}
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
}

// names lists the events' names.
func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

// assembled is a message put back together from its stream.
type assembled struct {
	model, id, stop string
	blocks          []map[string]string // type plus text, thinking, signature, id, name, input
	outputTokens    float64
}

func assemble(t *testing.T, events []sseEvent) assembled {
	t.Helper()
	var a assembled
	for _, e := range events {
		switch e.name {
		case "message_start":
			m := e.data["message"].(map[string]any)
			a.model, a.id = m["model"].(string), m["id"].(string)
		case "content_block_start":
			cb := e.data["content_block"].(map[string]any)
			b := map[string]string{"type": cb["type"].(string)}
			if id, ok := cb["id"].(string); ok {
				b["id"], b["name"] = id, cb["name"].(string)
			}
			if int(e.data["index"].(float64)) != len(a.blocks) {
				t.Errorf("content_block_start index %v, want %d", e.data["index"], len(a.blocks))
			}
			a.blocks = append(a.blocks, b)
		case "content_block_delta":
			b := a.blocks[int(e.data["index"].(float64))]
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				b["text"] += d["text"].(string)
			case "thinking_delta":
				b["thinking"] += d["thinking"].(string)
			case "signature_delta":
				b["signature"] += d["signature"].(string)
			case "input_json_delta":
				b["input"] += d["partial_json"].(string)
			default:
				t.Errorf("unknown delta %v", d)
			}
		case "message_delta":
			a.stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
			a.outputTokens = e.data["usage"].(map[string]any)["output_tokens"].(float64)
		}
	}
	return a
}

func TestStream(t *testing.T) {
	text := "Hello, wörld — a reply long enough to come in several chunks."
	srv := start(t, Reply{Blocks: []Block{
		{Type: "thinking", Thinking: "The user said hi.", Signature: "c2ln"},
		{Type: "text", Text: text},
		{Type: "tool_use", ID: "toolu_1", Name: "Bash", Input: map[string]any{"command": "echo hi"}},
	}})
	resp := post(t, srv, "/v1/messages?beta=true", turn(true))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	if resp.Header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	events, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := names(events)
	if got[0] != "message_start" || got[len(got)-2] != "message_delta" || got[len(got)-1] != "message_stop" {
		t.Errorf("events = %v", got)
	}
	deltas := 0
	for _, n := range got {
		if n == "content_block_delta" {
			deltas++
		}
	}
	if deltas < 6 {
		t.Errorf("%d content_block_delta events, want the content split into chunks", deltas)
	}

	a := assemble(t, events)
	if a.model != "claude-test-1" {
		t.Errorf("model = %q, want the request's", a.model)
	}
	if !strings.HasPrefix(a.id, "msg_") {
		t.Errorf("message id = %q", a.id)
	}
	want := []map[string]string{
		{"type": "thinking", "thinking": "The user said hi.", "signature": "c2ln"},
		{"type": "text", "text": text},
		{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": `{"command":"echo hi"}`},
	}
	if !reflect.DeepEqual(a.blocks, want) {
		t.Errorf("blocks = %v, want %v", a.blocks, want)
	}
	if a.stop != "tool_use" {
		t.Errorf("stop_reason = %q, want tool_use", a.stop)
	}
	if a.outputTokens < 1 {
		t.Errorf("output_tokens = %v", a.outputTokens)
	}
}

func TestNotStreaming(t *testing.T) {
	srv := start(t, Reply{
		Blocks:     []Block{{Type: "text", Text: "whole"}, {Type: "tool_use", Name: "Read"}},
		StopReason: "max_tokens",
		Usage:      Usage{InputTokens: 7, OutputTokens: 3, CacheReadInputTokens: 5},
	})
	resp := post(t, srv, "/v1/messages?beta=true", turn(false))
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var m struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []struct {
			Type, Text, ID, Name string
			Input                json.RawMessage
		}
		Usage Usage
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-test-1" || m.StopReason != "max_tokens" {
		t.Errorf("message = %+v", m)
	}
	if len(m.Content) != 2 || m.Content[0].Text != "whole" || m.Content[1].Name != "Read" ||
		!strings.HasPrefix(m.Content[1].ID, "toolu_") || string(m.Content[1].Input) != "{}" {
		t.Errorf("content = %+v", m.Content)
	}
	if m.Usage != (Usage{InputTokens: 7, OutputTokens: 3, CacheReadInputTokens: 5}) {
		t.Errorf("usage = %+v", m.Usage)
	}
}

func TestErrorReply(t *testing.T) {
	tests := []struct {
		reply    Reply
		typ, msg string
	}{
		{Reply{Status: 500}, "api_error", "Internal Server Error"},
		{Reply{Status: 401, ErrorMessage: "invalid x-api-key"}, "authentication_error", "invalid x-api-key"},
		{Reply{Status: 529}, "overloaded_error", "status 529"},
		{Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad"}, "invalid_request_error", "bad"},
	}
	for _, tt := range tests {
		srv := start(t)
		for _, stream := range []bool{true, false} {
			srv.Push(tt.reply)
			resp := post(t, srv, "/v1/messages", turn(stream))
			if resp.StatusCode != tt.reply.Status {
				t.Errorf("Status %d: got HTTP %d", tt.reply.Status, resp.StatusCode)
			}
			var body struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if body.Type != "error" || body.Error.Type != tt.typ || body.Error.Message != tt.msg {
				t.Errorf("Status %d: body = %+v, want error %s %q", tt.reply.Status, body, tt.typ, tt.msg)
			}
		}
	}
}

func TestMidStreamError(t *testing.T) {
	reply := Reply{MidStreamError: true, Blocks: []Block{{Type: "text", Text: "This will break midway through the stream"}}}
	srv := start(t, reply, reply)
	events, err := readSSE(t, post(t, srv, "/v1/messages", turn(true)).Body)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "error"}
	if got := names(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	e := events[len(events)-1].data["error"].(map[string]any)
	if e["type"] != "overloaded_error" {
		t.Errorf("error = %v", e)
	}

	// Without streaming, as in the CLI's retry, the whole message comes.
	var m struct{ Content []struct{ Text string } }
	if err := json.NewDecoder(post(t, srv, "/v1/messages", turn(false)).Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != reply.Blocks[0].Text {
		t.Errorf("content = %+v", m.Content)
	}
}

// TestHold: a held reply stops after its first content delta until Hold
// is closed, then streams the rest.
func TestHold(t *testing.T) {
	hold := make(chan struct{})
	reply := Reply{Hold: hold, Blocks: []Block{{Text: "one two three four five six seven eight"}}}
	srv := start(t, reply)
	resp := post(t, srv, "/v1/messages", turn(true))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "content_block_delta" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			seen = append(seen, strings.TrimSpace(name))
		}
	}
	// The stream waits here: it goes on only once Hold is closed, and
	// then to its end.
	close(hold)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rest, []byte("message_stop")) || bytes.Count(rest, []byte("event: content_block_delta")) != 3 {
		t.Errorf("after the hold: %q", rest)
	}
}

// textOf returns the text of a streamed reply.
func textOf(t *testing.T, srv *Server, body any) string {
	t.Helper()
	events, err := readSSE(t, post(t, srv, "/v1/messages?beta=true", body).Body)
	if err != nil {
		t.Fatal(err)
	}
	a := assemble(t, events)
	var s string
	for _, b := range a.blocks {
		s += b["text"]
	}
	return s
}

func TestScript(t *testing.T) {
	srv := start(t, Reply{Blocks: []Block{{Text: "one"}}})
	srv.Push(Reply{Blocks: []Block{{Text: "two"}}})
	srv.Push(Reply{
		Blocks: []Block{{Text: "side"}},
		Match:  func(body []byte) bool { return bytes.Contains(body, []byte(`"quota"`)) },
	})

	side := turn(true)
	side["max_tokens"] = 1
	side["messages"] = []any{map[string]any{"role": "user", "content": "."}}
	quota := turn(true)
	quota["max_tokens"] = 1
	quota["messages"] = []any{map[string]any{"role": "user", "content": "quota"}}
	steps := []struct {
		body any
		want string
	}{
		{side, "ok"},        // a side request leaves the script alone
		{turn(true), "one"}, // the script, in order
		{turn(true), "two"}, // skips the reply whose Match says no
		{quota, "side"},     // a reply with a Match may take a side request
		{turn(true), "ok"},  // the script is exhausted
		{turn(true), "ok"},
	}
	for i, s := range steps {
		if got := textOf(t, srv, s.body); got != s.want {
			t.Errorf("request %d: text %q, want %q", i+1, got, s.want)
		}
	}
}

func TestRequests(t *testing.T) {
	srv := start(t)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Errorf("URL = %q, want 127.0.0.1", srv.URL)
	}
	textOf(t, srv, turn(true))

	resp := post(t, srv, "/v1/messages/count_tokens?beta=true", turn(false))
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || resp.StatusCode != 200 || count.InputTokens < 1 {
		t.Errorf("count_tokens: HTTP %d, %+v, %v", resp.StatusCode, count, err)
	}

	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/api/hello", nil)
	hello, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hello.Body.Close()
	if hello.StatusCode != http.StatusOK {
		t.Errorf("HEAD /api/hello: HTTP %d", hello.StatusCode)
	}

	resp = post(t, srv, "/v1/nothing", map[string]any{})
	var e struct {
		Type  string
		Error struct{ Type string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 404 || e.Error.Type != "not_found_error" {
		t.Errorf("unknown path: HTTP %d, %+v, %v", resp.StatusCode, e, err)
	}

	reqs := srv.Requests()
	want := []struct{ method, path, query string }{
		{"POST", "/v1/messages", "beta=true"},
		{"POST", "/v1/messages/count_tokens", "beta=true"},
		{"HEAD", "/api/hello", ""},
		{"POST", "/v1/nothing", ""},
	}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests recorded, want %d", len(reqs), len(want))
	}
	for i, w := range want {
		r := reqs[i]
		if r.Method != w.method || r.Path != w.path || r.Query != w.query {
			t.Errorf("request %d = %s %s ? %s, want %s %s ? %s", i+1, r.Method, r.Path, r.Query, w.method, w.path, w.query)
		}
	}
	if reqs[0].Header.Get("X-Api-Key") != "dummy" {
		t.Errorf("header not recorded: %v", reqs[0].Header)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil || body["model"] != "claude-test-1" {
		t.Errorf("body not recorded: %s", reqs[0].Body)
	}
}

func TestCloseEndsSlowStream(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	before := runtime.NumGoroutine()
	srv, err := NewAnthropic(Reply{ChunkDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp := post(t, srv, "/v1/messages", turn(true))
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v", line, err)
	}

	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	<-closed // a Close that does not return is ended by go test's timeout
	rest, _ := io.ReadAll(br)
	if bytes.Contains(rest, []byte("message_stop")) {
		t.Errorf("the stream went on after Close: %q", rest)
	}
	resp.Body.Close()
	if _, err := http.Get(srv.URL + "/api/hello"); err == nil {
		t.Error("the server still answers after Close")
	}

	// The server's goroutines are gone; the client's go once their
	// connections see the close, which no event reports: the count is
	// watched until it drops (a leak is ended by go test's timeout, whose
	// goroutine dump shows it).
	http.DefaultClient.CloseIdleConnections()
	for runtime.NumGoroutine() > before {
		time.Sleep(10 * time.Millisecond)
	}
}

func TestChunks(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "äöüßéèêë", strings.Repeat("日本語", 7)} {
		got := chunks(s)
		if len(got) == 0 || len(got) > 4 || strings.Join(got, "") != s {
			t.Errorf("chunks(%q) = %q", s, got)
		}
		for _, c := range got {
			if !utf8.ValidString(c) {
				t.Errorf("chunks(%q) split a character: %q", s, got)
			}
		}
	}
}
