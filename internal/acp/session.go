package acp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/catalog"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
	"spbridge/internal/trust"
)

// acpSession is one ACP session: one package and its CLI, from the
// session/new or session/load that opens it to its close. Its handlers
// (one per ACP method) translate; its worker runs them, one message at a
// time in arrival order (worker.go: the queue, cancel, shutdown, failure
// after a panic), and its sender sends its notifications (sender.go).
// What it holds is grouped by the lock that guards it:
//
//   - work.mu (the worker's): the message queue, what the reading
//     goroutine touches, so a cancel never waits for a save (the running
//     turn and the messages queued behind it are conv's: session.Prompt);
//   - mu: the open conversation and what the editor set at the open
//     (conv is set once, by the open, and read without mu after it);
//   - told (its own lock): what the client was told, which the
//     backend's events read on its goroutines, which never wait for mu.
//
// mu is taken before work.mu, and work.mu before told's. The CLI's
// settings (model, effort, mode) and what it offers are the
// conversation's (session.Settings): acp keeps no copy of them.
type acpSession struct {
	srv  *Server
	id   string  // the session's id: the package's path, or the CLI session's it was imported from
	work *worker // runs its messages' handlers, in order; owns its queue
	send sender  // its notifications

	mu     sync.Mutex
	closed bool
	conv   *session.Session // owns the package's conversation, nil until the open
	set    sessionSettings  // what the open set, for every backend of the session

	told told
	bg   background
}

// background is what a session runs beside its messages and turns: the
// records of its turns in the sessions index.
type background struct {
	// recorder records the turns of a titled session in the index.
	recorder sessionindex.Recorder
}

// sessionSettings are what the editor set when it opened the session
// that acp reads itself (under mu); the CLI's settings are the
// conversation's (session.Settings).
type sessionSettings struct {
	pkg     string   // the package's path (set once the open resolved it)
	cwd     string   // the folder the CLI runs in
	addDirs []string // the editor's additional folders
}

// told is what the client was told of the session, which the backend's
// events (on its goroutines, never waiting for mu) read too: whether the
// open was answered, the title as the sessions index has it, the CLI
// session the last turn ran on.
type told struct {
	mu        sync.Mutex
	announced bool // the open was answered: commands and options may go out
	title     string
	ranOn     string
}

// spbridgeMeta is spbridge's part of session/new and session/load _meta.
type spbridgeMeta struct {
	Package          string `json:"package"`
	Kind             string `json:"kind"`
	Backend          string `json:"backend"`
	Model            string `json:"model"`
	KeepConversation *bool  `json:"keepConversation"`
	// AtItem, in session/fork, is the item the copy ends with.
	AtItem string `json:"atItem"`
}

// How a session opens: session/new, session/load (replays the
// conversation), session/resume (does not) or session/fork (a new session
// with a copy of another's conversation).
type openHow int

const (
	openNew openHow = iota
	openLoad
	openResume
	openFork
)

// openParams are a session/new, session/load or session/resume request,
// checked.
type openParams struct {
	how  openHow
	load bool   // load or resume: the session id names the package
	sid  string // the session's id: the package's path, or a CLI session's (cli)
	id   string // the package's absolute path ("" for cli, until resolved)
	// cli is the CLI session a load or resume names, when its id is one
	// session/list gave a CLI's own session.
	cli *catalog.Session
	// forkFrom is the session a fork copies (its id), atItem the item the
	// copy ends with ("" for all).
	forkFrom, atItem string
	// resume is the CLI session the first turn continues: one this open
	// imported, while its CLI still holds it and the backend is its CLI.
	resume string
	// imported is a conversation the open puts into the package (a CLI's
	// session imported, or a fork); onImported runs once it is saved.
	imported   *archive.Conversation
	onImported func()
	fresh      bool // a package of the session's own, made at open
	kind       archive.Kind
	keep       bool
	backend    string
	// defaulted: the request named no backend (backend is serve's
	// default); a load or resume then takes the conversation's own.
	defaulted bool
	model     string
	cwd       string
	mcp       []backend.MCPServer
	// addDirs are the additionalDirectories of the request: absolute,
	// clean, each once, in order. Only this open's: a load or resume
	// without them has none, whatever an earlier open had.
	addDirs []string
}

