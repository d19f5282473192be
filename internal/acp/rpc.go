// Package acp serves spbridge as an Agent Client Protocol (version 1)
// agent: JSON-RPC 2.0, one message per line, on a reader and a writer. It
// translates: the read loop, each session's worker (its messages handled
// in arrival order), one handler per method, a turn's updates and the
// permission questions the session puts to the editor (the session.Front
// of its turns; the session decides by its grants and keeps the answer),
// what the CLI does
// between turns (the session.Between the session tells once it brought it
// in), configuration options (the session's settings as ACP's modes,
// configOptions and available_commands: acp keeps no copy of them) and
// encoding. Each ACP session is one internal/session.Session, which owns
// the open document package, its CLI and the settings it runs with, its
// turns and what happens between them; what ACP
// has no words for travels as `_spbridge/…` extension methods and
// notifications.
package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// JSON-RPC and ACP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeBusy           = -32001 // New Conversation while a prompt runs
	CodeNotFound       = -32002 // ACP: resource not found (an unknown session)
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

func rpcErrorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// message is any JSON-RPC message as read. Result and Error are kept raw so
// that a response is told apart by the members it has, whatever they hold.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// isRequest reports whether the message expects a response: it has an id,
// null included (a notification is a request without one).
func (m *message) isRequest() bool { return len(m.ID) > 0 }

// isResponse reports whether the message answers a request (ours or not):
// no method, and a result or an error.
func (m *message) isResponse() bool {
	return m.Method == "" && (len(m.Result) > 0 || len(m.Error) > 0)
}

// validID reports whether the id is one JSON-RPC allows: a string, a
// number or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return string(id) == "null"
}

// rpcError is the response's error, or nil when it has none.
func (m *message) rpcError() *RPCError {
	if len(m.Error) == 0 || string(m.Error) == "null" {
		return nil
	}
	var e RPCError
	if json.Unmarshal(m.Error, &e) != nil {
		return &RPCError{Code: CodeInternalError, Message: "the client answered with an error that could not be read"}
	}
	return &e
}

// writer serializes messages onto the output, one line each, through a
// buffer that is flushed whenever no other message waits to be written: a
// burst of messages goes out in few writes, and no message is held back.
// A message is encoded before the writer is taken, so a session that
// writes much holds the others back only for the copy of its lines. Once
// the output failed or was given up (see output), every message is
// dropped.
type writer struct {
	queued atomic.Int64 // messages waiting for mu or being written
	mu     sync.Mutex
	dst    *output
	out    *bufio.Writer // to dst
	err    error
}

// newWriter returns a writer to out.
func newWriter(out io.Writer) *writer {
	dst := newOutput(out)
	return &writer{dst: dst, out: bufio.NewWriterSize(dst, 256<<10)}
}

// gone returns a channel closed once nothing more is written: the client
// is gone, or was given up.
func (w *writer) gone() <-chan struct{} { return w.dst.gone() }

// drain bounds each write from now on (see output.drain).
func (w *writer) drain() { w.dst.drain() }

// close drops every message from now on.
func (w *writer) close() { w.dst.close() }

// release gives back a line buffer of encodeLine, unless the output was
// given up: a write given up may still be copying from it.
func (w *writer) release(bp *[]byte) {
	if !w.dst.isGone() {
		releaseLine(bp)
	}
}

// lineBufs holds the buffers messages are encoded into, reused.
var lineBufs = sync.Pool{New: func() any { return new([]byte) }}

// encodeLine returns a buffer from lineBufs with the line enc appends.
func encodeLine(enc func([]byte) []byte) *[]byte {
	bp := lineBufs.Get().(*[]byte)
	*bp = enc((*bp)[:0])
	return bp
}

// releaseLine gives back a buffer of encodeLine.
func releaseLine(bp *[]byte) {
	if cap(*bp) > 1<<20 {
		*bp = nil // a rare large message does not stay in memory
	}
	lineBufs.Put(bp)
}

// write writes one line that enc appends; the last writer of a burst
// flushes.
func (w *writer) write(enc func([]byte) []byte) error {
	bp := encodeLine(enc)
	defer w.release(bp)
	w.queued.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		_, w.err = w.out.Write(*bp)
	}
	// Under mu: a message queued after this check finds the buffer to
	// flush when its own write ends.
	if w.queued.Add(-1) == 0 && w.err == nil {
		w.err = w.out.Flush()
	}
	return w.err
}

// buffer appends one line that enc appends to the output's buffer without
// flushing it: a later write or flush sends it (the buffer also goes out
// whenever it fills).
func (w *writer) buffer(enc func([]byte) []byte) error {
	bp := encodeLine(enc)
	defer w.release(bp)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		_, w.err = w.out.Write(*bp)
	}
	return w.err
}

// flush writes what the buffer holds.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && w.out.Buffered() > 0 {
		w.err = w.out.Flush()
	}
	return w.err
}

// send writes v as encoding/json writes it: responses, requests and the
// rare notifications without an encoder of their own.
func (w *writer) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.write(func(b []byte) []byte { return append(append(b, data...), '\n') })
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

func (w *writer) result(id json.RawMessage, result any) error {
	if result == nil {
		result = struct{}{}
	}
	return w.send(response{JSONRPC: "2.0", ID: id, Result: result})
}

func (w *writer) fail(id json.RawMessage, e *RPCError) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return w.send(response{JSONRPC: "2.0", ID: id, Error: e})
}

func (w *writer) notify(method string, params any) error {
	return w.send(notification{JSONRPC: "2.0", Method: method, Params: params})
}
