package acp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/catalog"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/search"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
)

// importCLI resolves the package of a load or resume of a CLI's own
// session: the one it was imported into before (the sessions index
// keeps it), else a new one (in SessionsDir, or the one the request
// named), into which the session's file is imported now. The CLI's files
// are only read.
func (s *Server) importCLI(op *openParams) error {
	found, err := s.list.Find(*op.cli, op.id)
	if err != nil {
		return findError(err)
	}
	if found.Package != "" {
		op.id = found.Package
		return nil
	}
	if op.id == "" {
		if s.cfg.SessionsDir == "" {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta.spbridge.package is required to import %s", op.sid)
		}
		op.id = filepath.Join(s.cfg.SessionsDir, archive.NewID())
	}
	op.fresh = true // the open makes the package's folder
	// The open saves it into the package. The CLI holds the session now:
	// the first turn continues it, with the whole history and the prompt
	// cache (a later open tells a new CLI session the conversation so far,
	// as for any reopened one).
	op.imported = found.Conv
	op.resume = op.cli.ID
	if ix := s.cfg.Index; ix != nil {
		cwd := found.Cwd
		if cwd == "" {
			cwd = op.cwd
		}
		id, sid, cli, title := op.id, op.sid, *op.cli, found.Title
		op.onImported = func() {
			if err := ix.Imported(id, cwd, sid, cli.CLI, cli.ID, title); err != nil {
				s.cfg.Log.Printf("session %s: sessions index: %v", sid, err)
			}
		}
	}
	return nil
}

// findError is catalog.Find's error in ACP's words: a session its CLI's
// store does not have is not found, any other failure internal.
func findError(err error) error {
	if errors.As(err, new(*catalog.NotFoundError)) {
		return jsonrpc.Errorf(CodeNotFound, "%v", err)
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
}

// deleteSession handles session/delete: the session is forgotten. A
// package spbridge made in the state folder's sessions/ is removed; a
// user's document never is, nor a CLI's files: a CLI's own session, and
// those a forgotten package ran on, are hidden from session/list instead.
// A session open on this connection was closed first (deleteOpen); one
// opened again meanwhile is refused. A session never known, or deleted
// already, answers {}.
func (s *Server) deleteSession(params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: sessionId is required")
	}
	if s.cfg.Index == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "this serve keeps no list of sessions")
	}
	s.mu.Lock()
	_, open := s.sessions[p.SessionID]
	s.mu.Unlock()
	if open {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "session %q is open: close it first", p.SessionID)
	}
	d, err := s.list.Delete(p.SessionID, s.cfg.SessionsDir)
	switch {
	case errors.Is(err, catalog.ErrUnknown):
		// Never known, or deleted already: nothing to do, and that is no
		// error (the protocol asks a delete to succeed silently).
		return struct{}{}, nil
	case errors.Is(err, session.ErrLocked):
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%v", err)
	case err != nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%v", err)
	}
	meta := map[string]any{"removed": d.Removed, "hidden": nonNil(d.Hidden)}
	if d.Package != "" {
		meta["package"] = d.Package
	}
	return map[string]any{"_meta": map[string]any{"spbridge": meta}}, nil
}

// listSessions handles session/list: the packages opened through serve
// (those that no longer exist left out) and the CLIs' own sessions not
// imported into one, newest first (catalog.Catalog.All).
func (s *Server) listSessions(params json.RawMessage) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
		Meta   struct {
			Spbridge struct {
				Query *string `json:"query"`
			} `json:"spbridge"`
		} `json:"_meta"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := jsonrpc.DecodeParams(params, &p); err != nil {
			return nil, err
		}
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: cwd must be an absolute path")
	}
	cursor, err := catalog.ParseCursor(p.Cursor)
	if err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: cursor: %v", err)
	}
	var page []catalog.Entry
	var next string
	if q := p.Meta.Spbridge.Query; q != nil {
		// A search: the sessions that match, best first.
		if _, err := search.ParseQuery(*q); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta.spbridge.query: %v", err)
		}
		page, next, err = s.list.Search(context.Background(), p.Cwd, *q, cursor)
		switch {
		case errors.Is(err, sessionindex.ErrBadCursor):
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: cursor: of another query")
		case err != nil:
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "search sessions: %v", err)
		}
	} else if page, next, err = s.list.Page(p.Cwd, cursor); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "list sessions: %v", err)
	}
	sessions := []any{}
	for _, e := range page {
		sessions = append(sessions, wire.SessionInfo(e))
	}
	res := map[string]any{"sessions": sessions}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, nil
}

// records keeps the session's record in the sessions index: its open,
// each turn that ran (and the title the first gives, told to the client),
// New Conversation's clearing of the title. The turns of a titled session
// are recorded in the background (recorder).
type records struct {
	ss       *acpSession
	recorder sessionindex.Recorder
}

// opened records the session's open in the index, and reads its title.
func (r *records) opened() {
	ss := r.ss
	ix := ss.srv.cfg.Index
	if ix == nil {
		return
	}
	if err := ix.Touch(ss.set.pkg, ss.set.cwd, ss.set.addDirs); err != nil {
		ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		return
	}
	if e, ok, err := ix.Get(ss.set.pkg); err == nil && ok {
		ss.told.mu.Lock()
		ss.told.title = e.Title
		ss.told.mu.Unlock()
	}
}

// turn records a turn that ran in the index and, when it gave the
// session its title, tells the client.
func (r *records) turn(text, cliSession string) {
	ss := r.ss
	ix := ss.srv.cfg.Index
	if ix == nil {
		return
	}
	ss.told.mu.Lock()
	newCLISession := cliSession != "" && cliSession != ss.told.ranOn
	ss.told.ranOn = cliSession
	ss.told.mu.Unlock()
	if newCLISession {
		// The CLI keeps this session in its own list too: session/list
		// shows it as this package, not twice.
		if err := ix.Ran(ss.set.pkg, ss.conv.CLI(), cliSession); err != nil {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		}
	}
	ss.told.mu.Lock()
	titled := ss.told.title != ""
	ss.told.mu.Unlock()
	if titled {
		r.recorder.Later(ix, ss.set.pkg, ss.set.cwd, text, func(err error) {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		})
		return
	}
	r.recorder.Wait()
	if err := ix.Record(ss.set.pkg, ss.set.cwd, text); err != nil {
		ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		return
	}
	e, ok, err := ix.Get(ss.set.pkg)
	if err != nil || !ok {
		return
	}
	ss.told.mu.Lock()
	changed := e.Title != "" && e.Title != ss.told.title
	ss.told.title = e.Title
	ss.told.mu.Unlock()
	if changed {
		ss.send.update(map[string]any{"sessionUpdate": "session_info_update", "title": e.Title,
			"updatedAt": e.UpdatedAt.UTC().Format(time.RFC3339)})
	}
}

// clearTitle forgets the title after New Conversation: the next turn gives
// the next one.
func (r *records) clearTitle() {
	ss := r.ss
	r.recorder.Wait() // a turn recorded later must not give the old title back
	ss.told.mu.Lock()
	ss.told.title = ""
	ss.told.mu.Unlock()
	if ix := ss.srv.cfg.Index; ix != nil {
		if err := ix.SetTitle(ss.set.pkg, ""); err != nil {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		}
	}
}