// parseOpen checks a session/new or session/load request and names the
// session it opens, without touching the file system.
func (s *Server) parseOpen(params json.RawMessage, how openHow) (*openParams, error) {
	load := how == openLoad || how == openResume
	var p struct {
		SessionID             string          `json:"sessionId"`
		Cwd                   string          `json:"cwd"`
		AdditionalDirectories []string        `json:"additionalDirectories"`
		MCPServers            json.RawMessage `json:"mcpServers"`
		Meta                  struct {
			Spbridge *spbridgeMeta `json:"spbridge"`
		} `json:"_meta"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	m := p.Meta.Spbridge
	if m == nil {
		m = &spbridgeMeta{}
	}
	op := &openParams{how: how, load: load}
	if how == openFork {
		if p.SessionID == "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: sessionId (the session to fork) is required")
		}
		op.forkFrom, op.atItem = p.SessionID, m.AtItem
	}
	if load && p.SessionID != "" && s.cfg.History != nil {
		op.cli = catalog.ParseSession(p.SessionID)
	}
	if m.Package == "" && load && op.cli == nil {
		if p.SessionID == "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: sessionId is required")
		}
		m.Package = p.SessionID
	}
	mcp, err := parseMCPServers(p.MCPServers)
	if err != nil {
		return nil, err
	}
	op.mcp = mcp
	if m.Package == "" && s.cfg.SessionsDir != "" && op.cli == nil {
		// An editor that knows nothing of packages: the session gets one of
		// its own, and its id (the package's path) loads it later.
		m.Package = filepath.Join(s.cfg.SessionsDir, archive.NewID())
		op.fresh = true
	}
	if m.Package == "" && op.cli == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, `invalid params: _meta.spbridge.package is required`)
	}
	if m.Backend == "" && op.cli != nil {
		m.Backend = op.cli.CLI
	}
	if c := catalog.ParseSession(op.forkFrom); m.Backend == "" && c != nil && s.cfg.History != nil {
		m.Backend = c.CLI
	}
	if m.Backend == "" {
		m.Backend, op.defaulted = s.cfg.DefaultBackend, true
	}
	if m.Backend == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta.spbridge.backend is required (%s)", clis.Choices())
	}
	if _, ok := clis.Lookup(m.Backend); !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: unknown backend %q", m.Backend)
	}
	op.kind = archive.KindDocument
	if m.Kind != "" {
		k, err := archive.ParseKind(m.Kind)
		if err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
		}
		op.kind = k
	}
	op.keep = m.KeepConversation == nil || *m.KeepConversation
	var pkgPath string
	if m.Package != "" {
		var err error
		if pkgPath, err = filepath.Abs(m.Package); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: package: %v", err)
		}
		if s.allowPackage != nil && !s.allowPackage(pkgPath) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: package %s is not allowed here", pkgPath)
		}
	}
	op.cwd = p.Cwd
	if op.cwd == "" && pkgPath != "" {
		op.cwd = filepath.Dir(pkgPath)
	}
	if op.cwd == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: cwd is required")
	}
	if !filepath.IsAbs(op.cwd) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: cwd must be an absolute path")
	}
	if op.addDirs, err = parseAddDirs(p.AdditionalDirectories); err != nil {
		return nil, err
	}
	op.id, op.backend, op.model = pkgPath, m.Backend, m.Model
	op.sid = pkgPath
	if op.cli != nil {
		op.sid = p.SessionID
	}
	return op, nil
}

// parseAddDirs checks a request's additionalDirectories: each an absolute
// path. They come back clean, each once, in their order.
func parseAddDirs(dirs []string) ([]string, error) {
	var out []string
	for i, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: additionalDirectories[%d] %q must be an absolute path", i, d)
		}
		if d = filepath.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// checkAddDirs checks that each additional folder is a folder.
func checkAddDirs(dirs []string) error {
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err == nil && !st.IsDir() {
			err = errors.New("not a folder")
		}
		if err != nil {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: additional directory %s: %v", d, err)
		}
	}
	return nil
}

// parseMCPServers reads ACP's mcpServers (stdio, http, sse) into the
// backends' neutral form. A missing or null list is none.
func parseMCPServers(raw json.RawMessage) ([]backend.MCPServer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct {
		Type    string                         `json:"type"`
		Name    string                         `json:"name"`
		Command string                         `json:"command"`
		Args    []string                       `json:"args"`
		Env     []struct{ Name, Value string } `json:"env"`
		URL     string                         `json:"url"`
		Headers []struct{ Name, Value string } `json:"headers"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers: %v", err)
	}
	var out []backend.MCPServer
	for i, s := range list {
		if s.Name == "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: name is required", i)
		}
		m := backend.MCPServer{Name: s.Name}
		switch s.Type {
		case "", backend.MCPStdio:
			if s.Command == "" {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: command is required", i)
			}
			m.Transport, m.Command, m.Args = backend.MCPStdio, s.Command, s.Args
			for _, e := range s.Env {
				m.Env = append(m.Env, backend.NameValue{Name: e.Name, Value: e.Value})
			}
		case backend.MCPHTTP, backend.MCPSSE:
			if s.URL == "" {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: url is required", i)
			}
			m.Transport, m.URL = s.Type, s.URL
			for _, h := range s.Headers {
				m.Headers = append(m.Headers, backend.NameValue{Name: h.Name, Value: h.Value})
			}
		default:
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: unknown type %q", i, s.Type)
		}
		out = append(out, m)
	}
	return out, nil
}

