// Package sessionindex keeps the list of the packages a user opened through
// `spbridge serve` — each with its title, working folder and last change —
// in one file in the state folder, changed atomically under a lock so that
// several spbridge processes may share it.
package sessionindex

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rivo/uniseg"

	"spbridge/internal/regfile"
	"spbridge/internal/statefile"
)

// File is the index's name in the state folder; lockName is the file whose
// lock serialises its changes.
const (
	File     = "sessions-index.json"
	lockName = "sessions-index.lock"
)

// Limits.
const (
	// TitleLen is how many characters (grapheme clusters) a title keeps.
	TitleLen = 120
	// MaxEntries is how many packages the index keeps; the least recently
	// updated go first.
	MaxEntries = 10000
	// DefaultPageSize is List's page size when asked for none.
	DefaultPageSize = 25
	// maxFile bounds what is read of the index.
	maxFile = 64 << 20
)

// ErrBadCursor is the error of a cursor List did not give.
var ErrBadCursor = errors.New("sessionindex: invalid cursor")

// Entry is one package in the index.
type Entry struct {
	// Package is the package's absolute, clean path: the key.
	Package string `json:"package"`
	// Cwd is the working folder the editor gave when it opened it.
	Cwd string `json:"cwd"`
	// AdditionalDirectories are the further folders the editor gave the
	// session when it last opened it (ACP's additionalDirectories), in its
	// order; none when it gave none.
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	// Title is the conversation's first user message, cut (Title); "" until
	// the first turn.
	Title string `json:"title,omitempty"`
	// UpdatedAt is when it was last opened or had a turn.
	UpdatedAt time.Time `json:"updatedAt"`
	// SessionID is the session's id where it is not the package's path:
	// the id of the CLI's own session the package was imported from, under
	// which the editor listed it and opens it again.
	SessionID string `json:"sessionId,omitempty"`
	// Backend and CLISession name that CLI's session ("" when the package
	// was not imported).
	Backend    string `json:"backend,omitempty"`
	CLISession string `json:"cliSession,omitempty"`
	// Ran are the CLI sessions the package's turns ran on, "BACKEND:ID",
	// the last last (at most maxRan): a CLI's own list of its sessions
	// shows them, and they are the package's.
	Ran []string `json:"ran,omitempty"`
	// Hidden marks a session forgotten from the list whose files are not
	// spbridge's to remove (a CLI's own): its entry only remembers its
	// SessionID, under a Package path of the index's own that is never
	// there.
	Hidden bool `json:"hidden,omitempty"`
}

// maxRan bounds Entry.Ran.
const maxRan = 50

// ID is the entry's session id: SessionID, else the package's path.
func (e Entry) ID() string {
	if e.SessionID != "" {
		return e.SessionID
	}
	return e.Package
}

// Page is one page of List.
type Page struct {
	Entries []Entry
	// NextCursor gives the next page to List; "" on the last page.
	NextCursor string
}

// Index is the index in one state folder. Its methods may be called from
// several goroutines and processes at once: each change reads, changes
// and atomically replaces the file under an exclusive file lock.
type Index struct {
	dir string
	now func() time.Time
}

// New returns the index in the state folder dir (statedir.Dir()); the
// folder and file are made on the first change.
func New(dir string) *Index { return &Index{dir: dir, now: time.Now} }

// Dir is the state folder the index is in.
func (ix *Index) Dir() string { return ix.dir }

// Title makes a title of a message: its whitespace runs (newlines too)
// become single spaces, and past TitleLen grapheme clusters it is cut on a
// cluster boundary and ends with "…".
func Title(message string) string {
	s := strings.Join(strings.Fields(message), " ")
	g := uniseg.NewGraphemes(s)
	n := 0
	for g.Next() {
		n++
		if n > TitleLen {
			from, _ := g.Positions()
			return strings.TrimRight(s[:from], " ") + "…"
		}
	}
	return s
}

// Touch records that pkg was opened from the working folder cwd with the
// additional folders dirs, now: a new entry without a title, or the
// entry's cwd, folders and UpdatedAt changed. dirs replace the entry's
// whole list; none clears it.
func (ix *Index) Touch(pkg, cwd string, dirs []string) error {
	var list []string
	for _, d := range dirs {
		if d = cleanOrEmpty(d); d != "" {
			list = append(list, d)
		}
	}
	return ix.change(pkg, func(e *Entry) {
		e.Cwd = cleanOrEmpty(cwd)
		e.AdditionalDirectories = list
	})
}

