package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"sync/atomic"

	"spbridge/internal/cliproc"
	"spbridge/internal/session"
)

// ProtocolVersion is the ACP version spbridge speaks.
const ProtocolVersion = 1

// BackendOptions say how to start a session's CLI.
type BackendOptions struct {
	Cwd   string
	Model string
}

// NewBackendFunc makes the backend of a session. It fails for a backend
// spbridge does not have.
type NewBackendFunc func(name string, opts BackendOptions) (session.Backend, error)

// Config configures a Server.
type Config struct {
	// NewBackend makes each session's backend.
	NewBackend NewBackendFunc
	// AuditDir is where audit logs are written; "" writes none.
	AuditDir string
	// Version is spbridge's version, for initialize.
	Version string
	// DefaultBackend is the backend of a session whose _meta names none
	// (an editor that knows nothing of spbridge's parameters).
	DefaultBackend string
	// SessionsDir is where such an editor's sessions get a package of their
	// own, one folder each; "" makes _meta.spbridge.package required.
	SessionsDir string
	// Log receives diagnostics (stderr); nil discards them.
	Log *log.Logger
	// AuthStatus says whether a backend's CLI is logged in, for
	// authenticate; nil answers every authenticate with success.
	AuthStatus func(ctx context.Context, backend string) (bool, error)
}

// CodeAuthRequired is ACP's error for a client that must authenticate.
const CodeAuthRequired = -32000

// authMethods are the log-ins spbridge offers: each CLI's own, run by the
// client in a terminal as `spbridge login --backend NAME`.
var authMethods = []any{
	map[string]any{"type": "terminal", "id": "claude-login", "name": "Log in to Claude Code",
		"description": "Runs Claude Code's own log-in in a terminal.", "args": []string{"login", "--backend", "claude"}},
	map[string]any{"type": "terminal", "id": "codex-login", "name": "Log in to the Codex CLI",
		"description": "Runs the Codex CLI's own log-in in a terminal.", "args": []string{"login", "--backend", "codex"}},
}

// Server is one ACP connection. Create it with NewServer and run Serve.
type Server struct {
	cfg Config
	w   *writer

	mu       sync.Mutex
	sessions map[string]*acpSession

	nextID  atomic.Int64
	pmu     sync.Mutex
	pending map[int64]chan *message // our requests to the client, by id

	wg sync.WaitGroup // request handlers
}

// NewServer returns a server writing to out.
func NewServer(out io.Writer, cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	return &Server{cfg: cfg, w: &writer{out: out}, sessions: make(map[string]*acpSession), pending: make(map[int64]chan *message)}
}

// Serve reads messages from in until it ends or ctx is done, handling each
// request on its own goroutine so a long prompt never holds up the others.
// Then it shuts down: running turns are interrupted, every session's CLI is
// ended, every conversation that changed is saved, and every package lock
// is released. It returns the first error of that shutdown.
func (s *Server) Serve(ctx context.Context, in io.Reader) error {
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
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break loop
			}
			if l.Oversize > 0 {
				s.w.fail(nil, rpcErrorf(CodeInvalidRequest, "message of %d bytes is too long", l.Oversize))
				continue
			}
			s.handleLine(ctx, l.Data)
		case <-ctx.Done():
			break loop
		}
	}
	err := s.shutdown()
	select {
	case e := <-readErr:
		if e != nil && !errors.Is(e, context.Canceled) {
			s.cfg.Log.Printf("read: %v", e)
		}
	default:
	}
	return err
}

func (s *Server) handleLine(ctx context.Context, line []byte) {
	if len(trimSpace(line)) == 0 {
		return
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		s.w.fail(nil, rpcErrorf(CodeParseError, "parse error: %v", err))
		return
	}
	switch {
	case m.JSONRPC != "2.0":
		s.w.fail(m.ID, rpcErrorf(CodeInvalidRequest, "invalid request: jsonrpc must be \"2.0\""))
	case m.Method == "" && m.hasID():
		s.answer(&m)
	case m.Method == "":
		s.w.fail(m.ID, rpcErrorf(CodeInvalidRequest, "invalid request: no method"))
	case m.hasID():
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			result, err := s.call(ctx, m.Method, m.Params)
			if err != nil {
				var rerr *RPCError
				if !errors.As(err, &rerr) {
					rerr = rpcErrorf(CodeInternalError, "%v", err)
				}
				s.w.fail(m.ID, rerr)
				return
			}
			if f, ok := result.(followUp); ok {
				s.w.result(m.ID, f.result)
				f.then()
				return
			}
			s.w.result(m.ID, result)
		}()
	default:
		s.notification(m.Method, m.Params)
	}
}

