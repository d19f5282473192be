// Package search is the full-text index of a user's conversations: the
// packages opened through serve and the CLIs' own sessions, kept in one
// SQLite database in the state folder (FTS5, through a pure-Go driver),
// brought up to date at each search by comparing what each conversation's
// files are now (size and modification time) with what was indexed, and
// ranked by BM25 with the matching lines shown in context. The index is a
// cache: a missing, damaged or foreign one is made again from the
// conversations, never an error, and nothing in it is needed to read a
// conversation.
package search

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// FileName is the index's file in the state folder. Its name holds the
// layout's version: a spbridge with another layout keeps its index in
// another file, and neither touches the other's.
const FileName = "search-1.db"

// layout is the database's user_version for this layout.
const layout = 1

// Kinds of conversation.
const (
	KindPackage = "package" // a package the sessions index keeps
	KindCLI     = "cli"     // a session a CLI keeps itself
)

// Index is the search index in one state folder. It is safe for use by
// several goroutines and processes at once (SQLite's locking).
type Index struct {
	path string
	db   *sql.DB
}

// Open opens the index in the state folder dir, making the folder and the
// index when missing. An index that cannot be read as one of this layout
// (damaged, cut short, not a database, of another layout) is removed and
// made anew.
func Open(dir string) (*Index, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	ix := &Index{path: filepath.Join(dir, FileName)}
	if err := ix.open(); err != nil {
		if !damaged(err) {
			return nil, err
		}
		if err := ix.reset(); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// Path is the index's file.
func (ix *Index) Path() string { return ix.path }

// Close closes the database.
func (ix *Index) Close() error {
	if ix.db == nil {
		return nil
	}
	return ix.db.Close()
}

const schema = `
CREATE TABLE IF NOT EXISTS docs(
	id INTEGER PRIMARY KEY,
	key TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	ref TEXT NOT NULL,
	cwd TEXT NOT NULL,
	title TEXT NOT NULL,
	updated INTEGER NOT NULL,
	stamp TEXT NOT NULL,
	size INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_kind_cwd ON docs(kind, cwd);
CREATE TABLE IF NOT EXISTS texts(id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, body, content='', contentless_delete=1,
	tokenize='unicode61 remove_diacritics 2');
`

// open opens the database and checks (or makes) its layout.
func (ix *Index) open() error {
	// WAL: a search reads while another process updates. busy_timeout:
	// a writer waits for another's transaction (they are short) rather
	// than failing.
	dsn := "file:" + filepath.ToSlash(ix.path) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	db.SetMaxOpenConns(4)
	ix.db = db
	if err := ix.check(); err != nil {
		db.Close()
		ix.db = nil
		return err
	}
	return nil
}

// check reads the layout's version: 0 on a new database, which is given
// the tables; any other than layout is errForeign.
func (ix *Index) check() error {
	var v int
	if err := ix.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	switch v {
	case layout:
		var n int
		if err := ix.db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name IN ('docs','texts','fts')").Scan(&n); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		if n != 3 {
			return errForeign
		}
		return nil
	case 0:
		var n int
		if err := ix.db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		if n != 0 {
			return errForeign
		}
		if _, err := ix.db.Exec(schema + fmt.Sprintf("PRAGMA user_version=%d;", layout)); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		return nil
	default:
		return errForeign
	}
}

var errForeign = errors.New("search index: not an index of this layout")

// damaged reports whether err says the database cannot be read as an index:
// corrupt, not a database, cut short, or foreign.
func damaged(err error) bool {
	if errors.Is(err, errForeign) || errors.Is(err, errBadText) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT, sqlite3.SQLITE_SCHEMA:
			return true
		}
	}
	// FTS5 reports some damage of its own tables as a plain error.
	return err != nil && strings.Contains(err.Error(), "malformed")
}

// reset removes the index's files and makes an empty index.
func (ix *Index) reset() error {
	if ix.db != nil {
		ix.db.Close()
		ix.db = nil
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(ix.path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("search index: remove the damaged index: %w", err)
		}
	}
	return ix.open()
}

