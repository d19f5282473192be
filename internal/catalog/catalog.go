// Package catalog is the list of a user's sessions that spbridge serve
// offers an editor (session/list): the packages opened through serve that
// are still there (internal/sessionindex) merged with the CLIs' own
// sessions (internal/history's stores) not imported into one, the most
// recently updated first, in pages cut from a snapshot of the listing so
// that the pages after a first are one consistent list; and Delete, which
// forgets a session (removing a package spbridge made, hiding a CLI's own
// session); Find, which finds a CLI's own session for an open or a fork
// (the package it was imported into, else its conversation imported now).
// A CLI's own session is named "CLI:ID" (Session). What a page means in the protocol
// is the caller's (internal/acp).
package catalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/search"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
)

// Session is a CLI's own session: the CLI and its session id, written
// "CLI:ID" ("claude:4f0c…").
type Session struct {
	CLI, ID string
}

func (c Session) String() string { return c.CLI + ":" + c.ID }

// ParseSession reads the id of a CLI's own session; nil for any other id
// (a package's path) and for a CLI spbridge does not have.
func ParseSession(sid string) *Session {
	cli, id, ok := strings.Cut(sid, ":")
	if _, known := clis.Lookup(cli); !ok || id == "" || !known {
		return nil
	}
	return &Session{CLI: cli, ID: id}
}

// Continue is the command that continues the session in a terminal, in
// its folder; "" for a CLI spbridge does not have.
func (c Session) Continue() string {
	cli, ok := clis.Lookup(c.CLI)
	if !ok {
		return ""
	}
	return cli.Continue(c.ID)
}

// Held reports whether the session's CLI still keeps it on this machine:
// its file is in the CLI's store (in opts' folders; opts.Backend is the
// session's CLI).
func (c Session) Held(opts history.Options) bool {
	opts.Backend = c.CLI
	_, err := history.Find(opts, c.ID)
	return err == nil
}

// Entry is one session of the list: a package, or a CLI's own session.
type Entry struct {
	ID, Cwd, Title string
	UpdatedAt      time.Time
	Dirs           []string // a package's additional folders
	// Package is the package's path; "" for a CLI's own session.
	Package string
	// From is, for a package, the CLI session it was imported from (its
	// CLI as the index has it, known or not; nil for none); for a CLI's
	// own session, itself.
	From *Session
	// LastRan is the CLI session a package last ran on, of a CLI
	// spbridge has; nil when none.
	LastRan *Session
	// Snippets are, in a search's results, the lines that matched.
	Snippets []search.Snippet
}

// PageSize is how many sessions a page holds.
const PageSize = sessionindex.DefaultPageSize

// Catalog lists a user's sessions. Its zero value lists none.
type Catalog struct {
	// Index keeps the packages opened through serve; nil lists none.
	Index *sessionindex.Index
	// History is where the CLIs keep their own sessions; nil lists none.
	History *history.Options
	// Logf, when set, is told why the CLIs' sessions could not all be
	// listed (the list goes on without them).
	Logf func(format string, args ...any)

	snapshots snapshots
}

