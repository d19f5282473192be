package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"spbridge/internal/jsonrpc"
)

// deep is a JSON value nested levels deep, objects and arrays by turns.
func deep(levels int) string {
	var open, closing strings.Builder
	for i := range levels {
		if i%2 == 0 {
			open.WriteString(`{"a":`)
		} else {
			open.WriteString(`[`)
		}
	}
	for i := levels - 1; i >= 0; i-- {
		if i%2 == 0 {
			closing.WriteString(`}`)
		} else {
			closing.WriteString(`]`)
		}
	}
	return open.String() + "1" + closing.String()
}

// TestTooDeepRequestKeepsItsID: a request nested deeper than the reader
// takes gets -32600 with its own id, wherever the id stands among the
// members; an id JSON-RPC does not allow, or none, gets null; a request at
// the limit is served.
func TestTooDeepRequestKeepsItsID(t *testing.T) {
	c := startServer(t)
	over := deep(jsonrpc.MaxDepth) // inside params: one level more
	tests := []struct {
		line string
		id   any // the response's id as read; nil for null
	}{
		{`{"jsonrpc":"2.0","id":41,"method":"initialize","params":` + over + `}`, 41.0},
		{`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"x","prompt":` + over + `},"id":"deep \"one\""}`, `deep "one"`},
		{`{"id":-7e2,"params":` + strings.Repeat("[", 3*jsonrpc.MaxDepth), -700.0}, // not even complete
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"initialize","params":` + over + `}`, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"initialize","params":` + over + `}`, nil},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":` + over + `}`, nil},
		{`[` + over + `]`, nil},
	}
	for _, tt := range tests {
		c.raw(tt.line)
		m, _ := c.until(func(m map[string]any) bool { return m["error"] != nil })
		e, _ := m["error"].(map[string]any)
		if m["id"] != tt.id || errCode(m) != jsonrpc.CodeInvalidRequest || !strings.Contains(e["message"].(string), "nested deeper than 10000 levels") {
			t.Errorf("%.60s…: %v, want -32600 with id %v", tt.line, m, tt.id)
		}
	}
	// At the limit (the message, its params, then the rest): read and
	// served.
	res, _ := c.request("initialize", json.RawMessage(`{"protocolVersion":1,"x":`+deep(jsonrpc.MaxDepth-2)+`}`))
	if res["protocolVersion"] != 1.0 {
		t.Errorf("initialize at the limit = %v", res)
	}
}

// TestTooDeepAnswer: the client's answer to a permission request nested
// too deep is that request's error (the tool is denied, the turn goes on);
// it is not answered.
func TestTooDeepAnswer(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	c.mu.Lock()
	c.answers = []string{"unanswered", "allow_once"}
	c.mu.Unlock()
	prompt := c.call("session/prompt", promptParams(pkg, "ask"))
	asked, _ := c.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" })
	id, _ := json.Marshal(asked["id"])
	c.raw(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + deep(jsonrpc.MaxDepth) + `}`)
	m, seen := c.response(prompt)
	if m["error"] != nil {
		t.Fatalf("prompt: %v", m)
	}
	if texts := updates(seen, "agent_message_chunk"); len(texts) == 0 || texts[0]["content"].(map[string]any)["text"] != "allow=false allow=true " {
		t.Errorf("reply %v, want the first request denied", texts)
	}
	for _, m := range seen {
		if m["error"] != nil {
			t.Errorf("the answer was answered: %v", m)
		}
	}
}
