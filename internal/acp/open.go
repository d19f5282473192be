package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/catalog"
	"spbridge/internal/clis"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
	"spbridge/internal/trust"
)

// This file holds the open of a session: session/new, session/load,
// session/resume and session/fork, their parameters read and checked
// once for all four, and the open the session's worker runs first.

// spbridgeMeta is spbridge's part of an open's _meta (session/new,
// load, resume, fork).
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

// openParams are a session/new, load, resume or fork request, checked.
type openParams struct {
	how  openHow
	load bool   // load or resume: the session id names the package
	sid  string // the session's id: the package's path, or a CLI session's (cli)
	id   string // the package's absolute path ("" for cli, until resolved)
	// cli is the CLI session a load or resume names, when its id is one
	// session/list gave a CLI's own session.
	cli *catalog.Session
	// forkFrom is the session a fork copies (its id), at where the copy
	// ends.
	forkFrom string
	at       forkPoint
	// resume is the CLI session the first turn continues: one this open
	// imported, while its CLI still holds it and the backend is its CLI.
	resume string
	// imported is a conversation the open puts into the package (a CLI's
	// session imported, or a fork); onImported runs once it is saved.
	imported   *archive.Conversation
	onImported func()
	// fresh: the open makes the package's folder (a package of the
	// session's own, or the one an import or a fork fills).
	fresh   bool
	kind    archive.Kind
	keep    bool
	backend string
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

// parseOpen checks a session/new, load, resume or fork request and names
// the session it opens, without touching the file system.
func (s *Server) parseOpen(params json.RawMessage, how openHow) (*openParams, error) {
	load := how == openLoad || how == openResume
	var p struct {
		SessionID             string          `json:"sessionId"`
		Cwd                   string          `json:"cwd"`
		AdditionalDirectories []string        `json:"additionalDirectories"`
		MCPServers            json.RawMessage `json:"mcpServers"`
		Meta                  struct {
			Spbridge spbridgeMeta `json:"spbridge"`
		} `json:"_meta"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	m := &p.Meta.Spbridge
	op := &openParams{how: how, load: load}
	if how == openFork {
		if p.SessionID == "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: sessionId (the session to fork) is required")
		}
		at, err := parseForkPoint(params, m.AtItem)
		if err != nil {
			return nil, err
		}
		op.forkFrom, op.at = p.SessionID, at
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
	mcp, err := wire.MCPServers(p.MCPServers)
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
	if op.addDirs, err = wire.AddDirs(p.AdditionalDirectories); err != nil {
		return nil, err
	}
	op.id, op.backend, op.model = pkgPath, m.Backend, m.Model
	op.sid = pkgPath
	if op.cli != nil {
		op.sid = p.SessionID
	}
	return op, nil
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
	if ss, open := s.sessions[op.sid]; open {
		s.mu.Unlock()
		if op.load && ss.work.enqueue(&job{m: m, run: func(ss *acpSession, _ *job) (any, error) { return ss.reattach(op.how) }}) {
			// A load or resume of a session open on this connection
			// attaches to it again (reattach.go).
			return
		}
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
	ss.index.ss = ss
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
	o := session.Options{Dir: op.id, Kind: op.kind, Keep: op.keep, Cwd: op.cwd, AuditDir: ss.srv.cfg.AuditDir, AuditQueue: ss.srv.audit,
		CheckpointDir: ss.srv.cfg.CheckpointDir, CheckpointPolicy: ss.srv.cfg.Checkpoints,
		Import: op.imported, Imported: op.onImported,
		Saving: ss.srv.savePolicy(op.id), RecoveryDir: ss.srv.cfg.RecoveryDir, SaveFailed: ss.saveFailed,
		CLIs: ss.srv.cfg.CLIs, Models: ss.srv.cfg.Models, Changed: ss.settingsChanged,
		CLIIdle: ss.srv.cfg.CLIIdle, Pool: ss.srv.pool,
		Log: func(msg string) { ss.srv.cfg.Log.Printf("session %s: %s", ss.id, msg) },
		Panicked: func(where string, v any, stack []byte) {
			ss.srv.cfg.Log.Printf("panic in %s of session %s: %v\n%s", where, ss.id, v, stack)
		},
		Settings: session.Settings{CLI: named, DefaultCLI: op.backend, Model: op.model, Backend: opts, Own: ss.srv.cfg.Own, Resume: op.resume, ResumeCLI: resumeCLI}}
	if hook := ss.srv.cfg.sessionOptions; hook != nil {
		hook(ss.id, &o)
	}
	conv, err := session.Open(o)
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
	ss.index.opened()
	res := map[string]any{"configOptions": wire.ConfigOptions(conv, ss.srv.booleans.Load())}
	if modes := wire.ModeState(conv); modes != nil {
		res["modes"] = modes
	}
	switch op.how {
	case openLoad:
		// The replay, then the commands and options, all before the answer
		// (a client reads an update after a load's answer as a late one).
		ss.send.replay(ss.conv.Replay(), ss.set.cwd)
		ss.afterOpen()
	case openNew, openFork:
		res["sessionId"] = ss.id
	}
	if r := conv.Recovery(); r != nil {
		ss.offerRecovery(res, r)
	}
	return res, nil
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
