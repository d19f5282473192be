// Package history is the generic part of reading the coding-agent CLIs'
// own stores of past sessions: listing them (newest first, in pages with
// opaque cursors, one folder's or every folder's, through a HeadCache),
// finding one by its id, and importing one into a format-1 conversation.
// It only ever reads those files, and names no CLI: each CLI's package
// exports its Store (where its files are, how one is summarised from its
// head and tail, how its format is told, how a line of it is imported),
// and the callers pass the stores of the table of CLIs (internal/clis).
//
// Listing reads only the head and the tail of each file (HeadLines,
// TailLines), so a store of thousands of sessions, some of hundreds of
// megabytes, lists quickly; with a HeadCache, only those of the files
// that changed since the last listing.
// Import streams the file a line at a time (LineReader) through the
// store's Importer, which feeds the same mappers live turns use
// (internal/itemmap), so memory stays near the size of the conversation
// it makes.
package history

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"spbridge/internal/itemmap"
)

// Store is one CLI's store of past sessions: everything the listing, Find
// and Import need of it. A CLI's package exports its store; a Store holds
// no state of its own and is safe for concurrent use.
type Store interface {
	// Name is the CLI's name, as Entry.Backend, Options.Backend and a
	// session's _meta say it.
	Name() string
	// Display names the CLI in messages ("no <Display> session ...").
	Display() string
	// Dir is the store's folder when Options.Dirs names none (from the
	// CLI's environment variable, else under the home folder); "" when
	// neither can be told.
	Dir() string
	// Where is the folder under dir the store's session files are in, as
	// a message names it.
	Where(dir string) string
	// Files are the files under dir that may be sessions (regular files,
	// never symbolic links), those of the working folder cwd only where
	// the store can tell them by their place (cwd "" every folder; the
	// listing checks each entry's folder all the same).
	Files(dir, cwd string) []File
	// FileID is the session id a file's name gives, "" when it gives
	// none: how Find picks the files to read.
	FileID(path string) string
	// Summarize reads the head and tail of f (HeadLines, TailLines): its
	// entry, false when it is not a session to list.
	Summarize(f File) (Entry, bool)
	// Sniff reports whether a line of a file's head (a JSON object) shows
	// the file is one of this store's.
	Sniff(line gjson.Result) bool
	// NewImporter maps one of the store's session files into a
	// conversation, a line at a time; what it reads of the file (its id,
	// folder, turns) it records in rep.
	NewImporter(newID itemmap.IDFunc, rep *Report) Importer
}

// TitleIndex is a Store that keeps titles it gave its sessions in a file
// of their own, beside the session files: a title of the index comes
// before the one the session file gives.
type TitleIndex interface {
	// TitleIndex is the index's file under dir, "" when there is none.
	TitleIndex(dir string) string
	// ReadTitles reads the index at path: the titles by session id (empty
	// when it cannot be read).
	ReadTitles(path string) map[string]string
}

// Entry is one session of a CLI's own store.
type Entry struct {
	Backend   string    // the store's Name
	ID        string    // the CLI's session id (or thread id)
	Cwd       string    // the working folder the session ran in, "" when not recorded
	Title     string    // the CLI's own title or summary, else the first user message; one line, cut
	UpdatedAt time.Time // when the file last changed
	Path      string    // the session file
	Size      int64     // its size in bytes
}

// Options says which stores to read and which sessions to list.
type Options struct {
	// Stores are the stores read, in the table's order.
	Stores []Store
	// Backend limits the listing to the store of that name ("" all).
	Backend string
	// Cwd limits it to sessions that ran in this folder ("" every
	// folder). It is made absolute and clean first.
	Cwd string
	// Dirs are the stores' folders by their names; a store not named (or
	// named with "") is read in its own Dir.
	Dirs map[string]string
	// Cache, when set, keeps what was read of each file, so that a
	// listing reads only the files that changed since the last.
	Cache *HeadCache
}

// Page is one page of a listing.
type Page struct {
	Entries []Entry
	// NextCursor, when not "", gives the next page to ListPage; it is ""
	// on the last page.
	NextCursor string
}

