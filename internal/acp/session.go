package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/pkglock"
	"spbridge/internal/restore"
	"spbridge/internal/session"
)

// providers are the archive's provider names by backend.
var providers = map[string]string{"claude": "claude-code", "codex": "codex"}

// acpSession is one ACP session: one open package and its CLI.
type acpSession struct {
	srv     *Server
	id      string
	backend string

	mu          sync.Mutex
	keep        bool
	pkg         *archive.Package
	lock        *pkglock.Lock
	conv        *session.Session
	model       string
	running     bool
	turnCancel  context.CancelFunc
	queue       []queuedPrompt
	dirty       bool // changed since the last save
	saveAfter   bool // a save asked for while a turn ran
	allowAlways map[string]bool
	closed      bool
	stopping    bool // the server is shutting down: no new turn starts
	cwd         string
}

type queuedPrompt struct {
	text   string
	images []session.Image
}

// spbridgeMeta is spbridge's part of session/new and session/load _meta.
type spbridgeMeta struct {
	Package          string `json:"package"`
	Kind             string `json:"kind"`
	Backend          string `json:"backend"`
	Model            string `json:"model"`
	KeepConversation *bool  `json:"keepConversation"`
}

func (s *Server) newSession(ctx context.Context, params json.RawMessage, load bool) (any, error) {
	var p struct {
		SessionID  string          `json:"sessionId"`
		Cwd        string          `json:"cwd"`
		MCPServers json.RawMessage `json:"mcpServers"`
		Meta       struct {
			Spbridge *spbridgeMeta `json:"spbridge"`
		} `json:"_meta"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	m := p.Meta.Spbridge
	if m == nil {
		m = &spbridgeMeta{}
	}
	if m.Package == "" && load {
		m.Package = p.SessionID
	}
	if m.Package == "" && s.cfg.SessionsDir != "" {
		// An editor that knows nothing of packages: the session gets one of
		// its own, and its id (the package's path) loads it later.
		dir := filepath.Join(s.cfg.SessionsDir, archive.NewID())
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, rpcErrorf(CodeInternalError, "make a package for the session: %v", err)
		}
		m.Package = dir
	}
	if m.Package == "" {
		return nil, rpcErrorf(CodeInvalidParams, `invalid params: _meta.spbridge.package is required`)
	}
	if m.Backend == "" {
		m.Backend = s.cfg.DefaultBackend
	}
	if m.Backend == "" {
		return nil, rpcErrorf(CodeInvalidParams, `invalid params: _meta.spbridge.backend is required ("claude" or "codex")`)
	}
	if _, ok := providers[m.Backend]; !ok {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: unknown backend %q", m.Backend)
	}
	kind := archive.KindDocument
	if m.Kind != "" {
		k, err := archive.ParseKind(m.Kind)
		if err != nil {
			return nil, rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
		}
		kind = k
	}
	keep := m.KeepConversation == nil || *m.KeepConversation
	pkgPath, err := filepath.Abs(m.Package)
	if err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: package: %v", err)
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = filepath.Dir(pkgPath)
	}
	if !filepath.IsAbs(cwd) {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: cwd must be an absolute path")
	}
	id := pkgPath

	s.mu.Lock()
	if _, open := s.sessions[id]; open {
		s.mu.Unlock()
		return nil, rpcErrorf(CodeInvalidRequest, "the package %s is already open in this session", pkgPath)
	}
	s.sessions[id] = nil // reserved while it opens
	s.mu.Unlock()
	ss, err := s.openSession(id, pkgPath, kind, keep, m, cwd)
	s.mu.Lock()
	if err != nil {
		delete(s.sessions, id)
	} else {
		s.sessions[id] = ss
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if load {
		ss.replay()
		return map[string]any{"configOptions": ss.configOptions()}, nil
	}
	return map[string]any{"sessionId": id, "configOptions": ss.configOptions()}, nil
}

func (s *Server) openSession(id, pkgPath string, kind archive.Kind, keep bool, m *spbridgeMeta, cwd string) (*acpSession, error) {
	lock, err := pkglock.Acquire(pkgPath)
	if errors.Is(err, pkglock.ErrLocked) {
		return nil, rpcErrorf(CodeInvalidRequest, "%v", err)
	}
	if err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
	}
	pkg, err := archive.Open(pkgPath, kind, keep)
	if err != nil {
		lock.Unlock()
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
	}
	be, err := s.cfg.NewBackend(m.Backend, BackendOptions{Cwd: cwd, Model: m.Model})
	if err != nil {
		lock.Unlock()
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
	}
	conv := &session.Session{Pkg: pkg, Backend: be, Provider: providers[m.Backend], AuditDir: s.cfg.AuditDir, Cwd: cwd}
	if len(pkg.Conv.Items) > 0 && pkg.Unreadable == "" {
		conv.Restore = restore.Restored(slices.Clone(pkg.Conv.Items))
	}
	return &acpSession{srv: s, id: id, backend: m.Backend, keep: keep, pkg: pkg, lock: lock, conv: conv,
		model: m.Model, allowAlways: make(map[string]bool), cwd: cwd}, nil
}

// modelSetter is a backend whose model can change between turns.
type modelSetter interface{ SetModel(string) }

// models are the choices offered for the model option.
var models = map[string][]string{
	"claude": {"default", "sonnet", "opus", "haiku"},
	"codex":  {"default"},
}

func (ss *acpSession) configOptions() []any {
	ss.mu.Lock()
	current := ss.model
	ss.mu.Unlock()
	if current == "" {
		current = "default"
	}
	values := slices.Clone(models[ss.backend])
	if !slices.Contains(values, current) {
		values = append(values, current)
	}
	var opts []any
	for _, v := range values {
		name := v
		if v == "default" {
			name = "Default (the CLI's own choice)"
		}
		opts = append(opts, map[string]any{"value": v, "name": name})
	}
	return []any{map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select",
		"currentValue": current, "options": opts}}
}

func (s *Server) setConfigOption(params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ConfigID  string `json:"configId"`
		Value     any    `json:"value"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	value, ok := p.Value.(string)
	if p.ConfigID != "model" || !ok || value == "" {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: the only option is \"model\", a string value")
	}
	ss.mu.Lock()
	ss.model = value
	if value == "default" {
		ss.model = ""
	}
	model := ss.model
	ss.mu.Unlock()
	if ms, ok := ss.conv.Backend.(modelSetter); ok {
		ms.SetModel(model)
	}
	return map[string]any{"configOptions": ss.configOptions()}, nil
}

