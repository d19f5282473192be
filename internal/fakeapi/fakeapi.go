// Package fakeapi serves a scripted model API on 127.0.0.1 for tests that run
// the real CLIs.
//
// NewAnthropic fakes the Anthropic Messages API, which Claude Code talks to
// when ANTHROPIC_BASE_URL points at it. Each request that carries the
// conversation takes the next scripted Reply and gets it as a stream of
// server-sent events, or as one JSON message when it does not ask to stream.
// NewOpenAI fakes the OpenAI Responses API the same way for the Codex CLI
// (its configuration comes from OpenAIServer.CodexEnv). Every request is
// recorded, in order, for the test to inspect.
package fakeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Request is one HTTP request the server received.
type Request struct {
	Method string
	Path   string // without the query, such as "/v1/messages"
	Query  string // the raw query without "?", such as "beta=true"
	Header http.Header
	Body   []byte // as received
}

// Reply is one scripted answer to one POST /v1/messages request.
//
// The zero Reply answers with the text "ok".
type Reply struct {
	// Blocks are the content blocks of the answer, in order. None means
	// one text block "ok".
	Blocks []Block

	// StopReason is the message's stop_reason. Empty means "tool_use" when
	// Blocks has a tool_use block and "end_turn" otherwise.
	StopReason string

	// Status, when not zero, makes the reply an HTTP error with this status
	// and an Anthropic error body of ErrorType and ErrorMessage; Blocks are
	// not used. Empty ErrorType and ErrorMessage are derived from Status.
	Status       int
	ErrorType    string
	ErrorMessage string

	// MidStreamError makes a streamed reply stop after its first content
	// delta with an SSE error event of ErrorType and ErrorMessage (default
	// overloaded_error, "Overloaded"). A request that does not stream gets
	// the whole message instead.
	MidStreamError bool

	// ChunkDelay is the pause before each SSE event after message_start,
	// to make a slow stream that a test can interrupt.
	ChunkDelay time.Duration

	// Hold, when not nil, pauses the stream after its first content delta
	// until Hold is closed or the client goes away: a reply that is still
	// streaming when a test interrupts it, however busy the machine.
	Hold <-chan struct{}

	// Usage is the token usage reported. The zero Usage reports 100 input
	// tokens and about a token for every four bytes of output.
	Usage Usage

	// Match, when not nil, restricts the reply to requests whose body it
	// reports true for; a request takes the first reply in the script that
	// it may take. Only a reply with a Match can answer a side request (see
	// NewAnthropic).
	Match func(body []byte) bool
}

// Block is one content block of a Reply.
type Block struct {
	Type string // "text" (also for an empty or unknown Type), "thinking" or "tool_use"

	Text string // text

	Thinking  string // thinking
	Signature string // thinking; empty means a made-up signature

	ID    string // tool_use; empty means a generated "toolu_fake_…" id
	Name  string // tool_use: the tool, such as "Bash"
	Input any    // tool_use: the input, marshaled to JSON; nil means {}
}

// Usage is the token usage of a Reply, as the API reports it.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Server is a running fake Anthropic Messages API. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the base URL to give the CLI, such as "http://127.0.0.1:41234".
	URL string

	base[Reply]
}

// base is what both fakes share: the listener, the script of replies, the
// record of requests, and a Close that ends slow streams and waits for every
// handler.
type base[R any] struct {
	srv      *http.Server
	served   chan struct{} // closed when Serve has returned
	done     chan struct{} // closed by Close, to end slow streams
	handlers sync.WaitGroup
	close    sync.Once

	mu       sync.Mutex
	script   []R
	requests []Request
	ids      int
}

// start listens on 127.0.0.1 and a port the system chooses and serves
// handler there, with replies as the script; it returns the server's URL.
func (b *base[R]) start(replies []R, handler http.HandlerFunc) (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fakeapi: listen: %w", err)
	}
	b.served = make(chan struct{})
	b.done = make(chan struct{})
	b.script = append([]R(nil), replies...)
	b.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(b.served)
		_ = b.srv.Serve(ln) // http.ErrServerClosed once Close runs
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close stops the server: it ends streams still being sent, waits for every
// handler to return and closes all connections. It is safe to call more than
// once.
func (b *base[R]) Close() {
	b.close.Do(func() {
		close(b.done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.srv.Shutdown(ctx); err != nil {
			_ = b.srv.Close()
		}
		<-b.served
		b.handlers.Wait()
	})
}

// Requests returns every request received so far, in the order they
// arrived. The caller may modify the result.
func (b *base[R]) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Request, len(b.requests))
	for i, r := range b.requests {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Push appends replies to the script.
func (b *base[R]) Push(replies ...R) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.script = append(b.script, replies...)
}

