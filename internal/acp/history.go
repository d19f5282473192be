package acp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
)

// cliSession is a CLI's own session as session/list names it: the CLI
// and its session id, written "BACKEND:ID" ("claude:4f0c…").
type cliSession struct {
	backend, id string
}

func (c cliSession) String() string { return c.backend + ":" + c.id }

// parseCLISession reads a session id session/list gave a CLI's own
// session; nil for any other id (a package's path).
func parseCLISession(sid string) *cliSession {
	backend, id, ok := strings.Cut(sid, ":")
	if _, known := clis.Lookup(backend); !ok || id == "" || !known {
		return nil
	}
	return &cliSession{backend: backend, id: id}
}

// importCLI resolves the package of a load or resume of a CLI's own
// session: the one it was imported into before (the sessions index
// keeps it), else a new one (in SessionsDir, or the one the request
// named), into which the session's file is imported now. The CLI's files
// are only read.
func (s *Server) importCLI(op *openParams) error {
	ix := s.cfg.Index
	if ix != nil {
		e, ok, err := ix.Session(op.sid)
		if err != nil {
			return rpcErrorf(CodeInternalError, "sessions index: %v", err)
		}
		if ok && sessionindex.Present(e) && (op.id == "" || op.id == e.Package) {
			op.id = e.Package
			return nil
		}
	}
	opts := *s.cfg.History
	opts.Backend = op.cli.backend
	entry, err := history.Find(opts, op.cli.id)
	if err != nil {
		return rpcErrorf(CodeNotFound, "session %q: %v", op.sid, err)
	}
	conv, report, err := history.Import(entry, history.ImportOptions{Stores: opts.Stores})
	if err != nil {
		return rpcErrorf(CodeInternalError, "import session %q: %v", op.sid, err)
	}
	if op.id == "" {
		if s.cfg.SessionsDir == "" {
			return rpcErrorf(CodeInvalidParams, "invalid params: _meta.spbridge.package is required to import %s", op.sid)
		}
		op.id = filepath.Join(s.cfg.SessionsDir, archive.NewID())
	}
	if err := os.MkdirAll(op.id, 0o700); err != nil {
		return rpcErrorf(CodeInternalError, "make a package for the session: %v", err)
	}
	// The open saves it into the package. The CLI holds the session now:
	// the first turn continues it, with the whole history and the prompt
	// cache (a later open tells a new CLI session the conversation so far,
	// as for any reopened one).
	op.imported = conv
	op.resume = op.cli.id
	if ix != nil {
		cwd := report.Cwd
		if cwd == "" {
			cwd = op.cwd
		}
		id, sid, cli, title := op.id, op.sid, *op.cli, entry.Title
		op.onImported = func() {
			if err := ix.Imported(id, cwd, sid, cli.backend, cli.id, title); err != nil {
				s.cfg.Log.Printf("session %s: sessions index: %v", sid, err)
			}
		}
	}
	return nil
}

// listEntry is one session of session/list.
type listEntry struct {
	id, cwd, title string
	updated        time.Time
	dirs           []string
	meta           map[string]any // _meta.spbridge
}

// listCursor names the last entry of a page of session/list, and the
// listing it was taken from (a snapshot still kept, 0 for none).
type listCursor struct {
	UpdatedAt time.Time `json:"u"`
	ID        string    `json:"i"`
	Snapshot  uint64    `json:"s,omitempty"`
}

// parseListCursor reads a cursor listPage gave; nil for "".
func parseListCursor(cursor string) (*listCursor, error) {
	if cursor == "" {
		return nil, nil
	}
	data, err := base64.RawURLEncoding.DecodeString(cursor)
	var c listCursor
	if err != nil || json.Unmarshal(data, &c) != nil || c.ID == "" {
		return nil, sessionindex.ErrBadCursor
	}
	return &c, nil
}

// maxListSnapshots is how many listings session/list keeps for the pages
// after their first.
const maxListSnapshots = 4

// listSnapshots keeps the last listings session/list made, so that the
// pages after a first are cut from the listing the first page was (one
// consistent list, whatever changed meanwhile) without listing every
// session again: a page costs the same over 10,000 sessions as over 100.
// A first page (no cursor) always lists anew; a listing's last page, and
// a session/delete, drop it.
type listSnapshots struct {
	mu   sync.Mutex
	last uint64
	kept []*listSnapshot // oldest first
}