// followUp is a result with work to start once it was written: a queued
// message's turn begins after the prompt before it was answered.
type followUp struct {
	result any
	then   func()
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

// answer delivers a client's response to one of our requests.
func (s *Server) answer(m *message) {
	var id int64
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return
	}
	s.pmu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.pmu.Unlock()
	if ok {
		ch <- m
	}
}

// request sends a request to the client and waits for its answer.
func (s *Server) request(ctx context.Context, method string, params any) (*message, error) {
	id := s.nextID.Add(1)
	ch := make(chan *message, 1)
	s.pmu.Lock()
	s.pending[id] = ch
	s.pmu.Unlock()
	defer func() {
		s.pmu.Lock()
		delete(s.pending, id)
		s.pmu.Unlock()
	}()
	if err := s.w.send(request{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// decode reads params into v; missing or wrong params are invalid.
func decode(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return rpcErrorf(CodeInvalidParams, "invalid params: missing")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

// call runs one request.
func (s *Server) call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "initialize":
		return s.initialize(params)
	case "authenticate":
		return s.authenticate(ctx, params)
	case "session/new":
		return s.newSession(ctx, params, false)
	case "session/load":
		return s.newSession(ctx, params, true)
	case "session/prompt":
		return s.prompt(ctx, params)
	case "session/set_config_option":
		return s.setConfigOption(params)
	case "_spbridge/rate":
		return s.rate(params)
	case "_spbridge/queue":
		return s.queue(ctx, params)
	case "_spbridge/save":
		return s.save(params)
	case "_spbridge/newConversation":
		return s.newConversation(params)
	case "_spbridge/setKeepConversation":
		return s.setKeep(params)
	}
	return nil, rpcErrorf(CodeMethodNotFound, "method not found: %s", method)
}

// notification handles a notification; unknown ones are ignored, as
// JSON-RPC asks.
func (s *Server) notification(method string, params json.RawMessage) {
	if method != "session/cancel" {
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if ss, err := s.session(p.SessionID); err == nil {
		ss.cancel()
	}
}

func (s *Server) initialize(params json.RawMessage) (any, error) {
	var p struct {
		ProtocolVersion *int `json:"protocolVersion"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: protocolVersion is required")
	}
	return map[string]any{
		"protocolVersion": ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession":        true,
			"promptCapabilities": map[string]any{"image": true, "audio": false, "embeddedContext": false},
			"mcpCapabilities":    map[string]any{"http": false, "sse": false},
		},
		"authMethods": authMethods,
		"agentInfo":   map[string]any{"name": "spbridge", "title": "spbridge", "version": s.cfg.Version},
	}, nil
}

// session returns the open session with this id.
func (s *Server) session(id string) (*acpSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return nil, &RPCError{Code: CodeNotFound, Message: fmt.Sprintf("unknown session %q", id)}
	}
	return ss, nil
}

// shutdown ends every session: interrupts running turns, waits for the
// handlers, saves what changed, ends the CLIs and releases the locks.
func (s *Server) shutdown() error {
	s.mu.Lock()
	all := make([]*acpSession, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.mu.Lock()
		ss.stopping = true
		ss.mu.Unlock()
		ss.cancel()
	}
	s.wg.Wait()
	var errs []error
	for _, ss := range all {
		errs = append(errs, ss.close())
	}
	return errors.Join(errs...)
}

// authenticate checks that the CLI of the method the client used is logged
// in: the log-in itself ran in the client's terminal.
func (s *Server) authenticate(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		MethodID string `json:"methodId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	backend, ok := map[string]string{"claude-login": "claude", "codex-login": "codex"}[p.MethodID]
	if !ok {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: unknown methodId %q", p.MethodID)
	}
	if s.cfg.AuthStatus == nil {
		return struct{}{}, nil
	}
	in, err := s.cfg.AuthStatus(ctx, backend)
	if err != nil {
		return nil, rpcErrorf(CodeInternalError, "%s auth status: %v", backend, err)
	}
	if !in {
		return nil, rpcErrorf(CodeAuthRequired, "authentication required: %s is not logged in; run spbridge login --backend %s", backend, backend)
	}
	return struct{}{}, nil
}
