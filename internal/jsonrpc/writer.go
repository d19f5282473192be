package jsonrpc

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
)

// Writer serializes messages onto the output, one line each, through a
// buffer that is flushed whenever no other message waits to be written: a
// burst of messages goes out in few writes, and no message is held back.
// A message is encoded before the writer is taken, so a session that
// writes much holds the others back only for the copy of its lines. Once
// the output failed or was given up (see output), every message is
// dropped.
type Writer struct {
	queued atomic.Int64 // messages waiting for mu or being written
	mu     sync.Mutex
	dst    *output
	out    *bufio.Writer // to dst
	err    error
}

// NewWriter returns a writer to out. onGone, when not nil, is told once
// why the output failed or was given up (what is left to send is then
// dropped).
func NewWriter(out io.Writer, onGone func(error)) *Writer {
	dst := newOutput(out)
	dst.onGone = onGone
	return &Writer{dst: dst, out: bufio.NewWriterSize(dst, 256<<10)}
}

// Gone returns a channel closed once nothing more is written: the client
// is gone, or was given up.
func (w *Writer) Gone() <-chan struct{} { return w.dst.gone() }

// Drain bounds each write from now on (see output.drain).
func (w *Writer) Drain() { w.dst.drain() }

// Close drops every message from now on.
func (w *Writer) Close() { w.dst.close() }

// release gives back a line buffer of encodeLine, unless the output was
// given up: a write given up may still be copying from it.
func (w *Writer) release(bp *[]byte) {
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

// Write writes one line that enc appends; the last writer of a burst
// flushes.
func (w *Writer) Write(enc func([]byte) []byte) error {
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

// Buffer appends one line that enc appends to the output's buffer without
// flushing it: a later write or flush sends it (the buffer also goes out
// whenever it fills).
func (w *Writer) Buffer(enc func([]byte) []byte) error {
	bp := encodeLine(enc)
	defer w.release(bp)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		_, w.err = w.out.Write(*bp)
	}
	return w.err
}

// Flush writes what the buffer holds.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && w.out.Buffered() > 0 {
		w.err = w.out.Flush()
	}
	return w.err
}

// Send writes v as encoding/json writes it: responses, requests and the
// rare notifications without an encoder of their own.
func (w *Writer) Send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Write(func(b []byte) []byte { return append(append(b, data...), '\n') })
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
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

// Result answers the request id with result ({} for nil).
func (w *Writer) Result(id json.RawMessage, result any) error {
	if result == nil {
		result = struct{}{}
	}
	return w.Send(response{JSONRPC: "2.0", ID: id, Result: result})
}

// Fail answers the request id (null when it has none) with the error e.
func (w *Writer) Fail(id json.RawMessage, e *Error) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return w.Send(response{JSONRPC: "2.0", ID: id, Error: e})
}

// Notify sends the notification method with params.
func (w *Writer) Notify(method string, params any) error {
	return w.Send(notification{JSONRPC: "2.0", Method: method, Params: params})
}
