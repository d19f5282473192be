package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"spbridge/internal/cliproc"
)

// Conn is one JSON-RPC connection: the Writer to the client, the reading
// of what the client sends (Read), and the requests the server sends the
// client, waiting for their answers (Call).
type Conn struct {
	*Writer
	onPanic func(r any)

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan *Message // the requests sent to the client, by id
}

// Options are what a Conn tells its user.
type Options struct {
	// OnGone, when set, is told once why the output failed or was given
	// up (NewWriter).
	OnGone func(error)
	// OnPanic, when set, is told a panic while a line was read and
	// handled; the reading goes on.
	OnPanic func(r any)
}

// NewConn returns a connection that writes to out.
func NewConn(out io.Writer, o Options) *Conn {
	return &Conn{Writer: NewWriter(out, o.OnGone), onPanic: o.OnPanic, pending: make(map[int64]chan *Message)}
}

// Read reads messages from in, one a line, until in ends, ctx is done or
// the output is gone (Gone: the client is gone as at the end of in). Each
// request and notification goes to handle, in the order read, on the
// calling goroutine: handle must not wait for the work it starts. A
// response goes to the Call that waits for it; one that matches none (a
// client's reply to a notification, an unknown id) is dropped, as a
// response is never answered. A line that is no message (not JSON, a
// batch, too long, nested deeper than MaxDepth, an id or jsonrpc member
// JSON-RPC does not allow) is answered with its error. Read returns a
// channel that gets the reading's error (nil at the end of in) once in is
// no longer read.
func (c *Conn) Read(ctx context.Context, in io.Reader, handle func(*Message)) <-chan error {
	lines := make(chan cliproc.Line)
	readErr := make(chan error, 1)
	go func() {
		readErr <- cliproc.ReadLines(in, 0, func(l cliproc.Line) bool {
			select {
			case lines <- l:
				return true
			case <-ctx.Done():
				return false
			}
		})
		close(lines)
	}()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return readErr
			}
			if l.Oversize > 0 {
				c.Fail(nil, Errorf(CodeInvalidRequest, "message of %d bytes is too long", l.Oversize))
				continue
			}
			c.line(l.Data, handle)
		case <-ctx.Done():
			return readErr
		case <-c.Gone():
			return readErr
		}
	}
}

// line reads one line and routes the message it holds.
func (c *Conn) line(line []byte, handle func(*Message)) {
	defer func() {
		if r := recover(); r != nil && c.onPanic != nil {
			c.onPanic(r)
		}
	}()
	line = trimSpace(line)
	if len(line) == 0 {
		return
	}
	if !json.Valid(line) {
		if TooDeep(line, MaxDepth) {
			c.tooDeep(line)
			return
		}
		c.Fail(nil, Errorf(CodeParseError, "parse error: the line is not JSON"))
		return
	}
	if line[0] != '{' {
		// A batch (an array) or a lone value: one request a line, and
		// one answer.
		c.Fail(nil, Errorf(CodeInvalidRequest, "invalid request: one JSON-RPC object a line (batches are not supported)"))
		return
	}
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		var idOnly struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(line, &idOnly)
		if !ValidID(idOnly.ID) {
			idOnly.ID = nil
		}
		c.Fail(idOnly.ID, Errorf(CodeInvalidRequest, "invalid request: %v", err))
		return
	}
	switch {
	case m.IsResponse():
		c.answer(&m)
	case !ValidID(m.ID):
		c.Fail(nil, Errorf(CodeInvalidRequest, "invalid request: id must be a string, a number or null"))
	case m.JSONRPC != "2.0":
		c.Fail(m.ID, Errorf(CodeInvalidRequest, "invalid request: jsonrpc must be \"2.0\""))
	case m.Method == "":
		c.Fail(m.ID, Errorf(CodeInvalidRequest, "invalid request: no method"))
	default:
		handle(&m)
	}
}

// tooDeep answers a line nested deeper than MaxDepth. Only its top-level
// members are read, with gjson, which steps over the deep part without
// recursion or building it. A request gets -32600 with its own id (null
// when the id cannot be read or is not one JSON-RPC allows); a response to
// one of our requests gives that request the error instead, as an answer
// that could not be read; any other response is dropped, as a response is
// never answered.
func (c *Conn) tooDeep(line []byte) {
	var id json.RawMessage
	if r := gjson.GetBytes(line, "id"); r.Exists() && json.Valid([]byte(r.Raw)) && ValidID(json.RawMessage(r.Raw)) {
		id = json.RawMessage(r.Raw)
	}
	res := gjson.GetManyBytes(line, "method", "result", "error")
	if !res[0].Exists() && (res[1].Exists() || res[2].Exists()) {
		if id != nil {
			data, _ := json.Marshal(Errorf(CodeInvalidRequest, "the client's answer is nested deeper than %d levels", MaxDepth))
			c.answer(&Message{JSONRPC: "2.0", ID: id, Error: data})
		}
		return
	}
	c.Fail(id, Errorf(CodeInvalidRequest, "invalid request: nested deeper than %d levels", MaxDepth))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Reply answers the request m (a notification gets nothing) with result,
// or with err: an *Error as it is, any other as an internal error.
func (c *Conn) Reply(m *Message, result any, err error) {
	if !m.IsRequest() {
		return
	}
	if err != nil {
		var rerr *Error
		if !errors.As(err, &rerr) {
			rerr = Errorf(CodeInternalError, "%v", err)
		}
		c.Fail(m.ID, rerr)
		return
	}
	c.Result(m.ID, result)
}

// answer delivers a client's response to one of our requests; any other
// response is dropped.
func (c *Conn) answer(m *Message) {
	var id int64
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- m
	}
}

// Call sends a request to the client and waits for its answer: the
// response, or its error. When ctx ends first, the client is told the
// answer is no longer wanted ($/cancel_request, as ACP and LSP say it).
func (c *Conn) Call(ctx context.Context, method string, params any) (*Message, error) {
	id := c.nextID.Add(1)
	ch := make(chan *Message, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.Send(request{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if e := m.Err(); e != nil {
			return nil, e
		}
		return m, nil
	case <-ctx.Done():
		// The client may stop asking (a permission request of a turn that
		// was cancelled, say): its answer is no longer wanted.
		c.Notify("$/cancel_request", map[string]any{"requestId": id})
		return nil, ctx.Err()
	}
}