// Record records a turn of pkg, now: message is the user's message of the
// turn, which becomes the title (Title) when the entry has none. cwd, when
// not "", replaces the entry's.
func (ix *Index) Record(pkg, cwd, message string) error {
	return ix.change(pkg, func(e *Entry) {
		if cwd != "" {
			e.Cwd = cleanOrEmpty(cwd)
		}
		if e.Title == "" {
			e.Title = Title(message)
		}
	})
}

// SetTitle sets pkg's title (Title(title)) whatever it was, as when the
// conversation was started anew; "" clears it, so that the next Record
// sets it again. It does nothing to a package not in the index.
func (ix *Index) SetTitle(pkg, title string) error {
	pkg, err := key(pkg)
	if err != nil {
		return err
	}
	return ix.update(func(list []Entry) []Entry {
		if i := slices.IndexFunc(list, func(e Entry) bool { return e.Package == pkg }); i >= 0 {
			list[i].Title = Title(title)
		}
		return list
	})
}

// Imported records that pkg holds the CLI session cliSession of backend,
// imported under the session id sessionID, now.
func (ix *Index) Imported(pkg, cwd, sessionID, backend, cliSession, title string) error {
	return ix.change(pkg, func(e *Entry) {
		e.Cwd = cleanOrEmpty(cwd)
		e.SessionID, e.Backend, e.CLISession = sessionID, backend, cliSession
		if e.Title == "" {
			e.Title = Title(title)
		}
	})
}

// Ran records that a turn of pkg ran on the CLI session id of backend.
func (ix *Index) Ran(pkg, backend, id string) error {
	s := backend + ":" + id
	return ix.change(pkg, func(e *Entry) {
		e.Ran = append(slices.DeleteFunc(e.Ran, func(r string) bool { return r == s }), s)
		if len(e.Ran) > maxRan {
			e.Ran = e.Ran[len(e.Ran)-maxRan:]
		}
	})
}

// Hide remembers that the session sessionID (a CLI's own, "BACKEND:ID")
// is forgotten: Hidden reports it.
func (ix *Index) Hide(sessionID string) error {
	pkg := filepath.Join(ix.dir, "hidden", url.PathEscape(sessionID))
	return ix.change(pkg, func(e *Entry) {
		e.SessionID, e.Hidden = sessionID, true
	})
}

// Hidden are the session ids Hide forgot.
func (ix *Index) Hidden() (map[string]bool, error) {
	list, err := ix.read()
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, e := range list {
		if e.Hidden {
			ids[e.SessionID] = true
		}
	}
	return ids, nil
}

// Session returns the entry whose session id (Entry.ID) is id, and
// whether there is one.
func (ix *Index) Session(id string) (Entry, bool, error) {
	list, err := ix.read()
	if err != nil {
		return Entry{}, false, err
	}
	i := slices.IndexFunc(list, func(e Entry) bool { return e.SessionID != "" && e.SessionID == id && !e.Hidden })
	if i < 0 {
		return Entry{}, false, nil
	}
	return list[i], true, nil
}

// Remove takes pkg out of the index; a package not in it is no error.
func (ix *Index) Remove(pkg string) error {
	pkg, err := key(pkg)
	if err != nil {
		return err
	}
	return ix.update(func(list []Entry) []Entry {
		return slices.DeleteFunc(list, func(e Entry) bool { return e.Package == pkg })
	})
}

// Get returns pkg's entry, and whether there is one.
func (ix *Index) Get(pkg string) (Entry, bool, error) {
	pkg, err := key(pkg)
	if err != nil {
		return Entry{}, false, err
	}
	list, err := ix.read()
	if err != nil {
		return Entry{}, false, err
	}
	i := slices.IndexFunc(list, func(e Entry) bool { return e.Package == pkg })
	if i < 0 {
		return Entry{}, false, nil
	}
	return list[i], true, nil
}