// record reads a request's body (up to maxBody+1 bytes) and records the
// request; it returns the body, a new request id, and the read's error.
func (b *base[R]) record(r *http.Request) ([]byte, string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	})
	return body, b.nextID(), err
}

// nextID returns a new number for an id. The caller holds b.mu.
func (b *base[R]) nextID() string {
	b.ids++
	return fmt.Sprintf("%04d", b.ids)
}

// maxBody bounds a request body; Claude Code's requests are tens of KiB, more
// with long tool results.
const maxBody = 64 << 20

// NewAnthropic starts a fake Anthropic Messages API on 127.0.0.1 and a port
// the system chooses, with replies as its script. Call Close when done.
//
// A POST /v1/messages (Claude Code adds ?beta=true) that carries the
// conversation takes the first reply in the script that it may take, or the
// text "ok" when none is left; the non-streaming retry that Claude Code sends
// after a mid-stream error is such a request too and takes the next reply. A
// side request, one with "max_tokens" of 1 or less (Claude Code's model,
// quota and key checks and its token-counting fallback), does not consume the
// script unless a reply with a Match takes it; it gets the text "ok". POST
// /v1/messages/count_tokens answers an estimate, and HEAD or GET /api/hello
// (Claude Code's connectivity check, sent unless
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set) answers 200. Any other
// request gets a 404 error. Every request is recorded.
func NewAnthropic(replies ...Reply) (*Server, error) {
	s := &Server{}
	url, err := s.start(replies, s.serve)
	if err != nil {
		return nil, err
	}
	s.URL = url
	return s, nil
}

// serve records a request and answers it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()

	body, id, err := s.record(r)
	w.Header().Set("request-id", "req_fake_"+id)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "read body: "+err.Error())
	case len(body) > maxBody:
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "request body too large")
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, r, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": estimateTokens(len(body))})
	case (r.Method == http.MethodHead || r.Method == http.MethodGet) && r.URL.Path == "/api/hello":
		writeJSON(w, http.StatusOK, map[string]string{"message": "hello"})
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "no such route: "+r.Method+" "+r.URL.Path)
	}
}

// messagesRequest holds the fields of a /v1/messages request the server
// looks at.
type messagesRequest struct {
	Model     string `json:"model"`
	Stream    bool   `json:"stream"`
	MaxTokens int    `json:"max_tokens"`
}

// isSide reports whether req is a side request rather than a turn of the
// conversation: Claude Code asks for a single token when it only checks a
// model, a key or a quota, or counts tokens without the count_tokens route.
func (req *messagesRequest) isSide() bool {
	return req.MaxTokens <= 1
}

// messages answers POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, body []byte) {
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not a JSON object: "+err.Error())
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "model: field required")
		return
	}

	reply, ok := s.take(body, req.isSide())
	if !ok {
		reply = Reply{}
	}
	if reply.Status != 0 {
		typ, msg := errorOf(reply.Status, reply.ErrorType, reply.ErrorMessage)
		writeError(w, reply.Status, typ, msg)
		return
	}

	s.mu.Lock()
	m := s.message(&reply, req.Model)
	s.mu.Unlock()
	if !req.Stream {
		writeJSON(w, http.StatusOK, m)
		return
	}
	s.stream(w, r, &reply, m)
}

// take removes and returns the first reply in the script that a request with
// body may take. A side request takes only a reply with a Match.
func (s *Server) take(body []byte, side bool) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rep := range s.script {
		if rep.Match == nil && side {
			continue
		}
		if rep.Match != nil && !rep.Match(body) {
			continue
		}
		s.script = append(s.script[:i:i], s.script[i+1:]...)
		return rep, true
	}
	return Reply{}, false
}

// message is a complete Messages API message.
type message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
}

// contentBlock is a content block as the API sends it; which fields appear
// depends on Type.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// message builds the complete message for reply. The caller holds s.mu.
func (s *Server) message(reply *Reply, model string) *message {
	blocks := reply.Blocks
	if len(blocks) == 0 {
		blocks = []Block{{Type: "text", Text: "ok"}}
	}
	m := &message{
		ID:      "msg_fake_" + s.nextID(),
		Type:    "message",
		Role:    "assistant",
		Model:   model,
		Content: make([]contentBlock, 0, len(blocks)),
	}
	stop := reply.StopReason
	outBytes := 0
	for _, b := range blocks {
		cb := contentBlock{Type: b.Type}
		switch b.Type {
		case "thinking":
			sig := b.Signature
			if sig == "" {
				sig = "ZmFrZS1zaWduYXR1cmU="
			}
			cb.Thinking, cb.Signature = &b.Thinking, &sig
			outBytes += len(b.Thinking)
		case "tool_use":
			cb.ID, cb.Name = b.ID, b.Name
			if cb.ID == "" {
				cb.ID = "toolu_fake_" + s.nextID()
			}
			cb.Input = json.RawMessage("{}")
			if b.Input != nil {
				in, err := json.Marshal(b.Input)
				if err != nil {
					in, _ = json.Marshal(map[string]string{"fakeapi_error": err.Error()})
				}
				cb.Input = in
			}
			outBytes += len(cb.Input)
			if stop == "" {
				stop = "tool_use"
			}
		default:
			cb.Type = "text"
			cb.Text = &b.Text
			outBytes += len(b.Text)
		}
		m.Content = append(m.Content, cb)
	}
	if stop == "" {
		stop = "end_turn"
	}
	m.StopReason = &stop
	m.Usage = reply.Usage
	if m.Usage == (Usage{}) {
		m.Usage = Usage{InputTokens: 100, OutputTokens: estimateTokens(outBytes)}
	}
	return m
}