type listSnapshot struct {
	id      uint64
	cwd     string
	entries []listEntry
}

// get is the listing id for cwd, nil when it is no longer kept.
func (l *listSnapshots) get(id uint64, cwd string) []listEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.kept {
		if s.id == id && s.cwd == cwd {
			return s.entries
		}
	}
	return nil
}

// put keeps a listing for cwd and returns its id.
func (l *listSnapshots) put(cwd string, entries []listEntry) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	l.kept = append(l.kept, &listSnapshot{id: l.last, cwd: cwd, entries: entries})
	if len(l.kept) > maxListSnapshots {
		l.kept = slices.Delete(l.kept, 0, len(l.kept)-maxListSnapshots)
	}
	return l.last
}

// drop forgets the listing id.
func (l *listSnapshots) drop(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept = slices.DeleteFunc(l.kept, func(s *listSnapshot) bool { return s.id == id })
}

func (l *listSnapshots) clear() {
	l.mu.Lock()
	l.kept = nil
	l.mu.Unlock()
}

// listPageSize is how many sessions a page of session/list holds.
const listPageSize = sessionindex.DefaultPageSize

// listAll is every session session/list offers for cwd ("" for all
// folders): the packages opened through serve that are still there, and
// the CLIs' own sessions not imported into one, the most recently updated
// first (ties by id).
func (s *Server) listAll(cwd string) ([]listEntry, error) {
	var out []listEntry
	imported := map[string]bool{}
	if ix := s.cfg.Index; ix != nil {
		hidden, err := ix.Hidden()
		if err != nil {
			return nil, err
		}
		for id := range hidden {
			imported[id] = true
		}
		page, err := ix.List(cwd, "", int(^uint(0)>>1), sessionindex.Present)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			meta := map[string]any{"package": e.Package}
			if e.CLISession != "" {
				imported[e.Backend+":"+e.CLISession] = true
				meta["backend"], meta["cliSession"] = e.Backend, e.CLISession
			}
			for _, r := range e.Ran {
				imported[r] = true
			}
			if n := len(e.Ran); n > 0 {
				// The CLI session the conversation last ran on, and how a
				// terminal continues it while that CLI still has it.
				if c := parseCLISession(e.Ran[n-1]); c != nil {
					last := map[string]any{"backend": c.backend, "id": c.id}
					if cmd := continueCommand(c.backend, c.id); cmd != "" {
						last["continueCommand"] = cmd
					}
					meta["lastCLISession"] = last
				}
			}
			out = append(out, listEntry{id: e.ID(), cwd: e.Cwd, title: e.Title, updated: e.UpdatedAt, dirs: e.AdditionalDirectories, meta: meta})
		}
	}
	if s.cfg.History != nil {
		opts := *s.cfg.History
		opts.Cwd = cwd
		entries, err := history.List(opts)
		if err != nil {
			s.cfg.Log.Printf("session/list: the CLIs' sessions: %v", err)
		}
		for _, e := range entries {
			id := cliSession{e.Backend, e.ID}.String()
			if imported[id] {
				continue
			}
			meta := map[string]any{"backend": e.Backend, "cliSession": e.ID}
			if c := continueCommand(e.Backend, e.ID); c != "" {
				meta["continueCommand"] = c
			}
			out = append(out, listEntry{id: id, cwd: e.Cwd, title: e.Title, updated: e.UpdatedAt, meta: meta})
		}
	}
	slices.SortStableFunc(out, func(a, b listEntry) int {
		if c := b.updated.Compare(a.updated); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out, nil
}

// continueCommand is the command that continues a CLI's session in a
// terminal, in its folder; "" for a CLI spbridge does not have.
func continueCommand(backend, id string) string {
	cli, ok := clis.Lookup(backend)
	if !ok {
		return ""
	}
	return cli.Continue(id)
}

// listPage is the page of entries after c (nil for the first), and the
// cursor of the next page ("" on the last), which names the listing
// snapshot (0: none).
func listPage(entries []listEntry, c *listCursor, snapshot uint64) ([]listEntry, string) {
	start := 0
	if c != nil {
		start = len(entries)
		for i, e := range entries {
			if e.updated.Before(c.UpdatedAt) || (e.updated.Equal(c.UpdatedAt) && e.id > c.ID) {
				start = i
				break
			}
		}
	}
	end := min(start+listPageSize, len(entries))
	page := entries[start:end]
	next := ""
	if end < len(entries) {
		last := page[len(page)-1]
		data, _ := json.Marshal(listCursor{last.updated, last.id, snapshot})
		next = base64.RawURLEncoding.EncodeToString(data)
	}
	return page, next
}

// fork puts a copy of the conversation of the session op forks into op's
// package (new, or one that holds no conversation): a package open in
// this serve (as it stands), one on disk, or a CLI's own session (read
// from the package it was imported into, else imported now). With atItem
// the copy ends with that item, and the history with its turn. Images go
// with the history; usage and cost are the whole conversation's (a turn's
// share is not known).
func (s *Server) fork(op *openParams) error {
	from, err := s.forkSource(op)
	if err != nil {
		return err
	}
	conv, err := from(op.atItem)
	if errors.Is(err, archive.ErrNoItem) {
		return rpcErrorf(CodeInvalidParams, "invalid params: _meta.spbridge.atItem: no item %q in the conversation", op.atItem)
	}
	if err != nil {
		return rpcErrorf(CodeInternalError, "fork: %v", err)
	}
	if err := os.MkdirAll(op.id, 0o700); err != nil {
		return rpcErrorf(CodeInternalError, "make a package for the session: %v", err)
	}
	op.imported = &conv // the open saves it into the package
	return nil
}

// forkSource is what makes the copy a fork starts from, up to an item
// ("" for all): an open session's is made under its lock.
func (s *Server) forkSource(op *openParams) (func(atItem string) (archive.Conversation, error), error) {
	given := func(c *archive.Conversation) func(string) (archive.Conversation, error) {
		return c.Fork
	}
	src := op.forkFrom
	if c := parseCLISession(src); c != nil && s.cfg.History != nil {
		e, ok, err := s.indexSession(src)
		if err != nil {
			return nil, err
		}
		if !ok {
			opts := *s.cfg.History
			opts.Backend = c.backend
			entry, err := history.Find(opts, c.id)
			if err != nil {
				return nil, rpcErrorf(CodeNotFound, "session %q: %v", src, err)
			}
			conv, _, err := history.Import(entry, history.ImportOptions{Stores: opts.Stores})
			if err != nil {
				return nil, rpcErrorf(CodeInternalError, "import session %q: %v", src, err)
			}
			return given(conv), nil
		}
		src = e.Package
	}
	s.mu.Lock()
	open := s.sessions[src]
	s.mu.Unlock()
	if open != nil {
		open.mu.Lock()
		conv := open.conv
		open.mu.Unlock()
		if conv != nil {
			return conv.Fork, nil
		}
	}
	if !filepath.IsAbs(src) {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: sessionId %q names no session to fork", src)
	}
	pkg, err := archive.Open(src, archive.KindDocument, true)
	if err != nil {
		return nil, rpcErrorf(CodeNotFound, "session %q: %v", src, err)
	}
	if pkg.Unreadable != "" {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: the conversation of %s cannot be read: %s", src, pkg.Unreadable)
	}
	return given(pkg.Conv), nil
}

// indexSession is the index's entry for the session id sid.
func (s *Server) indexSession(sid string) (sessionindex.Entry, bool, error) {
	if s.cfg.Index == nil {
		return sessionindex.Entry{}, false, nil
	}
	e, ok, err := s.cfg.Index.Session(sid)
	if err != nil {
		return e, false, rpcErrorf(CodeInternalError, "sessions index: %v", err)
	}
	return e, ok && sessionindex.Present(e), nil
}

// deleteSession handles session/delete: the session is forgotten. A
// package spbridge made in the state folder's sessions/ is removed; a
// user's document never is, nor a CLI's files: a CLI's own session, and
// those a forgotten package ran on, are hidden from session/list instead.
// An open session is refused: close it first.
func (s *Server) deleteSession(params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: sessionId is required")
	}
	ix := s.cfg.Index
	if ix == nil {
		return nil, rpcErrorf(CodeInvalidRequest, "this serve keeps no list of sessions")
	}
	s.mu.Lock()
	_, open := s.sessions[p.SessionID]
	s.mu.Unlock()
	if open {
		return nil, rpcErrorf(CodeInvalidRequest, "session %q is open: close it first", p.SessionID)
	}
	var hide []string
	removed, pkg := false, ""
	e, ok, err := s.indexSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	if !ok && filepath.IsAbs(p.SessionID) {
		e, ok, err = ix.Get(p.SessionID)
		if err != nil {
			return nil, rpcErrorf(CodeInternalError, "sessions index: %v", err)
		}
	}
	switch {
	case ok:
		pkg = e.Package
		hide = append(hide, e.Ran...)
		if e.CLISession != "" {
			hide = append(hide, e.Backend+":"+e.CLISession)
		}
		if s.cfg.SessionsDir != "" && filepath.Dir(e.Package) == filepath.Clean(s.cfg.SessionsDir) {
			if err := session.Remove(e.Package); errors.Is(err, session.ErrLocked) {
				return nil, rpcErrorf(CodeInvalidRequest, "%v", err)
			} else if err != nil {
				return nil, rpcErrorf(CodeInternalError, "remove %s: %v", e.Package, err)
			}
			removed = true
		}
		if err := ix.Remove(e.Package); err != nil {
			return nil, rpcErrorf(CodeInternalError, "sessions index: %v", err)
		}
	case parseCLISession(p.SessionID) != nil:
		hide = append(hide, p.SessionID)
	default:
		return nil, rpcErrorf(CodeNotFound, "unknown session %q", p.SessionID)
	}
	for _, id := range hide {
		if err := ix.Hide(id); err != nil {
			return nil, rpcErrorf(CodeInternalError, "sessions index: %v", err)
		}
	}
	s.lists.clear()
	meta := map[string]any{"removed": removed, "hidden": nonNil(hide)}
	if pkg != "" {
		meta["package"] = pkg
	}
	return map[string]any{"_meta": map[string]any{"spbridge": meta}}, nil
}