// open handles session/new and session/load: the session is known by its
// id at once, so what a client pipelines after it waits in its queue, and
// its worker opens the package first.
func (s *Server) open(m *jsonrpc.Message, how openHow) {
	op, err := s.parseOpen(m.Params, how)
	if err != nil {
		s.reply(m, nil, err)
		return
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		s.reply(m, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "spbridge is shutting down"))
		return
	}
	if _, open := s.sessions[op.sid]; open {
		s.mu.Unlock()
		s.reply(m, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "the session %s is already open in this session", op.sid))
		return
	}
	ss := newSession(s, op.sid, op.id)
	s.sessions[op.sid] = ss
	s.wg.Add(1)
	s.mu.Unlock()
	ss.work.enqueue(&job{m: m, opening: true, run: func(ss *acpSession, _ *job) (any, error) { return ss.open(op) }})
	go ss.work.run()
}

// newSession returns session id of s, for the package at pkg (known
// later for a CLI's own session): not open yet, its worker not started.
func newSession(s *Server, id, pkg string) *acpSession {
	ss := &acpSession{srv: s, id: id, set: sessionSettings{pkg: pkg}, send: newSender(s, id)}
	ss.work = newWorker(ss)
	return ss
}

// open opens the package and its CLI (the first job of a session's
// worker). When it fails the session ends (see worker.runJob).
func (ss *acpSession) open(op *openParams) (any, error) {
	if err := checkAddDirs(op.addDirs); err != nil {
		return nil, err
	}
	if op.forkFrom != "" {
		// A copy of another session's conversation, in the new package.
		if err := ss.srv.fork(op); err != nil {
			return nil, err
		}
	}
	if op.cli != nil {
		// A CLI's own session: the package that holds it, imported now
		// when none does yet.
		if err := ss.srv.importCLI(op); err != nil {
			return nil, err
		}
		ss.mu.Lock()
		ss.set.pkg = op.id
		ss.mu.Unlock()
	}
	if op.fresh {
		if err := os.MkdirAll(op.id, 0o700); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "make a package for the session: %v", err)
		}
	}
	named, resumeCLI := op.backend, ""
	if op.defaulted && (op.load || op.forkFrom != "") {
		// Reopened without naming its CLI (session/list, then resume): the
		// session goes on with the CLI its conversation last ran on.
		named = ""
	}
	if op.cli != nil {
		resumeCLI = op.cli.CLI
	}
	// The folder's files and the CLIs' records are read with no lock of
	// the session held.
	opts := ss.srv.cfg.Backend
	opts.MCPServers, opts.AddDirs, opts.Folder = op.mcp, op.addDirs, trust.Open(op.cwd, nil, clis.Trust())
	conv, err := session.Open(session.Options{Dir: op.id, Kind: op.kind, Keep: op.keep, Cwd: op.cwd, AuditDir: ss.srv.cfg.AuditDir, AuditQueue: ss.srv.audit,
		Import: op.imported, Imported: op.onImported,
		Saving: ss.srv.savePolicy(op.id), RecoveryDir: ss.srv.cfg.RecoveryDir, SaveFailed: ss.saveFailed,
		CLIs: ss.srv.cfg.CLIs, Models: ss.srv.cfg.Models, Changed: ss.settingsChanged,
		Log: func(msg string) { ss.srv.cfg.Log.Printf("session %s: %s", ss.id, msg) },
		Panicked: func(where string, v any, stack []byte) {
			ss.srv.cfg.Log.Printf("panic in %s of session %s: %v\n%s", where, ss.id, v, stack)
		},
		Writing: ss.srv.saveWriteHook(ss.id), EndSaving: ss.srv.endSavingHook(ss.id),
		Settings: session.Settings{CLI: named, DefaultCLI: op.backend, Model: op.model, Backend: opts, Own: ss.srv.cfg.Own, Resume: op.resume, ResumeCLI: resumeCLI}})
	if errors.Is(err, session.ErrLocked) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%v", err)
	}
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	}
	op.imported = nil // the session has it now
	conv.WaitModels(modelsWait)
	ss.mu.Lock()
	ss.conv, ss.set.cwd, ss.set.addDirs = conv, op.cwd, op.addDirs
	ss.mu.Unlock()
	ss.watchBetween()
	ss.touch()
	res := map[string]any{"configOptions": configOptions(conv)}
	if modes := modeState(conv); modes != nil {
		res["modes"] = modes
	}
	switch op.how {
	case openLoad:
		ss.send.replay(ss.conv.Replay(), ss.set.cwd)
	case openNew, openFork:
		res["sessionId"] = ss.id
	}
	if r := conv.Recovery(); r != nil {
		ss.offerRecovery(res, r)
	}
	return res, nil
}