// Rebuild empties the index: the next Update indexes every conversation
// it is given again.
func (ix *Index) Rebuild() error { return ix.reset() }

// Source is one conversation the index may hold, as its owner sees it now.
type Source struct {
	Key   string // unique in the index: the kind, and its package or file
	Kind  string
	Ref   string // what opens it: a package's path, or a CLI session's "CLI:ID"
	Cwd   string // the folder it ran in
	Title string
	// Updated is when it last changed (ties of the ranking: the newest
	// first).
	Updated time.Time
	// Stamp tells whether it changed since it was indexed: anything that
	// changes when its text may have (its files' sizes and modification
	// times, its title).
	Stamp string
	// Load reads its text, and how many bytes of files that took.
	Load func() ([]Segment, int64, error)
}

// Set is the conversations of one kind (and one folder, when Cwd is not
// "") as they are now: an Update indexes the new and changed ones and
// forgets those of that kind and folder that are no longer listed.
type Set struct {
	Kind string
	Cwd  string
	List func() ([]Source, error)
}

// Stats says what an Update did.
type Stats struct {
	Listed, Indexed, Removed int
	Read                     int64 // bytes of conversation files read
	Failed                   int   // conversations that could not be read (indexed with their title alone)
}

// batch bounds a write transaction: this many conversations, or this
// many bytes of text, so a killed first build keeps what it had written
// and another process's search waits little.
const (
	batchDocs  = 64
	batchBytes = 64 << 20
)