// List returns a page of the entries, the most recently updated first
// (ties by package path): only those whose Cwd is cwd when cwd is not ""
// and that keep accepts when keep is not nil (Present leaves out the
// packages that are gone), at most pageSize (DefaultPageSize when <= 0),
// starting after cursor ("" for the first page). An entry left out takes
// no room on a page, so a page is empty only when nothing follows, and
// NextCursor is set only when an entry follows the page. The cursor is
// opaque; it names a place in that order, so entries changed between pages
// are neither repeated nor skipped unless they moved across it. A cursor
// List did not give is ErrBadCursor. A missing index is an empty one; an
// index that cannot be read as one is too (the next change replaces it).
func (ix *Index) List(cwd, cursor string, pageSize int, keep func(Entry) bool) (Page, error) {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	var after *Entry
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return Page{}, err
		}
		after = &c
	}
	list, err := ix.read()
	if err != nil {
		return Page{}, err
	}
	cwd = cleanOrEmpty(cwd)
	var page Page
	for _, e := range list {
		if cwd != "" && e.Cwd != cwd {
			continue
		}
		if after != nil && compare(e, *after) <= 0 {
			continue
		}
		if keep != nil && !keep(e) {
			continue
		}
		if len(page.Entries) == pageSize {
			last := page.Entries[len(page.Entries)-1]
			page.NextCursor = encodeCursor(last)
			break
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// Present reports whether e's package is still there (its path can be
// stat'ed): List's keep for a list of packages one can open.
func Present(e Entry) bool {
	_, err := os.Stat(e.Package)
	return err == nil
}

// compare orders entries: the most recently updated first, then by path.
func compare(a, b Entry) int {
	if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.Package, b.Package)
}

type cursor struct {
	UpdatedAt time.Time `json:"u"`
	Package   string    `json:"p"`
}

func encodeCursor(e Entry) string {
	data, _ := json.Marshal(cursor{e.UpdatedAt, e.Package})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeCursor(s string) (Entry, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Entry{}, ErrBadCursor
	}
	var c cursor
	if err := json.Unmarshal(data, &c); err != nil || c.Package == "" {
		return Entry{}, ErrBadCursor
	}
	return Entry{Package: c.Package, UpdatedAt: c.UpdatedAt}, nil
}

// key is a package's path as the index keys it: absolute and clean.
func key(pkg string) (string, error) {
	if pkg == "" {
		return "", errors.New("sessionindex: empty package path")
	}
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return "", fmt.Errorf("sessionindex: %w", err)
	}
	return abs, nil
}

func cleanOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Clean(p)
}

// change updates pkg's entry with fn, making it when missing, and sets its
// UpdatedAt to now.
func (ix *Index) change(pkg string, fn func(*Entry)) error {
	pkg, err := key(pkg)
	if err != nil {
		return err
	}
	now := ix.now().UTC().Truncate(time.Millisecond)
	return ix.update(func(list []Entry) []Entry {
		i := slices.IndexFunc(list, func(e Entry) bool { return e.Package == pkg })
		if i < 0 {
			list = append(list, Entry{Package: pkg})
			i = len(list) - 1
		}
		fn(&list[i])
		list[i].UpdatedAt = now
		return list
	})
}

// file is the index file's form.
type file struct {
	Version  int     `json:"version"`
	Sessions []Entry `json:"sessions"`
}

// read returns the entries in List's order. An entry that cannot be read
// (a field of the wrong type, no package) is left out, alone: the next
// change writes the others back without it.
func (ix *Index) read() ([]Entry, error) {
	f, err := regfile.Open(filepath.Join(ix.dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session index: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("session index: %w", err)
	}
	var v struct {
		Version  int               `json:"version"`
		Sessions []json.RawMessage `json:"sessions"`
	}
	if len(data) > maxFile || json.Unmarshal(data, &v) != nil || v.Version != 1 {
		return nil, nil // unreadable: as empty, replaced by the next change
	}
	list := make([]Entry, 0, len(v.Sessions))
	for _, raw := range v.Sessions {
		var e Entry
		if json.Unmarshal(raw, &e) == nil && e.Package != "" {
			list = append(list, e)
		}
	}
	slices.SortFunc(list, compare)
	return list, nil
}

// update changes the entries with fn under the lock and writes them back
// atomically.
func (ix *Index) update(fn func([]Entry) []Entry) error {
	return ix.withLock(func() error {
		list, err := ix.read()
		if err != nil {
			return err
		}
		list = fn(list)
		slices.SortFunc(list, compare)
		if len(list) > MaxEntries {
			list = list[:MaxEntries]
		}
		if list == nil {
			list = []Entry{}
		}
		data, err := json.MarshalIndent(file{Version: 1, Sessions: list}, "", "  ")
		if err != nil {
			return err
		}
		if err := statefile.WriteAtomic(filepath.Join(ix.dir, File), append(data, '\n')); err != nil {
			return fmt.Errorf("session index: %w", err)
		}
		return nil
	})
}

// withLock runs fn holding the index's lock.
func (ix *Index) withLock(fn func() error) error {
	return statefile.WithLock(filepath.Join(ix.dir, lockName), fn)
}
