package fakeapi

// This file fakes the OpenAI Responses API, which the Codex CLI talks to
// through a model provider whose base_url points at the server (see
// OpenAIServer.CodexEnv).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ResponsesReply is one scripted answer to one POST /v1/responses request.
//
// The zero ResponsesReply answers with the assistant message "ok".
type ResponsesReply struct {
	// Items are the output items of the response, in order. None means
	// one assistant message "ok".
	Items []OutputItem

	// Status, when not zero, makes the reply an HTTP error with this status
	// and an OpenAI error body of ErrorType, ErrorCode and ErrorMessage;
	// Items are not used. Empty fields are derived from Status.
	Status       int
	ErrorType    string
	ErrorCode    string
	ErrorMessage string

	// Drop cuts the connection after the response's first delta (after
	// response.created when it has none), before response.completed, as
	// when a network link fails.
	Drop bool

	// Failed ends the stream after the response's first delta (after
	// response.created when it has none) with a response.failed event
	// carrying ErrorCode and ErrorMessage (default server_error, "The server
	// had an error while processing your request.") instead of
	// response.completed.
	Failed bool

	// Hold stops the stream after the response's first delta (after
	// response.created when it has none) and keeps the connection open,
	// sending nothing more, until the client goes away or the server is
	// closed: a stream that only an interrupt (or Close) ends, however
	// slowly the test runs.
	Hold bool

	// Pause, when not nil, stops the stream after the response's first
	// delta (after response.created when it has none) until Pause is
	// closed, then sends the rest: a reply still streaming while the test
	// acts, however busy the machine.
	Pause <-chan struct{}

	// ChunkDelay is the pause before each SSE event after response.created,
	// to make a slow stream.
	ChunkDelay time.Duration

	// Usage is the token usage that response.completed reports. The zero
	// Usage reports 100 input tokens, about a token for every four bytes of
	// output and their sum as the total.
	Usage ResponsesUsage

	// Match, when not nil, restricts the reply to requests whose body it
	// reports true for; a request takes the first reply in the script that
	// it may take.
	Match func(body []byte) bool
}

// OutputItem is one output item of a ResponsesReply. MessageItem,
// ReasoningItem, ExecCommandCall and ApplyPatchCall make the ones Codex
// acts on.
type OutputItem struct {
	// Type is "message" (also for an empty or unknown Type), "reasoning",
	// "function_call", "custom_tool_call" or "tool_search_call".
	Type string

	// ID is the item's id; empty means a generated one ("msg_fake_…",
	// "rs_fake_…", "fc_fake_…" or "ctc_fake_…").
	ID string

	// Text is a message's text, or a reasoning item's raw reasoning content
	// (streamed as response.reasoning_text.delta), which may be empty.
	Text string

	// Phase is a message's phase, such as "commentary" or "final_answer";
	// empty leaves the field out.
	Phase string

	// Summary is a reasoning item's summary parts, each streamed as
	// response.reasoning_summary_text.delta with its summary_index.
	Summary []string

	// Name is the tool a function_call or custom_tool_call calls, such as
	// "exec_command" or "apply_patch".
	Name string

	// Namespace is a function_call's namespace, the prefix of the deferred
	// tools it belongs to (an MCP server's, "mcp__SERVER__"); empty leaves
	// the field out.
	Namespace string

	// CallID is a tool call's call_id, which the output in the next request
	// refers to; empty means a generated "call_fake_…" id.
	CallID string

	// Arguments are a function_call's arguments, marshaled to JSON and sent
	// as a string; nil means {}.
	Arguments any

	// ArgumentsText, when not empty, is a function_call's arguments string
	// sent as it is, byte for byte (in place of Arguments): a model's own
	// spacing and key order, which marshaling would not keep.
	ArgumentsText string

	// Input is a custom_tool_call's freeform input.
	Input string

	// Query is a tool_search_call's query: Codex searches the deferred
	// tools (an MCP server's) with it and offers those it finds to the
	// next request, where a function_call with their Namespace may call
	// them.
	Query string
}

// MessageItem returns an assistant message with text.
func MessageItem(text string) OutputItem {
	return OutputItem{Type: "message", Text: text}
}