// Update brings the index up to date with the set: a conversation whose
// stamp changed (or that is new) is read and indexed again, one no longer
// listed is removed. It reads only the files of those that changed.
// progress, when not nil, is told how many are to be read before they are.
func (ix *Index) Update(ctx context.Context, set Set, progress func(n int)) (Stats, error) {
	var st Stats
	sources, err := set.List()
	if err != nil {
		return st, err
	}
	st.Listed = len(sources)
	known, err := ix.stamps(set.Kind, set.Cwd)
	if err != nil {
		return st, err
	}
	var todo []Source
	listed := make(map[string]bool, len(sources))
	for _, s := range sources {
		listed[s.Key] = true
		if k, ok := known[s.Key]; !ok || k.stamp != s.Stamp {
			todo = append(todo, s)
		}
	}
	var gone []int64
	for key, k := range known {
		if !listed[key] {
			gone = append(gone, k.id)
		}
	}
	if progress != nil && len(todo) > 0 {
		progress(len(todo))
	}
	var pending []doc
	size := 0
	flush := func() error {
		if len(pending) == 0 && len(gone) == 0 {
			return nil
		}
		if err := ix.write(pending, gone); err != nil {
			return err
		}
		st.Removed += len(gone)
		st.Indexed += len(pending)
		pending, gone, size = pending[:0], nil, 0
		return nil
	}
	for _, s := range todo {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		segs, n, err := s.Load()
		st.Read += n
		if err != nil {
			st.Failed++
			segs = nil
		}
		d := doc{Source: s, body: body(segs)}
		if d.text, err = encodeSegments(segs); err != nil {
			return st, err
		}
		pending = append(pending, d)
		size += len(d.body)
		if len(pending) >= batchDocs || size >= batchBytes {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	return st, flush()
}

type known struct {
	id    int64
	stamp string
}

// stamps are the stamps of the conversations indexed of kind (of the
// folder cwd when not "").
func (ix *Index) stamps(kind, cwd string) (map[string]known, error) {
	q, args := "SELECT key, id, stamp FROM docs WHERE kind = ?", []any{kind}
	if cwd != "" {
		q += " AND cwd = ?"
		args = append(args, cwd)
	}
	rows, err := ix.db.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	defer rows.Close()
	out := map[string]known{}
	for rows.Next() {
		var key string
		var k known
		if err := rows.Scan(&key, &k.id, &k.stamp); err != nil {
			return nil, fmt.Errorf("search index: %w", err)
		}
		out[key] = k
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	return out, nil
}

// doc is a conversation read, to be written.
type doc struct {
	Source
	body string
	text []byte
}

// write indexes docs (replacing what was indexed of each) and removes the
// conversations gone, in one transaction.
func (ix *Index) write(docs []doc, gone []int64) error {
	tx, err := ix.db.Begin()
	if err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	defer tx.Rollback()
	remove := func(id int64) error {
		for _, q := range []string{"DELETE FROM fts WHERE rowid = ?", "DELETE FROM texts WHERE id = ?", "DELETE FROM docs WHERE id = ?"} {
			if _, err := tx.Exec(q, id); err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range gone {
		if err := remove(id); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	for _, d := range docs {
		var id int64
		switch err := tx.QueryRow("SELECT id FROM docs WHERE key = ?", d.Key).Scan(&id); {
		case err == nil:
			if err := remove(id); err != nil {
				return fmt.Errorf("search index: %w", err)
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("search index: %w", err)
		}
		res, err := tx.Exec("INSERT INTO docs(key, kind, ref, cwd, title, updated, stamp, size) VALUES (?,?,?,?,?,?,?,?)",
			d.Key, d.Kind, d.Ref, d.Cwd, d.Title, d.Updated.UnixNano(), d.Stamp, len(d.body))
		if err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		if _, err := tx.Exec("INSERT INTO texts(id, data) VALUES (?, ?)", id, d.text); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		if _, err := tx.Exec("INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)", id, d.Title, d.body); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	return nil
}

// Hit is a conversation that matched, best first.
type Hit struct {
	Kind, Ref, Cwd, Title string
	Updated               time.Time
	// Score is its BM25 rank: lower is better.
	Score    float64
	Snippets []Snippet
	key      string
}

// Search returns the conversations of the kinds given (of the folder cwd
// when not "") that hold every term of q, best first: by BM25 over their
// title and text (a word in the title counts as much as three in the
// text), then the most recently updated. The hits have no snippets yet
// (Snippets).
func (ix *Index) Search(q Query, kinds []string, cwd string) ([]Hit, error) {
	if len(q.Terms) == 0 {
		return nil, ErrEmptyQuery
	}
	sqlq := `SELECT d.key, d.kind, d.ref, d.cwd, d.title, d.updated, bm25(fts, 3.0, 1.0) AS score
		FROM fts JOIN docs d ON d.id = fts.rowid WHERE fts MATCH ?`
	args := []any{q.fts()}
	if len(kinds) > 0 {
		sqlq += " AND d.kind IN (" + strings.TrimSuffix(strings.Repeat("?,", len(kinds)), ",") + ")"
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	if cwd != "" {
		sqlq += " AND d.cwd = ?"
		args = append(args, cwd)
	}
	sqlq += " ORDER BY score, d.updated DESC, d.key"
	rows, err := ix.db.Query(sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	defer rows.Close()
	var out []Hit
	for rows.Next() {
		var h Hit
		var updated int64
		if err := rows.Scan(&h.key, &h.Kind, &h.Ref, &h.Cwd, &h.Title, &updated, &h.Score); err != nil {
			return nil, fmt.Errorf("search index: %w", err)
		}
		h.Updated = time.Unix(0, updated)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	return out, nil
}

// Snippets sets h.Snippets: the lines of its text that match q best (at
// most MaxSnippets), else, when the match is in its title alone, none.
func (ix *Index) Snippets(h *Hit, q Query) error {
	var data []byte
	if err := ix.db.QueryRow("SELECT t.data FROM docs d JOIN texts t ON t.id = d.id WHERE d.key = ?", h.key).Scan(&data); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("search index: %w", err)
	}
	// The segments are read as the snippets need them: a word found
	// early needs only the start of a conversation decompressed.
	sn := snipper{q: q, n: MaxSnippets}
	if err := readSegments(data, sn.add); err != nil {
		return err
	}
	h.Snippets = sn.result()
	return nil
}

// Size is the bytes the index's files take.
func (ix *Index) Size() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(ix.path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}
