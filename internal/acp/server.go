package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"spbridge/internal/acp/wire"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/catalog"
	"spbridge/internal/checkpoint"
	"spbridge/internal/clipool"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
)

// ProtocolVersion is the ACP version spbridge speaks.
const ProtocolVersion = 1

// Config configures a Server.
type Config struct {
	// CLIs are the rows each session makes its backends from (clis.All
	// when nil).
	CLIs []backend.Plugin
	// Backend is what every session's backend is made with besides what
	// the editor chose (the idle timeout); Own are each CLI's own
	// settings, by its name (session.Settings.Own).
	Backend backend.Options
	Own     map[string]map[string]string
	// Models keeps the models each CLI's program listed, so that an open
	// answers with them; nil keeps none.
	Models session.ModelCache
	// sessionOptions, when set (tests), sees the options of each session
	// (by its id) before it opens: a test's hooks on its saves.
	sessionOptions func(sessionID string, o *session.Options)
	// AuditDir is where audit logs are written; "" writes none.
	AuditDir string
	// CheckpointDir is where sessions keep the baselines of their folders'
	// checkpoints (session.Options.CheckpointDir); "" keeps none.
	// Checkpoints is how many of them a package keeps.
	CheckpointDir string
	Checkpoints   checkpoint.Policy
	// Version is spbridge's version, for initialize.
	Version string
	// DefaultBackend is the backend of a session whose _meta names none
	// (an editor that knows nothing of spbridge's parameters).
	DefaultBackend string
	// SessionsDir is where such an editor's sessions get a package of their
	// own, one folder each; "" makes _meta.spbridge.package required.
	SessionsDir string
	// RecoveryDir is where the recovery copies of host-saved packages are
	// kept (the state folder's recovery/); "" keeps none.
	RecoveryDir string
	// Log receives diagnostics (stderr); nil discards them.
	Log *log.Logger
	// AuthStatus says whether a backend's CLI is logged in, for
	// authenticate; nil answers every authenticate with success.
	AuthStatus func(ctx context.Context, backend string) (bool, error)
	// Logout, when set, logs out of every CLI (ACP's logout method,
	// advertised as agentCapabilities.auth.logout).
	Logout func(ctx context.Context) error
	// Index keeps the packages opened through serve, for session/list;
	// nil lists none.
	Index *sessionindex.Index
	// CLIIdle is how long a session's CLI may be idle before it is put to
	// sleep (session.Options.CLIIdle; 0 keeps it running); MaxLiveCLIs
	// bounds how many CLIs run across the server's sessions, the least
	// recently used put to sleep first (0: no bound).
	CLIIdle     time.Duration
	MaxLiveCLIs int
	// History, when set, is where the CLIs keep their own sessions:
	// session/list lists them beside the packages and session/load opens
	// one by importing it into a package (in SessionsDir unless the
	// request names one). nil lists and opens none.
	History *history.Options
}

// CodeAuthRequired is ACP's error for a client that must authenticate.
const CodeAuthRequired = -32000