// ReasoningItem returns a reasoning item with summary as its summary parts.
func ReasoningItem(summary ...string) OutputItem {
	return OutputItem{Type: "reasoning", Summary: summary}
}

// ExecCommandCall returns a call of Codex's exec_command function tool,
// which runs cmd in the user's shell (bash -lc) in the turn's working
// folder, under the turn's sandbox.
func ExecCommandCall(cmd string) OutputItem {
	return OutputItem{Type: "function_call", Name: "exec_command", Arguments: map[string]any{"cmd": cmd}}
}

// ApplyPatchCall returns a call of Codex's apply_patch custom (freeform)
// tool with patch, which is in Codex's patch format ("*** Begin Patch\n***
// Add File: hello.txt\n+hello\n*** End Patch\n").
func ApplyPatchCall(patch string) OutputItem {
	return OutputItem{Type: "custom_tool_call", Name: "apply_patch", Input: patch}
}

// ResponsesUsage is the token usage of a ResponsesReply. Codex reads all
// five fields (and needs total_tokens present, which it always is here).
type ResponsesUsage struct {
	InputTokens     int
	CachedTokens    int // input_tokens_details.cached_tokens
	OutputTokens    int
	ReasoningTokens int // output_tokens_details.reasoning_tokens
	TotalTokens     int
}

// MarshalJSON writes u the way the API does, with the details nested.
func (u ResponsesUsage) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  map[string]int{"cached_tokens": u.CachedTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]int{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens":          u.TotalTokens,
	})
}

// OpenAIServer is a running fake OpenAI Responses API. Its methods are safe
// for concurrent use.
type OpenAIServer struct {
	// URL is the server's root, such as "http://127.0.0.1:41234"; Codex's
	// base_url is URL + "/v1".
	URL string

	base[ResponsesReply]
}

// NewOpenAI starts a fake OpenAI Responses API on 127.0.0.1 and a port the
// system chooses, with replies as its script. Call Close when done.
//
// Each POST /v1/responses takes the first reply in the script that it may
// take, or the message "ok" when none is left, and gets it as a stream of
// server-sent events (response.created; for each item
// response.output_item.added, its deltas and response.output_item.done;
// response.completed with the usage), or as one JSON response when it does
// not ask to stream. Codex makes one such request per model call: a turn
// with a tool call takes one reply for the call and one for what follows
// the tool's output. Any other request gets a 404 error. Every request is
// recorded.
func NewOpenAI(replies ...ResponsesReply) (*OpenAIServer, error) {
	s := &OpenAIServer{}
	url, err := s.start(replies, s.serve)
	if err != nil {
		return nil, err
	}
	s.URL = url
	return s, nil
}

// serve records a request and answers it.
func (s *OpenAIServer) serve(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()

	body, id, err := s.record(r)
	// Codex puts x-request-id into its error messages.
	w.Header().Set("x-request-id", "req_fake_"+id)
	switch {
	case err != nil:
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "read body: "+err.Error())
	case len(body) > maxBody:
		writeOpenAIError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "request body too large")
	case r.Header.Get("Content-Encoding") != "":
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "fakeapi: compressed bodies are not supported: "+r.Header.Get("Content-Encoding"))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		s.responses(w, r, body)
	default:
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "no such route: "+r.Method+" "+r.URL.Path)
	}
}

// responsesRequest holds the fields of a /v1/responses request the server
// looks at.
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}

// responses answers POST /v1/responses.
func (s *OpenAIServer) responses(w http.ResponseWriter, r *http.Request, body []byte) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "body is not a JSON object: "+err.Error())
		return
	}
	if req.Model == "" {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "Missing required parameter: 'model'.")
		return
	}

	reply := s.take(body)
	if reply.Status != 0 {
		typ, code, msg := openAIErrorOf(reply.Status, reply.ErrorType, reply.ErrorCode, reply.ErrorMessage)
		writeOpenAIError(w, reply.Status, typ, code, msg)
		return
	}

	s.mu.Lock()
	resp := s.response(&reply, req.Model)
	s.mu.Unlock()
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	s.stream(w, r, &reply, resp)
}

