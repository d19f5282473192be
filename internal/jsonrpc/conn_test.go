package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestConnReadAndCall: a Conn hands each request and notification to its
// handler in order, answers a line that is no message with its error
// (keeping a readable id), gives a response to the Call waiting for it and
// drops one that answers nothing.
func TestConnReadAndCall(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(outW, Options{})
	out := bufio.NewScanner(outR)
	next := func() map[string]any {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("the output ended: %v", out.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", out.Bytes(), err)
		}
		return m
	}
	handled := make(chan *Message, 8)
	done := make(chan error, 1)
	go func() { done <- <-c.Read(context.Background(), inR, func(m *Message) { handled <- m }) }()
	send := func(line string) { io.WriteString(inW, line+"\n") }

	send(`{"jsonrpc":"2.0","id":7,"method":"a","params":{"x":1}}`)
	send(`  {"jsonrpc":"2.0","method":"b"}` + "\r")
	if m := <-handled; m.Method != "a" || string(m.ID) != "7" || !m.IsRequest() {
		t.Errorf("first handled %+v", m)
	}
	if m := <-handled; m.Method != "b" || m.IsRequest() {
		t.Errorf("second handled %+v", m)
	}
	for _, tt := range []struct {
		line string
		code float64
		id   any
	}{
		{`not json`, CodeParseError, nil},
		{`[{"jsonrpc":"2.0","id":1,"method":"a"}]`, CodeInvalidRequest, nil},
		{`{"jsonrpc":"1.0","id":"x","method":"a"}`, CodeInvalidRequest, "x"},
		{`{"jsonrpc":"2.0","id":true,"method":"a"}`, CodeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":3,"method":1}`, CodeInvalidRequest, 3.0},
		{`{"jsonrpc":"2.0","id":4,"params":` + strings.Repeat("[", MaxDepth+1), CodeInvalidRequest, 4.0},
	} {
		send(tt.line)
		m := next()
		e, _ := m["error"].(map[string]any)
		if e["code"] != tt.code || m["id"] != tt.id {
			t.Errorf("%.40s: answered %v, want code %v, id %v", tt.line, m, tt.code, tt.id)
		}
	}

	send(`{"jsonrpc":"2.0","id":99,"result":{}}`) // answers nothing: dropped
	called := make(chan *Message, 1)
	go func() {
		m, err := c.Call(context.Background(), "ask", map[string]any{"q": 1})
		if err != nil {
			t.Error(err)
		}
		called <- m
	}()
	req := next()
	if req["method"] != "ask" {
		t.Fatalf("sent %v, want the call (the response to nothing was answered?)", req)
	}
	id, _ := json.Marshal(req["id"])
	send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"ok":true}}`)
	if m := <-called; string(m.Result) != `{"ok":true}` {
		t.Errorf("the call got %s", m.Result)
	}

	go c.Reply(&Message{ID: json.RawMessage(`5`)}, nil, Errorf(CodeInvalidParams, "bad")) // the pipe holds nothing
	if m := next(); m["id"] != 5.0 || m["error"].(map[string]any)["code"] != float64(CodeInvalidParams) {
		t.Errorf("reply %v", m)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("read: %v", err)
	}
}