// Server is one ACP connection. Create it with NewServer and run Serve.
//
// Messages are read on one goroutine. Those that name a session go to that
// session's queue and are handled in the order they arrived by the
// session's own worker; a prompt's turn runs on a goroutine of its own, so
// a long turn holds up neither other sessions nor its own session's
// cancel, save or queue. Every goroutine that does a session's work
// recovers from a panic: the session ends with a failure item and is saved,
// the others go on.
type Server struct {
	cfg Config
	w   *jsonrpc.Conn // the client, and the requests spbridge sent it
	// pool bounds how many of the sessions' CLIs run (Config.MaxLiveCLIs).
	pool *clipool.Pool
	// audit appends the sessions' audit records in the background: a
	// prompt's answer does not wait for the disk. Shutdown waits for it.
	audit *audit.Queue

	mu       sync.Mutex
	sessions map[string]*acpSession // open or opening, by id
	stopping bool                   // shutdown began: no session opens

	// items is set when the client asked for _spbridge/item notifications
	// (initialize's clientCapabilities._meta.spbridge.items); a plain ACP
	// client gets ACP alone.
	items atomic.Bool
	// terminal is set when the client shows a command's output in a
	// terminal of its own (initialize's
	// clientCapabilities._meta.terminal_output, Zed's display-only
	// terminal): commands then stream it as _meta.terminal_output.
	terminal atomic.Bool
	// notices is set when the client presents live notices
	// (clientCapabilities.session.notices): notice items then go out as
	// ACP notice updates too.
	notices atomic.Bool
	// compaction is set when the client shows compactions
	// (clientCapabilities.session.compaction): a CLI's compaction then
	// goes out as compaction_update and compaction_summary_chunk instead
	// of its notice.
	compaction atomic.Bool
	// booleans is set when the client takes boolean config options
	// (clientCapabilities.session.configOptions.boolean): a CLI's on/off
	// settings are then offered as such.
	booleans atomic.Bool
	// forms is set when the client fills in forms
	// (clientCapabilities.elicitation.form): a questions request is then
	// one elicitation/create form (askForm).
	forms atomic.Bool

	pmu sync.Mutex
	// prompts are the session/prompt requests not answered yet, by their
	// id's JSON, for $/cancel_request (under pmu).
	prompts map[string]promptRequest

	wg sync.WaitGroup // handlers, session workers, turns and interrupts

	// list is what session/list pages through, and the listings it keeps.
	list *catalog.Catalog

	// allowPackage, when set, vets each package path a session would open
	// (the fuzz test keeps sessions inside its own folder).
	allowPackage func(path string) bool
}

// NewServer returns a server writing to out.
func NewServer(out io.Writer, cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	if cfg.CLIs == nil {
		cfg.CLIs = clis.All
	}
	s := &Server{cfg: cfg, pool: clipool.New(cfg.MaxLiveCLIs), sessions: make(map[string]*acpSession), prompts: make(map[string]promptRequest),
		list: &catalog.Catalog{Index: cfg.Index, History: cfg.History, Logf: func(format string, args ...any) {
			cfg.Log.Printf("session/list: "+format, args...)
		}}}
	s.w = jsonrpc.NewConn(out, jsonrpc.Options{
		OnGone:  func(err error) { cfg.Log.Printf("output: %v; what is left to send is dropped", err) },
		OnPanic: func(r any) { s.recovered("reading a message", r) },
	})
	if cfg.AuditDir != "" {
		s.audit = audit.NewQueue(func(path string, err error) { cfg.Log.Printf("audit %s: %v", path, err) })
	}
	return s
}

// Serve reads messages from in until it ends, ctx is done or the client
// is gone (a write to it failed: the same as the end of in). Then it shuts
// down: queued prompts are cancelled, running turns are interrupted, what
// is already queued for each session is handled, every session's CLI is
// ended, every conversation that changed is saved, every audit record is
// on disk, and every package lock is released. Meanwhile output that the
// client does not take within stalledOutputGrace is dropped, with all that
// follows it: a client that stopped reading does not hold up the shutdown.
// It returns the first error of that shutdown; nothing is written after
// it returns.
func (s *Server) Serve(ctx context.Context, in io.Reader) error {
	readErr := s.w.Read(ctx, in, func(m *jsonrpc.Message) { s.dispatch(ctx, m) })
	err := s.shutdown()
	s.w.Close()
	select {
	case e := <-readErr:
		if e != nil && !errors.Is(e, context.Canceled) {
			s.cfg.Log.Printf("read: %v", e)
		}
	default:
	}
	return err
}

// recovered logs a panic's value and stack; it returns the panic's text.
func (s *Server) recovered(where string, r any) string {
	s.cfg.Log.Printf("panic in %s: %v\n%s", where, r, debug.Stack())
	return fmt.Sprint(r)
}

// reply answers a request (a notification gets nothing).
func (s *Server) reply(m *jsonrpc.Message, result any, err error) {
	if m.IsRequest() && m.Method == "session/prompt" {
		s.pmu.Lock()
		delete(s.prompts, string(m.ID))
		s.pmu.Unlock()
	}
	s.w.Reply(m, result, err)
}