// All is every session for cwd ("" for all folders): the packages opened
// through serve that are still there, and the CLIs' own sessions not
// imported into one, the most recently updated first (ties by id).
func (c *Catalog) All(cwd string) ([]Entry, error) {
	var out []Entry
	imported := map[string]bool{}
	if ix := c.Index; ix != nil {
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
			entry := Entry{ID: e.ID(), Cwd: e.Cwd, Title: e.Title, UpdatedAt: e.UpdatedAt, Dirs: e.AdditionalDirectories, Package: e.Package}
			if e.CLISession != "" {
				imported[e.Backend+":"+e.CLISession] = true
				entry.From = &Session{CLI: e.Backend, ID: e.CLISession}
			}
			for _, r := range e.Ran {
				imported[r] = true
			}
			if n := len(e.Ran); n > 0 {
				entry.LastRan = ParseSession(e.Ran[n-1])
			}
			out = append(out, entry)
		}
	}
	if c.History != nil {
		opts := *c.History
		opts.Cwd = cwd
		entries, err := history.List(opts)
		if err != nil && c.Logf != nil {
			c.Logf("the CLIs' sessions: %v", err)
		}
		for _, e := range entries {
			s := Session{CLI: e.Backend, ID: e.ID}
			id := s.String()
			if imported[id] {
				continue
			}
			out = append(out, Entry{ID: id, Cwd: e.Cwd, Title: e.Title, UpdatedAt: e.UpdatedAt, From: &s})
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Cursor names the last entry of a page, and the listing it was taken
// from (a snapshot still kept, 0 for none).
type Cursor struct {
	UpdatedAt time.Time `json:"u"`
	ID        string    `json:"i"`
	Snapshot  uint64    `json:"s,omitempty"`
	// Of a search's pages: the query's, and the number of results
	// before the next page.
	Query  string `json:"q,omitempty"`
	Offset int    `json:"o,omitempty"`
}

// ParseCursor reads a cursor Page gave; nil for "".
func ParseCursor(cursor string) (*Cursor, error) {
	if cursor == "" {
		return nil, nil
	}
	data, err := base64.RawURLEncoding.DecodeString(cursor)
	var c Cursor
	if err != nil || json.Unmarshal(data, &c) != nil || c.ID == "" {
		return nil, sessionindex.ErrBadCursor
	}
	return &c, nil
}

// Page is the page of sessions for cwd after cursor (nil for the first),
// and the cursor of the next page ("" on the last). A page after the
// first is cut from the listing the first page was, while it is kept;
// else (and for a first page) every session is listed anew.
func (c *Catalog) Page(cwd string, cursor *Cursor) ([]Entry, string, error) {
	var all []Entry
	var snapshot uint64
	if cursor != nil && cursor.Snapshot != 0 {
		if all, _ = c.snapshots.get(cursor.Snapshot, cwd, ""); all != nil {
			snapshot = cursor.Snapshot
		}
	}
	if snapshot == 0 {
		var err error
		if all, err = c.All(cwd); err != nil {
			return nil, "", err
		}
		if len(all) > PageSize {
			snapshot = c.snapshots.put(cwd, "", all, nil)
		}
	}
	page, next := cut(all, cursor, snapshot)
	if next == "" && snapshot != 0 {
		c.snapshots.drop(snapshot) // its last page: the editor has it all
	}
	return page, next, nil
}

// Search is the page of the sessions for cwd that match query (the
// sessions Page lists: the packages that are still there, the CLIs' own
// sessions not imported into one), best first (search.Find), each with
// the lines that matched, after cursor (nil for the first page), and the
// cursor of the next page ("" on the last). The pages after a first are
// cut from the results the first page had, while they are kept; else the
// search runs again and the page starts as far in. A cursor of another
// query is sessionindex.ErrBadCursor.
func (c *Catalog) Search(ctx context.Context, cwd, query string, cursor *Cursor) ([]Entry, string, error) {
	if c.Index == nil {
		return nil, "", errors.New("this serve keeps no list of sessions to search")
	}
	q, err := search.ParseQuery(query)
	if err != nil {
		return nil, "", err
	}
	offset := 0
	if cursor != nil {
		if cursor.Query != query {
			return nil, "", sessionindex.ErrBadCursor
		}
		offset = cursor.Offset
	}
	dir := c.Index.Dir()
	var all []Entry
	var hits []search.Hit
	var snapshot uint64
	if cursor != nil && cursor.Snapshot != 0 {
		if all, hits = c.snapshots.get(cursor.Snapshot, cwd, query); all != nil {
			snapshot = cursor.Snapshot
		}
	}
	if snapshot == 0 {
		if all, hits, err = c.search(ctx, dir, cwd, q, offset); err != nil {
			return nil, "", err
		}
		if len(all) > offset+PageSize {
			snapshot = c.snapshots.put(cwd, query, all, hits)
		}
	}
	start := min(offset, len(all))
	end := min(start+PageSize, len(all))
	page := slices.Clone(all[start:end])
	ph := slices.Clone(hits[start:end])
	if start < end && ph[0].Snippets == nil {
		// A page after the first: its snippets are made now.
		if err := search.Snip(dir, ph, q); err != nil {
			return nil, "", err
		}
	}
	for i := range page {
		page[i].Snippets = ph[i].Snippets
	}
	next := ""
	if end < len(all) {
		last := page[len(page)-1]
		data, _ := json.Marshal(Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID, Snapshot: snapshot, Query: query, Offset: end})
		next = base64.RawURLEncoding.EncodeToString(data)
	} else if snapshot != 0 {
		c.snapshots.drop(snapshot)
	}
	return page, next, nil
}

// search runs q over the sessions Page lists for cwd: their entries and
// hits, best first, the page at offset with its snippets.
func (c *Catalog) search(ctx context.Context, dir, cwd string, q search.Query, offset int) ([]Entry, []search.Hit, error) {
	listed, err := c.All(cwd)
	if err != nil {
		return nil, nil, err
	}
	byRef := map[string]int{}
	for i, e := range listed {
		if e.Package != "" {
			byRef[search.KindPackage+" "+e.Package] = i
		} else {
			byRef[search.KindCLI+" "+e.ID] = i
		}
	}
	sets := []search.Set{search.Packages(c.Index, cwd)}
	if c.History != nil {
		opts := *c.History
		opts.Cwd = cwd
		sets = append(sets, search.CLIs(opts))
	}
	res, err := search.Find(ctx, dir, search.Request{
		Query: q, Sets: sets, Cwd: cwd, Snippets: 0,
		Keep: func(h search.Hit) bool {
			_, ok := byRef[h.Kind+" "+h.Ref]
			return ok
		},
	})
	if err != nil {
		return nil, nil, err
	}
	if res.Rebuilt && c.Logf != nil {
		c.Logf("the search index was damaged and was made anew")
	}
	entries := make([]Entry, len(res.Hits))
	for i, h := range res.Hits {
		entries[i] = listed[byRef[h.Kind+" "+h.Ref]]
	}
	// The first page's snippets, now.
	from := min(offset, len(res.Hits))
	to := min(from+PageSize, len(res.Hits))
	if err := search.Snip(dir, res.Hits[from:to], q); err != nil {
		return nil, nil, err
	}
	for i := from; i < to; i++ {
		if res.Hits[i].Snippets == nil {
			res.Hits[i].Snippets = []search.Snippet{}
		}
	}
	return entries, res.Hits, nil
}

// Found is a CLI's own session as an open or a fork reads it: the
// package it was imported into (Package), when the index keeps one that
// is still there; else its conversation imported now from its CLI's store
// (Conv), with the title the store lists it by and the folder the import
// read (Cwd, "" when the file did not say).
type Found struct {
	Package    string
	Conv       *archive.Conversation
	Title, Cwd string
}

// NotFoundError is Find's error for a session its CLI's store does not
// have.
type NotFoundError struct {
	Session Session
	Err     error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("session %q: %v", e.Session.String(), e.Err)
}
func (e *NotFoundError) Unwrap() error { return e.Err }

// Find finds the CLI's own session s (History must be set): the package
// the index keeps for it, unless pkg names another ("" for any), else its
// conversation imported from its CLI's store. The CLI's files are only
// read; nothing is written.
func (c *Catalog) Find(s Session, pkg string) (Found, error) {
	if ix := c.Index; ix != nil {
		e, ok, err := ix.Session(s.String())
		if err != nil {
			return Found{}, fmt.Errorf("sessions index: %w", err)
		}
		if ok && sessionindex.Present(e) && (pkg == "" || pkg == e.Package) {
			return Found{Package: e.Package}, nil
		}
	}
	opts := *c.History
	opts.Backend = s.CLI
	entry, err := history.Find(opts, s.ID)
	if err != nil {
		return Found{}, &NotFoundError{Session: s, Err: err}
	}
	conv, report, err := history.Import(entry, history.ImportOptions{Stores: opts.Stores})
	if err != nil {
		return Found{}, fmt.Errorf("import session %q: %w", s.String(), err)
	}
	return Found{Conv: conv, Title: entry.Title, Cwd: report.Cwd}, nil
}

// Deleted is what Delete did.
type Deleted struct {
	Removed bool     // the package was removed from the disk
	Package string   // the package forgotten; "" for a CLI's own session
	Hidden  []string // the CLI sessions hidden from the list
}

// ErrUnknown is Delete's error for a session it does not know.
var ErrUnknown = errors.New("unknown session")

// Delete forgets the session id (the index must be set): a package the
// index keeps leaves it, and is removed when spbridge made it in
// sessionsDir (a user's document never is; one open elsewhere is not:
// session.ErrLocked); a CLI's own session, and those a forgotten package
// ran on or came from, are hidden from the list instead (a CLI's files are
// never touched). The listings kept are dropped.
func (c *Catalog) Delete(id, sessionsDir string) (Deleted, error) {
	ix := c.Index
	var d Deleted
	e, ok, err := ix.Session(id)
	if err != nil {
		return d, fmt.Errorf("sessions index: %w", err)
	}
	ok = ok && sessionindex.Present(e)
	if !ok && filepath.IsAbs(id) {
		if e, ok, err = ix.Get(id); err != nil {
			return d, fmt.Errorf("sessions index: %w", err)
		}
	}
	switch {
	case ok:
		d.Package = e.Package
		d.Hidden = append(d.Hidden, e.Ran...)
		if e.CLISession != "" {
			d.Hidden = append(d.Hidden, e.Backend+":"+e.CLISession)
		}
		if sessionsDir != "" && filepath.Dir(e.Package) == filepath.Clean(sessionsDir) {
			if err := session.Remove(e.Package); errors.Is(err, session.ErrLocked) {
				return d, err
			} else if err != nil {
				return d, fmt.Errorf("remove %s: %w", e.Package, err)
			}
			d.Removed = true
		}
		if err := ix.Remove(e.Package); err != nil {
			return d, fmt.Errorf("sessions index: %w", err)
		}
	case ParseSession(id) != nil:
		d.Hidden = append(d.Hidden, id)
	default:
		return d, ErrUnknown
	}
	for _, h := range d.Hidden {
		if err := ix.Hide(h); err != nil {
			return d, fmt.Errorf("sessions index: %w", err)
		}
	}
	c.snapshots.clear()
	return d, nil
}

// cut is the page of entries after c (nil for the first), and the cursor
// of the next page ("" on the last), which names the listing snapshot (0:
// none).
func cut(entries []Entry, c *Cursor, snapshot uint64) ([]Entry, string) {
	start := 0
	if c != nil {
		start = len(entries)
		for i, e := range entries {
			if e.UpdatedAt.Before(c.UpdatedAt) || (e.UpdatedAt.Equal(c.UpdatedAt) && e.ID > c.ID) {
				start = i
				break
			}
		}
	}
	end := min(start+PageSize, len(entries))
	page := entries[start:end]
	next := ""
	if end < len(entries) {
		last := page[len(page)-1]
		data, _ := json.Marshal(Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID, Snapshot: snapshot})
		next = base64.RawURLEncoding.EncodeToString(data)
	}
	return page, next
}