// estimateTokens guesses the tokens in n bytes of text.
func estimateTokens(n int) int {
	return n/4 + 1
}

// stream sends m as server-sent events, the way the API streams a message.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, reply *Reply, m *message) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	first := true
	send := func(event string, data any) bool {
		if !first && reply.ChunkDelay > 0 {
			t := time.NewTimer(reply.ChunkDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return false
			case <-s.done:
				return false
			}
		}
		first = false
		b, err := json.Marshal(data)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}

	start := *m
	start.Content = []contentBlock{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1
	if !send("message_start", map[string]any{"type": "message_start", "message": start}) {
		return
	}
	if !send("ping", map[string]string{"type": "ping"}) {
		return
	}
	for i, cb := range m.Content {
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": emptyBlock(cb)}) {
			return
		}
		for j, d := range deltas(cb) {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
			if reply.MidStreamError && i == 0 && j == 0 {
				typ, msg := reply.ErrorType, reply.ErrorMessage
				if typ == "" {
					typ = "overloaded_error"
				}
				if msg == "" {
					msg = "Overloaded"
				}
				send("error", errorBody(typ, msg))
				return
			}
			if reply.Hold != nil && i == 0 && j == 0 {
				select {
				case <-reply.Hold:
				case <-r.Context().Done():
					return
				case <-s.done:
					return
				}
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": *m.StopReason, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": m.Usage.OutputTokens},
	}) {
		return
	}
	send("message_stop", map[string]string{"type": "message_stop"})
}

// emptyBlock returns cb as content_block_start carries it: without its
// content, which the deltas bring.
func emptyBlock(cb contentBlock) contentBlock {
	empty := ""
	switch cb.Type {
	case "thinking":
		cb.Thinking, cb.Signature = &empty, &empty
	case "tool_use":
		cb.Input = json.RawMessage("{}")
	default:
		cb.Text = &empty
	}
	return cb
}

// deltas splits cb's content into the content_block_delta payloads that
// stream it.
func deltas(cb contentBlock) []map[string]string {
	var out []map[string]string
	switch cb.Type {
	case "thinking":
		for _, c := range chunks(*cb.Thinking) {
			out = append(out, map[string]string{"type": "thinking_delta", "thinking": c})
		}
		out = append(out, map[string]string{"type": "signature_delta", "signature": *cb.Signature})
	case "tool_use":
		for _, c := range chunks(string(cb.Input)) {
			out = append(out, map[string]string{"type": "input_json_delta", "partial_json": c})
		}
	default:
		for _, c := range chunks(*cb.Text) {
			out = append(out, map[string]string{"type": "text_delta", "text": c})
		}
	}
	return out
}

// chunks splits s into at most four pieces of about equal size, never inside
// a UTF-8 sequence. The empty string is one empty piece.
func chunks(s string) []string {
	const n = 4
	size := (len(s) + n - 1) / n
	if size == 0 {
		return []string{""}
	}
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// errorOf returns the Anthropic error type and message for an error reply
// with status, filling in those left empty.
func errorOf(status int, typ, msg string) (string, string) {
	if typ == "" {
		switch status {
		case http.StatusBadRequest:
			typ = "invalid_request_error"
		case http.StatusUnauthorized:
			typ = "authentication_error"
		case http.StatusForbidden:
			typ = "permission_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		case http.StatusRequestEntityTooLarge:
			typ = "request_too_large"
		case http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case 529:
			typ = "overloaded_error"
		default:
			typ = "api_error"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
		if msg == "" {
			msg = "status " + strconv.Itoa(status)
		}
	}
	return typ, msg
}

// errorBody is the body of an API error, in a JSON response or an SSE error
// event.
func errorBody(typ, msg string) map[string]any {
	return map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, errorBody(typ, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"type":"error","error":{"type":"api_error","message":"fakeapi: marshal reply"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
