// Package jsonrpc is JSON-RPC 2.0 over a pair of streams, one message a
// line, as spbridge serve speaks it to an editor: the messages and their
// errors; the Writer, which writes each message as one line through a
// buffer flushed whenever no other message waits, and gives a client that
// stops reading up once the server shuts down; and the Conn, which reads
// the lines (answering those that are no message: not JSON, a batch,
// too long, nested too deep), hands each request and notification to its
// handler in order, and matches the client's responses with the requests
// the server sent it (Call). What the methods mean is the caller's
// (internal/acp).
package jsonrpc

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC's error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// Errorf is an Error with this code and a message as fmt.Sprintf makes it.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Message is any JSON-RPC message as read. Result and Error are kept raw
// so that a response is told apart by the members it has, whatever they
// hold.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// IsRequest reports whether the message expects a response: it has an
// id, null included (a notification is a request without one).
func (m *Message) IsRequest() bool { return len(m.ID) > 0 }

// IsResponse reports whether the message answers a request (ours or
// not): no method, and a result or an error.
func (m *Message) IsResponse() bool {
	return m.Method == "" && (len(m.Result) > 0 || len(m.Error) > 0)
}

// ValidID reports whether the id is one JSON-RPC allows: a string, a
// number or null.
func ValidID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return string(id) == "null"
}

// Err is the response's error, or nil when it has none.
func (m *Message) Err() *Error {
	if len(m.Error) == 0 || string(m.Error) == "null" {
		return nil
	}
	var e Error
	if json.Unmarshal(m.Error, &e) != nil {
		return &Error{Code: CodeInternalError, Message: "the client answered with an error that could not be read"}
	}
	return &e
}

// DecodeParams reads params into v; missing or wrong params are invalid
// (CodeInvalidParams).
func DecodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return Errorf(CodeInvalidParams, "invalid params: missing")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}