// saveWriteHook is the session's Writing hook for a test's saveWrite, nil
// without one.
func (s *Server) saveWriteHook(sid string) func() {
	hook := s.cfg.saveWrite
	if hook == nil {
		return nil
	}
	return func() { hook(sid) }
}

// endSavingHook is the session's EndSaving hook for a test's turnEndSave
// and turnEndSaved, nil without them.
func (s *Server) endSavingHook(sid string) func(saved bool) {
	before, after := s.cfg.turnEndSave, s.cfg.turnEndSaved
	if before == nil && after == nil {
		return nil
	}
	return func(saved bool) {
		hook := before
		if saved {
			hook = after
		}
		if hook != nil {
			hook(sid)
		}
	}
}

// savePolicy is who saves the package at path: a client that opted in to
// spbridge's extensions (initialize's clientCapabilities._meta.spbridge
// .items, which brings _spbridge/edited) and named a package of its own
// saves it, and spbridge keeps a recovery copy of each turn's end; every
// other package (one spbridge keeps under SessionsDir, or any of a client
// that did not opt in) spbridge saves itself.
func (s *Server) savePolicy(path string) session.SavePolicy {
	if !s.items.Load() || inFolder(s.cfg.SessionsDir, path) {
		return session.SaveAuto
	}
	return session.SaveByHost
}