// File is a file of a store that may be a session, before it is read.
type File struct {
	Path string
	Mod  time.Time // its modification time
	Size int64
	Ino  uint64 // its inode, 0 where the system has none
}

// dir is the folder of store s the options name, else its own.
func (o Options) dir(s Store) string {
	if d := o.Dirs[s.Name()]; d != "" {
		return d
	}
	return s.Dir()
}

// stores are the stores o reads: the one o.Backend names, else all; an
// error names the choices when no store has that name.
func (o Options) stores() ([]Store, error) {
	if o.Backend == "" {
		return o.Stores, nil
	}
	for _, s := range o.Stores {
		if s.Name() == o.Backend {
			return []Store{s}, nil
		}
	}
	return nil, fmt.Errorf("unknown backend %q: %s", o.Backend, choices(o.Stores, Store.Name))
}

// choices says the stores' names (or another of their words) as a
// message wants them: "a, b or c".
func choices(stores []Store, word func(Store) string) string {
	var w []string
	for _, s := range stores {
		w = append(w, word(s))
	}
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
}

// List returns every session of the CLIs' stores that opts selects, newest
// first. A store that is missing lists nothing; a file that cannot be read,
// is not a regular file (a symbolic link is never followed), is only a
// subagent's, or holds no user message is left out.
func List(opts Options) ([]Entry, error) {
	p, err := ListPage(opts, "", 0)
	return p.Entries, err
}

// ListPage returns up to limit sessions (0: all) after cursor ("" from the
// newest), newest first, and the cursor of the page after it: set only
// when another session follows, so a page is empty only when nothing
// does. Only the files the page needs (and the next one) are read, past
// their modification times.
func ListPage(opts Options, cursor string, limit int) (Page, error) {
	stores, err := opts.stores()
	if err != nil {
		return Page{}, err
	}
	if opts.Cwd != "" {
		abs, err := filepath.Abs(opts.Cwd)
		if err != nil {
			return Page{}, err
		}
		opts.Cwd = abs
	}
	after, err := parseCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	cands := candidates(stores, func(s Store) []File { return s.Files(opts.dir(s), opts.Cwd) })
	slices.SortFunc(cands, func(a, b candidate) int { return a.compare(b) })
	var page Page
	s := opts.summarizer(stores)
	defer s.done()
	for _, c := range cands {
		if after != nil && c.compare(*after) <= 0 {
			continue
		}
		e, ok := s.summarize(c)
		if !ok || (opts.Cwd != "" && filepath.Clean(e.Cwd) != opts.Cwd) {
			continue
		}
		if limit > 0 && len(page.Entries) == limit {
			// Another entry follows: the page says so, and the next
			// begins after its last.
			last := page.Entries[len(page.Entries)-1]
			page.NextCursor = makeCursor(candidate{File: File{Path: last.Path, Mod: last.UpdatedAt}})
			break
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// candidate is a file of one of the stores read that may be a session.
type candidate struct {
	File
	store int // its store's index in the summarizer's stores
}

// candidates are the files of each of stores that files gives.
func candidates(stores []Store, files func(Store) []File) []candidate {
	each := make([][]File, len(stores))
	n := 0
	for i, s := range stores {
		each[i] = files(s)
		n += len(each[i])
	}
	out := make([]candidate, 0, n)
	for i, fs := range each {
		for _, f := range fs {
			out = append(out, candidate{File: f, store: i})
		}
	}
	return out
}

// summarizer reads the candidates of one listing, through opts.Cache
// when set.
type summarizer struct {
	opts   Options
	stores []Store
	titles map[int]map[string]string // the title indexes' titles, read once when needed
}

func (o Options) summarizer(stores []Store) *summarizer { return &summarizer{opts: o, stores: stores} }

// summarize is c's entry, false when it is not a session to list.
func (s *summarizer) summarize(c candidate) (Entry, bool) {
	hc := s.opts.Cache
	e, ok, cached := Entry{}, false, false
	st := s.stores[c.store]
	if hc != nil {
		e, ok, cached = hc.get(st.Name(), c.File)
	}
	if !cached {
		e, ok = st.Summarize(c.File)
		if hc != nil {
			hc.put(st.Name(), c.File, e, ok)
		}
	}
	if ti, isIndex := st.(TitleIndex); ok && isIndex {
		titles, read := s.titles[c.store]
		if !read {
			titles = s.readTitles(ti, s.opts.dir(st))
			if s.titles == nil {
				s.titles = map[int]map[string]string{}
			}
			s.titles[c.store] = titles
		}
		if t := titles[e.ID]; t != "" {
			e.Title = CutTitle(t)
		}
	}
	return e, ok
}

// readTitles are the titles of ti's index under dir, through the cache
// when set.
func (s *summarizer) readTitles(ti TitleIndex, dir string) map[string]string {
	path := ti.TitleIndex(dir)
	if path == "" {
		return nil
	}
	if s.opts.Cache != nil {
		return s.opts.Cache.titles(path, ti.ReadTitles)
	}
	return ti.ReadTitles(path)
}

// done keeps what the listing read.
func (s *summarizer) done() {
	if s.opts.Cache != nil {
		s.opts.Cache.save()
	}
}

// compare orders candidates newest first, then by path.
func (a candidate) compare(b candidate) int {
	if c := b.Mod.Compare(a.Mod); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}

// A cursor is the modification time and path of the last entry of a page,
// in base64 so that it is one opaque word.
func makeCursor(c candidate) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Mod.UnixNano(), 10) + "\n" + c.Path))
}