// sessionMethods are handled by the session they name, in order.
var sessionMethods = map[string]func(*acpSession, *job) (any, error){
	"session/prompt":                (*acpSession).prompt,
	"session/set_config_option":     (*acpSession).setConfigOption,
	"session/set_mode":              (*acpSession).setMode,
	"session/set_model":             (*acpSession).setModel,
	"session/close":                 (*acpSession).closeSession,
	"_spbridge/rate":                (*acpSession).rate,
	"_spbridge/queue":               (*acpSession).queueMessage,
	"_session/steering":             (*acpSession).steer,
	"_session/rewind":               (*acpSession).rewind,
	"_spbridge/save":                (*acpSession).save,
	"_spbridge/newConversation":     (*acpSession).newConversation,
	"_spbridge/setKeepConversation": (*acpSession).setKeep,
	"_spbridge/recover":             (*acpSession).recoverCopy,
}

// dispatch routes a request or notification.
func (s *Server) dispatch(ctx context.Context, m *jsonrpc.Message) {
	switch m.Method {
	case "initialize":
		// Read here, in arrival order, so that what the client writes after
		// initialize already sees its choice.
		caps := wire.ReadCapabilities(m.Params)
		s.items.Store(caps.Meta.Spbridge.Items)
		s.terminal.Store(caps.Meta.TerminalOutput)
		s.notices.Store(wire.IsObject(caps.Session.Notices))
		s.compaction.Store(wire.IsObject(caps.Session.Compaction))
		s.booleans.Store(wire.IsObject(caps.Session.ConfigOptions.Boolean))
		s.forms.Store(wire.IsObject(caps.Elicitation.Form))
		s.goReply(m, func() (any, error) { return s.initialize(m.Params, caps.Auth.Terminal) })
	case "authenticate":
		s.goReply(m, func() (any, error) { return s.authenticate(ctx, m.Params) })
	case "logout":
		s.goReply(m, func() (any, error) {
			if s.cfg.Logout == nil {
				return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: logout")
			}
			if err := s.cfg.Logout(ctx); err != nil {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "logout: %v", err)
			}
			return struct{}{}, nil
		})
	case "session/new":
		s.open(m, openNew)
	case "session/load":
		s.open(m, openLoad)
	case "session/resume":
		s.open(m, openResume)
	case "session/fork":
		s.open(m, openFork)
	case "session/delete":
		if !s.deleteOpen(m) {
			s.goReply(m, func() (any, error) { return s.deleteSession(m.Params) })
		}
	case "session/list":
		s.goReply(m, func() (any, error) { return s.listSessions(m.Params) })
	case "session/cancel":
		s.cancel(m)
	case "$/cancel_request":
		s.cancelRequest(m)
	default:
		handle, ok := sessionMethods[m.Method]
		if !ok {
			// An unknown notification is ignored, as JSON-RPC asks.
			s.reply(m, nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %s", m.Method))
			return
		}
		ss, err := s.session(m.Params)
		if err != nil {
			s.reply(m, nil, err)
			return
		}
		j := &job{m: m, run: handle}
		if m.Method == "session/prompt" {
			j.ctx, j.cancel = context.WithCancel(context.Background())
			if m.IsRequest() {
				s.pmu.Lock()
				s.prompts[string(m.ID)] = promptRequest{ss, j}
				s.pmu.Unlock()
			}
		}
		if !ss.work.enqueue(j) {
			s.reply(m, nil, jsonrpc.Errorf(CodeNotFound, "session %q has ended", ss.id))
		}
	}
}

// goReply runs a request that belongs to no session on its own goroutine.
func (s *Server) goReply(m *jsonrpc.Message, f func() (any, error)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				s.reply(m, nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error: %s", s.recovered(m.Method, r)))
			}
		}()
		result, err := f()
		s.reply(m, result, err)
	}()
}

// cancel handles session/cancel at once, ahead of the session's queue: it
// cancels the prompts that arrived before it, started or not.
func (s *Server) cancel(m *jsonrpc.Message) {
	ss, err := s.session(m.Params)
	if err != nil {
		s.reply(m, nil, err)
		return
	}
	ss.work.cancelPrompts()
	s.reply(m, nil, nil)
}