// inFolder reports whether path is inside dir ("" holds nothing).
func inFolder(dir, path string) bool {
	if dir == "" {
		return false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(abs, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// saveFailed logs a save the session made of its own that failed (the
// conversation's, or its recovery copy's), or a recovery copy that could
// not be read.
func (ss *acpSession) saveFailed(err error) {
	ss.srv.cfg.Log.Printf("session %s: %v", ss.id, err)
}

// offerRecovery offers a recovery copy newer than the package in the
// answer to the open (_meta.spbridge.recovery), as a notice to a client
// that presents them, and in the log.
func (ss *acpSession) offerRecovery(res map[string]any, r *session.Recovery) {
	saved := ss.conv.ItemCount()
	res["_meta"] = map[string]any{"spbridge": map[string]any{"recovery": map[string]any{
		"items": r.Items, "savedItems": saved, "time": r.Time.Format(time.RFC3339Nano), "path": r.Dir,
	}}}
	text := fmt.Sprintf("A copy of this conversation from %s (%d items) holds turns the document's saved conversation (%d items) lacks: spbridge kept it when the document was not saved after them. _spbridge/recover takes it.",
		r.Time.Local().Format("2006-01-02 15:04"), r.Items, saved)
	ss.srv.cfg.Log.Printf("session %s: %s", ss.id, text)
	if ss.srv.notices.Load() {
		sid := ss.id
		ss.srv.w.Write(func(b []byte) []byte { return wire.AppendNotice(b, sid, text) })
	}
}

// openConv is the session's conversation, nil until it is open.
func (ss *acpSession) openConv() *session.Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.conv
}

// promptOf reads the prompt of a session/prompt or _spbridge/queue
// (promptContent).
func promptOf(j *job) (string, []backend.Image, error) {
	var p struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	if err := jsonrpc.DecodeParams(j.m.Params, &p); err != nil {
		return "", nil, err
	}
	return promptContent(p.Prompt)
}

// promptContent reads an ACP prompt: its text blocks, links and embedded
// resources joined by newlines, and its images. A link is `[name](uri)`;
// an embedded text resource (a file the editor attached, perhaps unsaved)
// is its link followed by `<context ref="uri">` and the text, so the model
// knows where the text comes from; an embedded image is an image, any
// other binary resource its link alone.
func promptContent(raw json.RawMessage) (string, []backend.Image, error) {
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Name     string `json:"name"`
		Resource *struct {
			URI      string  `json:"uri"`
			Text     *string `json:"text"`
			Blob     string  `json:"blob"`
			MimeType string  `json:"mimeType"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt: %v", err)
	}
	var texts []string
	var images []backend.Image
	for i, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: image data is not base64", i)
			}
			images = append(images, backend.Image{MimeType: b.MimeType, Data: data})
		case "resource_link":
			name := b.Name
			if name == "" {
				name = b.URI
			}
			texts = append(texts, fmt.Sprintf("[%s](%s)", name, b.URI))
		case "resource":
			r := b.Resource
			switch {
			case r == nil:
				return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: a resource block without its resource", i)
			case r.Text != nil:
				texts = append(texts, fmt.Sprintf("[%s](%s)\n<context ref=%q>\n%s\n</context>", resourceName(r.URI), r.URI, r.URI, *r.Text))
			case strings.HasPrefix(r.MimeType, "image/"):
				data, err := base64.StdEncoding.DecodeString(r.Blob)
				if err != nil {
					return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: the resource's blob is not base64", i)
				}
				images = append(images, backend.Image{MimeType: r.MimeType, Data: data})
			default:
				texts = append(texts, fmt.Sprintf("[%s](%s)", resourceName(r.URI), r.URI))
			}
		default:
			return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: %q content is not supported", i, b.Type)
		}
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the prompt is empty")
	}
	return text, images, nil
}

// resourceName is the name a link to uri shows: its last path element
// ("app.go" for file:///src/app.go), or uri itself.
func resourceName(uri string) string {
	name := uri
	if i := strings.LastIndexAny(strings.TrimRight(uri, "/"), "/"); i >= 0 && i < len(uri)-1 {
		name = strings.TrimRight(uri[i+1:], "/")
	}
	if name == "" {
		return uri
	}
	return name
}

// CodeNotStarted is the error of a prompt whose turn never started (the
// CLI missing, its folder missing, the CLI failing before it took the
// message): the conversation was left as it was.
const CodeNotStarted = -32003

func (ss *acpSession) prompt(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	if j.ctx.Err() != nil {
		return cancelledResponse(), nil
	}
	if name := ownCommand(text); name != "" && len(images) == 0 {
		return ss.runOwnCommand(j, name)
	}
	if _, err := ss.submit(session.Request{Text: text, Images: images, Ctx: j.ctx, Tag: j}, false); err != nil {
		if errors.Is(err, session.ErrCancelled) {
			return cancelledResponse(), nil
		}
		return nil, err
	}
	return answeredLater{}, nil
}

// submit hands a prompt (or, with queue, a message the user queued) to
// the conversation: it starts a turn, or waits behind the running one
// (queued). The session's worker calls it: what came after the prompt
// waits until it is started or queued.
func (ss *acpSession) submit(r session.Request, queue bool) (queued bool, err error) {
	conv, err := ss.live()
	if err != nil {
		return false, err
	}
	stopping := ss.work.stopped()
	if !stopping {
		if queue {
			queued, err = conv.Queue(turns{ss}, r)
		} else {
			queued, err = conv.Prompt(turns{ss}, r)
		}
	}
	if stopping || errors.Is(err, session.ErrClosed) {
		return false, jsonrpc.Errorf(CodeNotFound, "session %q is closing", ss.id)
	}
	return queued, err
}

// cancelledResponse answers a prompt cancelled before its turn began.
func cancelledResponse() map[string]any {
	return map[string]any{"stopReason": "cancelled", "_meta": map[string]any{"spbridge": map[string]any{"status": itemmap.TurnInterrupted}}}
}

// stopResponse maps how a turn ended to ACP: a failed turn has no stop
// reason of its own, so it ends its turn with the exact state in _meta (the
// failure item itself went out as _spbridge/item). A turn the client
// cancelled is cancelled, however the CLI ended it, as ACP asks of an
// agent told session/cancel: also when the CLI finished the reply before
// it heard the interrupt (what it said is kept; _meta says it completed).
func stopResponse(end *itemmap.TurnEnd, cancelled bool) map[string]any {
	reason := "end_turn"
	if end.Status == itemmap.TurnInterrupted || cancelled {
		reason = "cancelled"
	}
	return map[string]any{"stopReason": reason, "_meta": map[string]any{"spbridge": map[string]any{"status": end.Status}}}
}

// close saves a changed conversation, ends the CLI and releases the lock.
// A panic in any step is logged and the next steps still run. No lock of
// the session is held while it answers the prompts still queued, saves or
// ends the CLI: once closed is set, no handler and no turn starts anything
// anew.
func (ss *acpSession) close() error {
	ss.bg.recorder.Wait() // the index has every turn before the session ends
	ss.mu.Lock()
	if ss.conv == nil || ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	ss.mu.Unlock()
	// No handler submits anything once closed is set: what is still queued
	// is answered cancelled, with no lock held while the client reads it.
	for _, q := range ss.conv.Forget() {
		if j, ok := q.Tag.(*job); ok {
			ss.srv.reply(j.m, cancelledResponse(), nil)
		}
	}
	var errs []error
	if ss.conv.Unsaved() {
		errs = append(errs, ss.safely("save", func() error {
			if _, err := ss.conv.Save(); err != nil {
				return fmt.Errorf("save %s: %w", ss.id, err)
			}
			return nil
		}))
	}
	errs = append(errs, ss.safely("close the CLI and unlock", ss.conv.Close))
	return errors.Join(errs...)
}

// closeSession handles session/close (a job of the session's own, so what
// came before it is handled first): the prompts are cancelled, the running
// turn ends, then the conversation is saved, the CLI ended, the lock
// released and the session forgotten. What was queued behind it is
// answered as for an unknown session.
func (ss *acpSession) closeSession(j *job) (any, error) {
	var p struct{}
	if err := jsonrpc.DecodeParams(j.m.Params, &p); err != nil {
		return nil, err
	}
	ss.work.cancelPrompts()
	if conv := ss.openConv(); conv != nil {
		conv.Stop()
		conv.WaitTurns()
	}
	jobs := ss.work.abandon()
	err := ss.close()
	ss.work.endJobs(jobs, fmt.Sprintf("session %q was closed", ss.id))
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "close: %v", err)
	}
	return struct{}{}, nil
}

// safely runs f, turning a panic into an error.
func (ss *acpSession) safely(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s of session %s: panic: %s", what, ss.id, ss.srv.recovered(what+" of session "+ss.id, r))
		}
	}()
	return f()
}

// begin is a handler's opening: its params decoded into p (missing or
// wrong ones are invalid), checked by check when it is not nil, and the
// session's open conversation (live).
func (ss *acpSession) begin(j *job, p any, check func() error) (*session.Session, error) {
	if err := jsonrpc.DecodeParams(j.m.Params, p); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return ss.live()
}

// live is the session's open conversation, or the error of a session that
// has closed (or never opened).
func (ss *acpSession) live() (*session.Session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed || ss.conv == nil {
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q has ended", ss.id)
	}
	return ss.conv, nil
}

func (ss *acpSession) rate(j *job) (any, error) {
	var p struct {
		ItemID  string   `json:"itemId"`
		Rating  string   `json:"rating"`
		Reasons []string `json:"reasons"`
	}
	conv, err := ss.begin(j, &p, func() error {
		if p.ItemID == "" || (p.Rating != "good" && p.Rating != "bad") {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, `invalid params: itemId and a rating of "good" or "bad" are required`)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	conv.Rate(p.ItemID, p.Rating, p.Reasons)
	if conv.Keep() {
		ss.send.edited()
	}
	return struct{}{}, nil
}

func (ss *acpSession) queueMessage(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	queued, err := ss.submit(session.Request{Text: text, Images: images}, true)
	if err != nil {
		return nil, err
	}
	if queued {
		return map[string]any{"queued": true}, nil
	}
	// Nothing ran: the message is the next turn now.
	return map[string]any{"queued": false}, nil
}

// save writes the conversation into the package. While a turn runs it
// writes the conversation as it stands (the turn's end saves again); the
// turn streams on meanwhile.
func (ss *acpSession) save(j *job) (any, error) {
	conv, err := ss.begin(j, &struct{}{}, nil)
	if err != nil {
		return nil, err
	}
	r, err := conv.Save()
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "save: %v", err)
	}
	return map[string]any{"written": nonNil(r.Written), "removed": nonNil(r.Removed)}, nil
}

// saveRunning saves the conversation as it stands when a turn runs (the
// turn's end saves again).
func (ss *acpSession) saveRunning() {
	conv, err := ss.live()
	if err != nil || !conv.Running() {
		return
	}
	if err := ss.safely("save", func() error { _, err := conv.Save(); return err }); err != nil {
		ss.srv.cfg.Log.Printf("session %s: save: %v", ss.id, err)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// errBusyNew answers a New Conversation asked for while a turn runs.
var errBusyNew = &jsonrpc.Error{Code: CodeBusy, Message: "a prompt is running in this session; cancel it first"}

func (ss *acpSession) newConversation(j *job) (any, error) {
	// The session's worker runs this handler: no prompt starts a turn, and
	// no other handler runs, until it returns; mu is not held while the
	// CLI ends and the agent folder is removed.
	conv, err := ss.begin(j, &struct{}{}, nil)
	if err != nil {
		return nil, err
	}
	if conv.Running() {
		return nil, errBusyNew
	}
	// The old CLI ends: its session belongs to the old conversation, and a
	// new CLI starts with the next prompt.
	if _, err := conv.NewConversation(); err != nil {
		if errors.Is(err, session.ErrBusy) {
			return nil, errBusyNew
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "new conversation: %v", err)
	}
	ss.clearTitle()
	if conv.Keep() {
		ss.send.edited()
	}
	return struct{}{}, nil
}

// recoverCopy takes the recovery copy the open offered: the conversation
// becomes the copy's, replayed as session/load replays it, and edited
// (the client saves it).
func (ss *acpSession) recoverCopy(j *job) (any, error) {
	conv, err := ss.begin(j, &struct{}{}, nil)
	if err != nil {
		return nil, err
	}
	n, err := conv.Recover()
	switch {
	case errors.Is(err, session.ErrNoRecovery):
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "no recovery copy is offered in session %s (a turn ran since it opened, or the copy was taken)", ss.id)
	case errors.Is(err, session.ErrBusy):
		return nil, errBusyNew
	case err != nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "recover: %v", err)
	}
	ss.send.replay(conv.Replay(), ss.set.cwd)
	if conv.Keep() {
		ss.send.edited()
	}
	return map[string]any{"items": n}, nil
}

func (ss *acpSession) setKeep(j *job) (any, error) {
	var p struct {
		Keep *bool `json:"keep"`
	}
	conv, err := ss.begin(j, &p, func() error {
		if p.Keep == nil {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: keep (a boolean) is required")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	conv.SetKeep(*p.Keep) // the next save writes or removes agent/
	return struct{}{}, nil
}