// promptContent reads an ACP prompt: its text blocks (and links and
// embedded text) joined by newlines, and its images.
func promptContent(raw json.RawMessage) (string, []session.Image, error) {
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Name     string `json:"name"`
		Resource *struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, rpcErrorf(CodeInvalidParams, "invalid params: prompt: %v", err)
	}
	var texts []string
	var images []session.Image
	for i, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return "", nil, rpcErrorf(CodeInvalidParams, "invalid params: prompt[%d]: image data is not base64", i)
			}
			images = append(images, session.Image{MimeType: b.MimeType, Data: data})
		case "resource_link":
			name := b.Name
			if name == "" {
				name = b.URI
			}
			texts = append(texts, fmt.Sprintf("[%s](%s)", name, b.URI))
		case "resource":
			if b.Resource != nil && b.Resource.Text != "" {
				texts = append(texts, b.Resource.Text)
			}
		default:
			return "", nil, rpcErrorf(CodeInvalidParams, "invalid params: prompt[%d]: %q content is not supported", i, b.Type)
		}
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return "", nil, rpcErrorf(CodeInvalidParams, "invalid params: the prompt is empty")
	}
	return text, images, nil
}

func (s *Server) prompt(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string          `json:"sessionId"`
		Prompt    json.RawMessage `json:"prompt"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	text, images, err := promptContent(p.Prompt)
	if err != nil {
		return nil, err
	}
	turnCtx, err := ss.begin()
	if err != nil {
		return nil, err
	}
	end, next := ss.runTurn(turnCtx, text, images)
	return followUp{result: stopResponse(end), then: next}, nil
}

// stopResponse maps how a turn ended to ACP: a failed turn has no stop
// reason of its own, so it ends its turn with the exact state in _meta (the
// failure item itself went out as _spbridge/item).
func stopResponse(end *itemmap.TurnEnd) map[string]any {
	reason := "end_turn"
	if end.Status == itemmap.TurnInterrupted {
		reason = "cancelled"
	}
	return map[string]any{"stopReason": reason, "_meta": map[string]any{"spbridge": map[string]any{"status": end.Status}}}
}

// begin marks a turn running; a second one at once is refused.
func (ss *acpSession) begin() (context.Context, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed || ss.stopping {
		return nil, rpcErrorf(CodeNotFound, "session %q is closed", ss.id)
	}
	if ss.running {
		return nil, &RPCError{Code: CodeBusy, Message: "a prompt is already running in this session; send this one with _spbridge/queue or wait"}
	}
	ss.running = true
	ctx, cancel := context.WithCancel(context.Background())
	ss.turnCancel = cancel
	return ctx, nil
}

// runTurn runs one turn and what it leaves behind: the edited notice, a
// deferred save, the queue (handed back as unsent when the turn was
// interrupted). It returns how the turn ended and what starts the next
// queued message, to call once the turn's prompt was answered.
func (ss *acpSession) runTurn(ctx context.Context, text string, images []session.Image) (*itemmap.TurnEnd, func()) {
	ss.edited()
	res, err := ss.conv.Send(ctx, text, images, &acpHost{ss: ss})
	end := &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	if err == nil {
		end = res.End
		if res.AuditErr != nil {
			ss.srv.cfg.Log.Printf("session %s: %v", ss.id, res.AuditErr)
		}
	} else {
		ss.srv.cfg.Log.Printf("session %s: %v", ss.id, err)
	}
	ss.mu.Lock()
	ss.dirty = true
	ss.running = false
	ss.turnCancel = nil
	var next *queuedPrompt
	if end.Status == itemmap.TurnInterrupted {
		// An interrupted turn hands its queue back to the composer.
		for _, q := range ss.queue {
			ss.pkg.Conv.Unsent = append(ss.pkg.Conv.Unsent, q.text)
		}
		ss.queue = nil
		ss.pkg.Conv.Queued = nil
	} else if len(ss.queue) > 0 && !ss.closed {
		next = &ss.queue[0]
		ss.queue = ss.queue[1:]
		if len(ss.pkg.Conv.Queued) > 0 {
			ss.pkg.Conv.Queued = ss.pkg.Conv.Queued[1:]
		}
	}
	if ss.saveAfter {
		ss.saveAfter = false
		if _, err := ss.pkg.Save(ss.keep); err != nil {
			ss.srv.cfg.Log.Printf("session %s: save: %v", ss.id, err)
		} else {
			ss.dirty = false
		}
	}
	ss.mu.Unlock()
	ss.edited()
	return end, func() {
		if next != nil {
			ss.startQueued(*next)
		}
	}
}

// startQueued runs a queued message as the next turn, in the background.
func (ss *acpSession) startQueued(q queuedPrompt) {
	ctx, err := ss.begin()
	if err != nil {
		return
	}
	ss.srv.wg.Add(1)
	go func() {
		defer ss.srv.wg.Done()
		_, next := ss.runTurn(ctx, q.text, q.images)
		next()
	}()
}

// edited tells the client the conversation changed, when it is kept in the
// document.
func (ss *acpSession) edited() {
	ss.mu.Lock()
	keep := ss.keep
	ss.mu.Unlock()
	if keep {
		ss.srv.w.notify("_spbridge/edited", map[string]any{"sessionId": ss.id})
	}
}

// cancel interrupts the running turn, if any.
func (ss *acpSession) cancel() {
	ss.mu.Lock()
	cancel := ss.turnCancel
	ss.mu.Unlock()
	if cancel != nil {
		cancel()
		ss.conv.Interrupt()
	}
}

// close saves a changed conversation, ends the CLI and releases the lock.
func (ss *acpSession) close() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil
	}
	ss.closed = true
	var errs []error
	if ss.dirty {
		if _, err := ss.pkg.Save(ss.keep); err != nil {
			errs = append(errs, fmt.Errorf("save %s: %w", ss.id, err))
		}
	}
	errs = append(errs, ss.conv.Close(), ss.lock.Unlock())
	return errors.Join(errs...)
}

func (s *Server) sessionParam(params json.RawMessage, v any) (*acpSession, error) {
	if err := decode(params, v); err != nil {
		return nil, err
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(params, &p)
	return s.session(p.SessionID)
}

func (s *Server) rate(params json.RawMessage) (any, error) {
	var p struct {
		ItemID  string   `json:"itemId"`
		Rating  string   `json:"rating"`
		Reasons []string `json:"reasons"`
	}
	ss, err := s.sessionParam(params, &p)
	if err != nil {
		return nil, err
	}
	if p.ItemID == "" || (p.Rating != "good" && p.Rating != "bad") {
		return nil, rpcErrorf(CodeInvalidParams, `invalid params: itemId and a rating of "good" or "bad" are required`)
	}
	ss.mu.Lock()
	conv := ss.pkg.Conv
	if conv.Feedback == nil {
		conv.Feedback = make(map[string]archive.Feedback)
	}
	reasons := p.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	conv.Feedback[p.ItemID] = archive.Feedback{Rating: p.Rating, Reasons: reasons}
	ss.dirty = true
	ss.mu.Unlock()
	ss.edited()
	return struct{}{}, nil
}

func (s *Server) queue(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	ss, err := s.sessionParam(params, &p)
	if err != nil {
		return nil, err
	}
	text, images, err := promptContent(p.Prompt)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	if ss.running {
		ss.queue = append(ss.queue, queuedPrompt{text, images})
		ss.pkg.Conv.Queued = append(ss.pkg.Conv.Queued, text)
		ss.dirty = true
		ss.mu.Unlock()
		ss.edited()
		return map[string]any{"queued": true}, nil
	}
	ss.mu.Unlock()
	// Nothing runs: the message is the next turn now.
	ss.startQueued(queuedPrompt{text, images})
	return map[string]any{"queued": false}, nil
}

func (s *Server) save(params json.RawMessage) (any, error) {
	var p struct{}
	ss, err := s.sessionParam(params, &p)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.running {
		// The turn is changing the conversation: save when it ends.
		ss.saveAfter = true
		return map[string]any{"deferred": true, "written": []string{}, "removed": []string{}}, nil
	}
	r, err := ss.pkg.Save(ss.keep)
	if err != nil {
		return nil, rpcErrorf(CodeInternalError, "save: %v", err)
	}
	ss.dirty = false
	return map[string]any{"deferred": false, "written": nonNil(r.Written), "removed": nonNil(r.Removed)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) newConversation(params json.RawMessage) (any, error) {
	var p struct{}
	ss, err := s.sessionParam(params, &p)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	if ss.running {
		ss.mu.Unlock()
		return nil, &RPCError{Code: CodeBusy, Message: "a prompt is running in this session; cancel it first"}
	}
	// The CLI's session belongs to the old conversation: a new CLI starts
	// with the next prompt.
	ss.conv.Close()
	be, err := s.cfg.NewBackend(ss.backend, BackendOptions{Cwd: ss.cwd, Model: ss.model})
	if err != nil {
		ss.mu.Unlock()
		return nil, rpcErrorf(CodeInternalError, "new conversation: %v", err)
	}
	ss.conv.Backend = be
	if _, err := ss.pkg.NewConversation(); err != nil {
		ss.mu.Unlock()
		return nil, rpcErrorf(CodeInternalError, "new conversation: %v", err)
	}
	ss.conv.Restore = nil
	ss.queue = nil
	ss.dirty = false
	ss.mu.Unlock()
	ss.edited()
	return struct{}{}, nil
}

func (s *Server) setKeep(params json.RawMessage) (any, error) {
	var p struct {
		Keep *bool `json:"keep"`
	}
	ss, err := s.sessionParam(params, &p)
	if err != nil {
		return nil, err
	}
	if p.Keep == nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: keep (a boolean) is required")
	}
	ss.mu.Lock()
	ss.keep = *p.Keep
	ss.dirty = true // the next save writes or removes agent/
	ss.mu.Unlock()
	return struct{}{}, nil
}