// promptRequest is a session/prompt not answered yet.
type promptRequest struct {
	ss *acpSession
	j  *job
}

// cancelRequest handles $/cancel_request: a session/prompt not answered
// yet is cancelled as session/cancel would cancel it, alone: not started,
// it answers cancelled without running; running, its turn is interrupted
// (the CLI stays) and it answers cancelled. The session's other prompts go
// on. A request that is answered already, or that takes no time, is left
// as it is.
func (s *Server) cancelRequest(m *jsonrpc.Message) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if jsonrpc.DecodeParams(m.Params, &p) != nil {
		return
	}
	s.pmu.Lock()
	pr, ok := s.prompts[string(p.RequestID)]
	s.pmu.Unlock()
	if !ok {
		return
	}
	pr.ss.work.cancelPrompt(pr.j)
}

// initialize answers initialize; terminalAuth: the client runs terminal
// log-ins.
func (s *Server) initialize(params json.RawMessage, terminalAuth bool) (any, error) {
	var p struct {
		ProtocolVersion *int `json:"protocolVersion"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: protocolVersion is required")
	}
	caps := map[string]any{
		"loadSession":        true,
		"promptCapabilities": map[string]any{"image": true, "audio": false, "embeddedContext": true},
		"mcpCapabilities":    map[string]any{"http": true, "sse": true},
		// fork is ACP's unstable session/fork (also at a message); older
		// clients read it under spbridge's _meta.
		"sessionCapabilities": map[string]any{"list": map[string]any{}, "resume": map[string]any{}, "close": map[string]any{}, "delete": map[string]any{}, "additionalDirectories": map[string]any{}, "fork": map[string]any{}},
		"_meta":               map[string]any{"spbridge": map[string]any{"sessionFork": map[string]any{}}, "sessionRewind": true},
	}
	if s.cfg.Logout != nil {
		caps["auth"] = map[string]any{"logout": map[string]any{}}
	}
	return map[string]any{
		"protocolVersion":   ProtocolVersion,
		"agentCapabilities": caps,
		"authMethods":       wire.AuthMethods(clis.All, terminalAuth),
		"agentInfo":         map[string]any{"name": "spbridge", "title": "spbridge", "version": s.cfg.Version},
		"_meta":             map[string]any{"steering": steeringMeta, "rewind": rewindMeta},
	}, nil
}

// session returns the session a message's params name (sessionId), open
// or still opening.
func (s *Server) session(params json.RawMessage) (*acpSession, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[p.SessionID]
	if !ok {
		return nil, &jsonrpc.Error{Code: CodeNotFound, Message: fmt.Sprintf("unknown session %q", p.SessionID)}
	}
	return ss, nil
}

// forget removes a session that ended from the server.
func (s *Server) forget(ss *acpSession) {
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
}

// shutdown ends every session: cancels queued prompts and interrupts
// running turns, lets each session's worker handle what is already queued,
// waits for every goroutine, then saves what changed, ends the CLIs and
// releases the locks. The sessions end at the same time: shutdown takes
// as long as the slowest, whatever their number.
func (s *Server) shutdown() error {
	s.w.Drain()
	s.mu.Lock()
	s.stopping = true
	all := make([]*acpSession, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.work.stop()
	}
	// A turn may take a while to stop (or never, with a CLI that hangs):
	// what it did so far is on disk before anything waits for it.
	for _, ss := range all {
		ss.saveRunning()
	}
	// The turns end before the workers are waited for: a worker may wait
	// for a turn's end (a prompt behind a cancelled turn).
	for _, ss := range all {
		if conv := ss.openConv(); conv != nil {
			conv.WaitTurns()
		}
	}
	s.wg.Wait()
	errs := make([]error, len(all))
	var closing sync.WaitGroup
	for i, ss := range all {
		closing.Go(func() { errs[i] = ss.close() })
	}
	closing.Wait()
	s.pool.Wait()
	if s.audit != nil {
		s.audit.Flush()
	}
	return errors.Join(errs...)
}