func parseCursor(s string) (*candidate, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("invalid cursor")
	}
	ns, path, ok := strings.Cut(string(raw), "\n")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return nil, errors.New("invalid cursor")
	}
	return &candidate{File: File{Path: path, Mod: time.Unix(0, n)}}, nil
}

// RegularFiles returns the regular files directly in dir whose names
// match keep; symbolic links and folders are left out. A folder that
// cannot be read gives none.
func RegularFiles(dir string, keep func(name string) bool) []File {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []File
	for _, de := range ents {
		if !de.Type().IsRegular() || !keep(de.Name()) {
			continue
		}
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, File{Path: filepath.Join(dir, de.Name()), Mod: fi.ModTime(), Size: fi.Size(), Ino: inode(fi)})
	}
	return out
}

// Subdirs returns the folders directly in dir (not symbolic links), sorted.
func Subdirs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range ents {
		if de.Type()&fs.ModeType == fs.ModeDir {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	return out
}

// Find returns the session of the stores opts names whose id is id (of
// every store unless opts.Backend says which); opts.Cwd is not used. Of
// several files of one id, the newest.
func Find(opts Options, id string) (Entry, error) {
	if id == "" || strings.ContainsAny(id, `/\*?[`) || id == "." || id == ".." {
		return Entry{}, fmt.Errorf("invalid session id %q", id)
	}
	stores, err := opts.stores()
	if err != nil {
		// A backend no store has looks in every store, as one not given.
		stores = opts.Stores
	}
	cands := candidates(stores, func(s Store) []File {
		return slices.DeleteFunc(s.Files(opts.dir(s), ""), func(f File) bool { return s.FileID(f.Path) != id })
	})
	slices.SortFunc(cands, func(a, b candidate) int { return a.compare(b) })
	s := opts.summarizer(stores)
	defer s.done()
	for _, c := range cands {
		if e, ok := s.summarize(c); ok {
			return e, nil
		}
	}
	var where []string
	for _, s := range stores {
		where = append(where, s.Where(opts.dir(s)))
	}
	return Entry{}, fmt.Errorf("no %s session %s (looked in %s)", choices(stores, Store.Display), id, strings.Join(where, " and "))
}

// maxTitle is how many characters of a title are kept.
const maxTitle = 80

// CutTitle is s as one line of at most 80 characters: its whitespace runs
// made single spaces, cut with "…".
func CutTitle(s string) string {
	if len(s) > 16*maxTitle {
		s = strings.ToValidUTF8(s[:16*maxTitle], "")
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxTitle {
		return s
	}
	n := 0
	for i := range s {
		if n == maxTitle-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}