// listSessions handles session/list: the packages opened through serve
// (those that no longer exist left out) and the CLIs' own sessions not
// imported into one, newest first (listAll).
func (s *Server) listSessions(params json.RawMessage) (any, error) {
	var p struct {
		Cwd    string `json:"cwd"`
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := decode(params, &p); err != nil {
			return nil, err
		}
	}
	if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: cwd must be an absolute path")
	}
	cursor, err := parseListCursor(p.Cursor)
	if err != nil {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: cursor: %v", err)
	}
	// A page after the first is cut from the listing the first page was,
	// while it is kept; else (and for a first page) every session is
	// listed anew.
	var all []listEntry
	var snapshot uint64
	if cursor != nil && cursor.Snapshot != 0 {
		if all = s.lists.get(cursor.Snapshot, p.Cwd); all != nil {
			snapshot = cursor.Snapshot
		}
	}
	if snapshot == 0 {
		if all, err = s.listAll(p.Cwd); err != nil {
			return nil, rpcErrorf(CodeInternalError, "list sessions: %v", err)
		}
		if len(all) > listPageSize {
			snapshot = s.lists.put(p.Cwd, all)
		}
	}
	page, next := listPage(all, cursor, snapshot)
	if next == "" && snapshot != 0 {
		s.lists.drop(snapshot) // its last page: the editor has it all
	}
	sessions := []any{}
	for _, e := range page {
		info := map[string]any{"sessionId": e.id, "cwd": e.cwd, "updatedAt": e.updated.UTC().Format(time.RFC3339)}
		if e.title != "" {
			info["title"] = e.title
		}
		if len(e.dirs) > 0 {
			info["additionalDirectories"] = e.dirs
		}
		if e.meta != nil {
			info["_meta"] = map[string]any{"spbridge": e.meta}
		}
		sessions = append(sessions, info)
	}
	res := map[string]any{"sessions": sessions}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, nil
}

// touch records the session's open in the index, and reads its title.
func (ss *acpSession) touch() {
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

// recordTurn records a turn that ran in the index and, when it gave the
// session its title, tells the client.
func (ss *acpSession) recordTurn(text, cliSession string) {
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
		ss.bg.recorder.Later(ix, ss.set.pkg, ss.set.cwd, text, func(err error) {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		})
		return
	}
	ss.bg.recorder.Wait()
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
func (ss *acpSession) clearTitle() {
	ss.bg.recorder.Wait() // a turn recorded later must not give the old title back
	ss.told.mu.Lock()
	ss.told.title = ""
	ss.told.mu.Unlock()
	if ix := ss.srv.cfg.Index; ix != nil {
		if err := ix.SetTitle(ss.set.pkg, ""); err != nil {
			ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
		}
	}
}