// MaxSnapshots is how many listings a Catalog keeps for the pages after
// their first.
const MaxSnapshots = 4

// snapshots keeps the last listings made, so that the pages after a
// first are cut from the listing the first page was (one consistent list,
// whatever changed meanwhile) without listing every session again: a page
// costs the same over 10,000 sessions as over 100. A first page (no
// cursor) always lists anew; a listing's last page, and Delete, drop it.
type snapshots struct {
	mu   sync.Mutex
	last uint64
	kept []*snapshot // oldest first
}

type snapshot struct {
	id      uint64
	cwd     string
	query   string // a search's ("" for a listing)
	entries []Entry
	hits    []search.Hit // a search's, by entry
}

// get is the listing id for cwd and query (and a search's hits), nil
// when it is no longer kept.
func (l *snapshots) get(id uint64, cwd, query string) ([]Entry, []search.Hit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.kept {
		if s.id == id && s.cwd == cwd && s.query == query {
			return s.entries, s.hits
		}
	}
	return nil, nil
}

// put keeps a listing for cwd and query and returns its id.
func (l *snapshots) put(cwd, query string, entries []Entry, hits []search.Hit) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	l.kept = append(l.kept, &snapshot{id: l.last, cwd: cwd, query: query, entries: entries, hits: hits})
	if len(l.kept) > MaxSnapshots {
		l.kept = slices.Delete(l.kept, 0, len(l.kept)-MaxSnapshots)
	}
	return l.last
}

// drop forgets the listing id.
func (l *snapshots) drop(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept = slices.DeleteFunc(l.kept, func(s *snapshot) bool { return s.id == id })
}

func (l *snapshots) clear() {
	l.mu.Lock()
	l.kept = nil
	l.mu.Unlock()
}