// take removes and returns the first reply in the script that a request with
// body may take, or the zero reply when there is none.
func (s *OpenAIServer) take(body []byte) ResponsesReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rep := range s.script {
		if rep.Match != nil && !rep.Match(body) {
			continue
		}
		s.script = append(s.script[:i:i], s.script[i+1:]...)
		return rep
	}
	return ResponsesReply{}
}

// response is a Responses API response object.
type response struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Status    string            `json:"status"`
	Model     string            `json:"model"`
	Output    []json.RawMessage `json:"output"`
	Usage     *ResponsesUsage   `json:"usage"`
	Error     any               `json:"error"`

	items []outputItem // Output before marshaling
}

// outputItem is an output item as the API sends it; which fields appear
// depends on Type.
type outputItem struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Status    string         `json:"status,omitempty"`
	Role      string         `json:"role,omitempty"`
	Content   *[]contentPart `json:"content,omitempty"`
	Phase     string         `json:"phase,omitempty"`
	Summary   *[]contentPart `json:"summary,omitempty"`
	Name      string         `json:"name,omitempty"`
	Namespace string         `json:"namespace,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	Arguments *string        `json:"arguments,omitempty"`
	Input     *string        `json:"input,omitempty"`
	// Search is a tool_search_call's arguments (an object, unlike a
	// function call's string).
	Search map[string]any `json:"-"`
}

// MarshalJSON writes a tool_search_call with its arguments as an object
// and execution "client"; any other item as its fields say.
func (o outputItem) MarshalJSON() ([]byte, error) {
	type plain outputItem
	if o.Type != "tool_search_call" {
		return json.Marshal(plain(o))
	}
	return json.Marshal(map[string]any{"type": o.Type, "id": o.ID, "status": o.Status, "call_id": o.CallID,
		"execution": "client", "arguments": o.Search})
}

// contentPart is a part of a message's content (output_text) or of a
// reasoning item's summary (summary_text) or content (reasoning_text).
type contentPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
}

// response builds the complete response for reply. The caller holds s.mu.
func (s *OpenAIServer) response(reply *ResponsesReply, model string) *response {
	items := reply.Items
	if len(items) == 0 {
		items = []OutputItem{MessageItem("ok")}
	}
	resp := &response{
		ID:        "resp_fake_" + s.nextID(),
		Object:    "response",
		CreatedAt: time.Now().Unix(),
		Status:    "completed",
		Model:     model,
	}
	outBytes := 0
	for _, it := range items {
		oi := outputItem{Type: it.Type, ID: it.ID, Status: "completed"}
		switch it.Type {
		case "reasoning":
			oi.Status = ""
			if oi.ID == "" {
				oi.ID = "rs_fake_" + s.nextID()
			}
			summary := make([]contentPart, 0, len(it.Summary))
			for _, t := range it.Summary {
				summary = append(summary, contentPart{Type: "summary_text", Text: t})
				outBytes += len(t)
			}
			oi.Summary = &summary
			if it.Text != "" {
				oi.Content = &[]contentPart{{Type: "reasoning_text", Text: it.Text}}
				outBytes += len(it.Text)
			}
		case "function_call":
			if oi.ID == "" {
				oi.ID = "fc_fake_" + s.nextID()
			}
			oi.Name, oi.Namespace, oi.CallID = it.Name, it.Namespace, it.CallID
			args := "{}"
			if it.ArgumentsText != "" {
				args = it.ArgumentsText
			} else if it.Arguments != nil {
				b, err := json.Marshal(it.Arguments)
				if err != nil {
					b, _ = json.Marshal(map[string]string{"fakeapi_error": err.Error()})
				}
				args = string(b)
			}
			oi.Arguments = &args
			outBytes += len(args)
		case "tool_search_call":
			if oi.ID == "" {
				oi.ID = "tsc_fake_" + s.nextID()
			}
			oi.CallID, oi.Search = it.CallID, map[string]any{"query": it.Query, "limit": 8}
		case "custom_tool_call":
			if oi.ID == "" {
				oi.ID = "ctc_fake_" + s.nextID()
			}
			oi.Name, oi.CallID = it.Name, it.CallID
			input := it.Input
			oi.Input = &input
			outBytes += len(input)
		default:
			oi.Type = "message"
			if oi.ID == "" {
				oi.ID = "msg_fake_" + s.nextID()
			}
			oi.Role, oi.Phase = "assistant", it.Phase
			oi.Content = &[]contentPart{{Type: "output_text", Text: it.Text, Annotations: &[]any{}}}
			outBytes += len(it.Text)
		}
		if (oi.Type == "function_call" || oi.Type == "custom_tool_call" || oi.Type == "tool_search_call") && oi.CallID == "" {
			oi.CallID = "call_fake_" + s.nextID()
		}
		resp.items = append(resp.items, oi)
		resp.Output = append(resp.Output, mustMarshal(oi))
	}
	u := reply.Usage
	if u == (ResponsesUsage{}) {
		u = ResponsesUsage{InputTokens: 100, OutputTokens: estimateTokens(outBytes)}
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	resp.Usage = &u
	return resp
}

// mustMarshal marshals v, which cannot fail for the types this file
// marshals.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakeapi: " + err.Error())
	}
	return b
}

// stream sends resp as server-sent events, the way the API streams a
// response.
func (s *OpenAIServer) stream(w http.ResponseWriter, r *http.Request, reply *ResponsesReply, resp *response) {
	events := responseEvents(resp)
	if reply.Drop || reply.Failed || reply.Hold {
		// Break after the first delta, or after response.created when
		// there is none.
		cut := 1
		for i, ev := range events {
			if strings.HasSuffix(ev.name, ".delta") {
				cut = i + 1
				break
			}
		}
		events = events[:cut]
		if reply.Failed {
			code, msg := reply.ErrorCode, reply.ErrorMessage
			if code == "" {
				code = "server_error"
			}
			if msg == "" {
				msg = "The server had an error while processing your request."
			}
			failed := *resp
			failed.Status, failed.Output, failed.Usage = "failed", []json.RawMessage{}, nil
			failed.Error = map[string]string{"code": code, "message": msg}
			events = append(events, sseEventData{"response.failed", map[string]any{"response": failed}})
		}
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	pauseAt := -1
	if reply.Pause != nil {
		pauseAt = 1
		for i, ev := range events {
			if strings.HasSuffix(ev.name, ".delta") {
				pauseAt = i + 1
				break
			}
		}
	}
	for seq, ev := range events {
		if seq == pauseAt {
			select {
			case <-reply.Pause:
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			}
		}
		if seq > 0 && reply.ChunkDelay > 0 {
			t := time.NewTimer(reply.ChunkDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-s.done:
				t.Stop()
				return
			}
		}
		ev.data["type"] = ev.name
		ev.data["sequence_number"] = seq
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, mustMarshal(ev.data)); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
	if reply.Drop {
		// Cut the connection without ending the chunked body.
		panic(http.ErrAbortHandler)
	}
	if reply.Hold {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	}
}

// sseEventData is one server-sent event before its type and
// sequence_number are added.
type sseEventData struct {
	name string
	data map[string]any
}

// responseEvents returns the events that stream resp: response.created and
// response.in_progress, each item's, and response.completed.
func responseEvents(resp *response) []sseEventData {
	start := *resp
	start.Status, start.Output, start.Usage = "in_progress", []json.RawMessage{}, nil
	out := []sseEventData{
		{"response.created", map[string]any{"response": start}},
		{"response.in_progress", map[string]any{"response": start}},
	}
	for i, it := range resp.items {
		out = append(out, sseEventData{"response.output_item.added", map[string]any{"output_index": i, "item": addedItem(it)}})
		for _, ev := range itemEvents(it) {
			ev.data["item_id"], ev.data["output_index"] = it.ID, i
			out = append(out, ev)
		}
		out = append(out, sseEventData{"response.output_item.done", map[string]any{"output_index": i, "item": it}})
	}
	return append(out, sseEventData{"response.completed", map[string]any{"response": resp}})
}

// addedItem returns it as response.output_item.added carries it: in
// progress, without the content that the deltas bring.
func addedItem(it outputItem) outputItem {
	empty := ""
	switch it.Type {
	case "reasoning":
		it.Summary, it.Content = &[]contentPart{}, nil
	case "function_call":
		it.Status, it.Arguments = "in_progress", &empty
	case "custom_tool_call":
		it.Status, it.Input = "in_progress", &empty
	case "tool_search_call":
		it.Status = "in_progress"
	default:
		it.Status, it.Content = "in_progress", &[]contentPart{}
	}
	return it
}

// itemEvents returns the events that stream it's content between
// response.output_item.added and response.output_item.done, without
// item_id and output_index.
func itemEvents(it outputItem) []sseEventData {
	var out []sseEventData
	add := func(name string, data map[string]any) {
		out = append(out, sseEventData{name, data})
	}
	switch it.Type {
	case "reasoning":
		for k, p := range *it.Summary {
			add("response.reasoning_summary_part.added", map[string]any{"summary_index": k, "part": contentPart{Type: "summary_text"}})
			for _, c := range chunks(p.Text) {
				add("response.reasoning_summary_text.delta", map[string]any{"summary_index": k, "delta": c})
			}
			add("response.reasoning_summary_text.done", map[string]any{"summary_index": k, "text": p.Text})
			add("response.reasoning_summary_part.done", map[string]any{"summary_index": k, "part": p})
		}
		if it.Content != nil {
			for k, p := range *it.Content {
				for _, c := range chunks(p.Text) {
					add("response.reasoning_text.delta", map[string]any{"content_index": k, "delta": c})
				}
				add("response.reasoning_text.done", map[string]any{"content_index": k, "text": p.Text})
			}
		}
	case "function_call":
		for _, c := range chunks(*it.Arguments) {
			add("response.function_call_arguments.delta", map[string]any{"delta": c})
		}
		add("response.function_call_arguments.done", map[string]any{"arguments": *it.Arguments})
	case "custom_tool_call":
		for _, c := range chunks(*it.Input) {
			add("response.custom_tool_call_input.delta", map[string]any{"call_id": it.CallID, "delta": c})
		}
		add("response.custom_tool_call_input.done", map[string]any{"call_id": it.CallID, "input": *it.Input})
	case "tool_search_call":
		// Sent whole in response.output_item.done.
	default:
		part := (*it.Content)[0]
		add("response.content_part.added", map[string]any{"content_index": 0, "part": contentPart{Type: "output_text", Annotations: &[]any{}}})
		for _, c := range chunks(part.Text) {
			add("response.output_text.delta", map[string]any{"content_index": 0, "delta": c, "logprobs": []any{}})
		}
		add("response.output_text.done", map[string]any{"content_index": 0, "text": part.Text, "logprobs": []any{}})
		add("response.content_part.done", map[string]any{"content_index": 0, "part": part})
	}
	return out
}

// openAIErrorOf returns the OpenAI error type, code and message for an error
// reply with status, filling in those left empty.
func openAIErrorOf(status int, typ, code, msg string) (string, string, string) {
	var dtyp, dcode, dmsg string
	switch status {
	case http.StatusBadRequest:
		dtyp, dmsg = "invalid_request_error", "Invalid request."
	case http.StatusUnauthorized:
		dtyp, dcode, dmsg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case http.StatusForbidden:
		dtyp, dcode, dmsg = "invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported."
	case http.StatusNotFound:
		dtyp, dcode, dmsg = "invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."
	case http.StatusTooManyRequests:
		dtyp, dcode, dmsg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 20s."
	case http.StatusServiceUnavailable:
		dtyp, dcode, dmsg = "server_error", "server_is_overloaded", "The engine is currently overloaded, please try again later."
	default:
		dtyp, dcode, dmsg = "server_error", "server_error", "The server had an error while processing your request. Sorry about that!"
	}
	if typ == "" {
		typ = dtyp
	}
	if code == "" {
		code = dcode
	}
	if msg == "" {
		msg = dmsg
		if msg == "" {
			msg = "status " + strconv.Itoa(status)
		}
	}
	return typ, code, msg
}

// writeOpenAIError answers with an OpenAI error body; an empty code is sent
// as null, as the API does.
func writeOpenAIError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c},
	})
}
