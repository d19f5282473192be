package acp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/pkglock"
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
	if !ok || id == "" || (backend != history.Claude && backend != history.Codex) {
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
	conv, report, err := history.Import(entry, history.ImportOptions{})
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
	if err := saveImported(op, conv); err != nil {
		return err
	}
	if ix != nil {
		cwd := report.Cwd
		if cwd == "" {
			cwd = op.cwd
		}
		if err := ix.Imported(op.id, cwd, op.sid, op.cli.backend, op.cli.id, entry.Title); err != nil {
			s.cfg.Log.Printf("session %s: sessions index: %v", op.sid, err)
		}
	}
	return nil
}

// saveImported writes an imported conversation into op's package, which
// must not hold one already.
func saveImported(op *openParams, conv *archive.Conversation) error {
	lock, err := pkglock.Acquire(op.id)
	if errors.Is(err, pkglock.ErrLocked) {
		return rpcErrorf(CodeInvalidRequest, "%v", err)
	}
	if err != nil {
		return rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
	}
	defer lock.Unlock()
	pkg, err := archive.Open(op.id, op.kind, true)
	if err != nil {
		return rpcErrorf(CodeInvalidParams, "invalid params: %v", err)
	}
	if !pkg.Conv.IsEmpty() || pkg.Unreadable != "" {
		return rpcErrorf(CodeInvalidParams, "invalid params: the package %s already holds a conversation", op.id)
	}
	pkg.Conv = conv
	if _, err := pkg.Save(true); err != nil {
		return rpcErrorf(CodeInternalError, "save the imported session: %v", err)
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

// listCursor names the last entry of a page of session/list.
type listCursor struct {
	UpdatedAt time.Time `json:"u"`
	ID        string    `json:"i"`
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
// terminal, in its folder.
func continueCommand(backend, id string) string {
	switch backend {
	case history.Claude:
		return "claude --resume " + id
	case history.Codex:
		return "codex resume " + id
	}
	return ""
}

// listPage is the page of entries after cursor ("" for the first), and
// the cursor of the next page ("" on the last).
func listPage(entries []listEntry, cursor string) ([]listEntry, string, error) {
	start := 0
	if cursor != "" {
		data, err := base64.RawURLEncoding.DecodeString(cursor)
		var c listCursor
		if err != nil || json.Unmarshal(data, &c) != nil || c.ID == "" {
			return nil, "", sessionindex.ErrBadCursor
		}
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
		data, _ := json.Marshal(listCursor{last.updated, last.id})
		next = base64.RawURLEncoding.EncodeToString(data)
	}
	return page, next, nil
}
