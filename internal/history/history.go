// Package history reads the coding-agent CLIs' own stores of past sessions
// — Claude Code's session files and the Codex CLI's rollouts — to list
// them and to import one into a format-1 conversation. It only ever reads
// those files.
//
// Where they are:
//
//   - Claude Code: $CLAUDE_CONFIG_DIR (else ~/.claude) /projects/<folder>/
//     <session id>.jsonl, where <folder> is the session's working folder
//     with every character that is not an ASCII letter or digit turned into
//     "-". A session's subagents are in <session id>/subagents/, and are
//     not sessions of their own.
//   - Codex: $CODEX_HOME (else ~/.codex) /sessions/YYYY/MM/DD/
//     rollout-<time>-<thread id>.jsonl; the first line (session_meta)
//     names the working folder.
//
// Listing reads only the head and the tail of each file, so a store of
// thousands of sessions, some of hundreds of megabytes, lists quickly;
// with a HeadCache, only those of the files that changed since the last
// listing.
// Import streams the file a line at a time through the same mappers live
// turns use (internal/itemmap), so memory stays near the size of the
// conversation it makes.
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
)

// The CLIs whose stores are read.
const (
	Claude = "claude"
	Codex  = "codex"
)

// Entry is one session of a CLI's own store.
type Entry struct {
	Backend   string    // Claude or Codex
	ID        string    // the CLI's session id (Claude's) or thread id (Codex's)
	Cwd       string    // the working folder the session ran in, "" when not recorded
	Title     string    // the CLI's own title or summary, else the first user message; one line, cut
	UpdatedAt time.Time // when the file last changed
	Path      string    // the session file
	Size      int64     // its size in bytes
}

// Options says which stores to read and which sessions to list.
type Options struct {
	// Backend limits the listing to one CLI ("" both).
	Backend string
	// Cwd limits it to sessions that ran in this folder ("" every
	// folder). It is made absolute and clean first.
	Cwd string
	// ClaudeDir is Claude Code's config folder; "" means
	// $CLAUDE_CONFIG_DIR, else ~/.claude.
	ClaudeDir string
	// CodexHome is the Codex CLI's home; "" means $CODEX_HOME, else
	// ~/.codex.
	CodexHome string
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

// ClaudeConfigDir is where Claude Code keeps its state: $CLAUDE_CONFIG_DIR,
// else ~/.claude; "" when neither can be told.
func ClaudeConfigDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".claude")
}

// CodexHomeDir is where the Codex CLI keeps its state: $CODEX_HOME, else
// ~/.codex; "" when neither can be told.
func CodexHomeDir() string {
	if d := os.Getenv("CODEX_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".codex")
}

func (o Options) claudeDir() string {
	if o.ClaudeDir != "" {
		return o.ClaudeDir
	}
	return ClaudeConfigDir()
}

func (o Options) codexHome() string {
	if o.CodexHome != "" {
		return o.CodexHome
	}
	return CodexHomeDir()
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
	if opts.Backend != "" && opts.Backend != Claude && opts.Backend != Codex {
		return Page{}, fmt.Errorf("unknown backend %q: claude or codex", opts.Backend)
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
	var cands []candidate
	if opts.Backend != Codex {
		cands = append(cands, claudeCandidates(opts.claudeDir(), opts.Cwd)...)
	}
	if opts.Backend != Claude {
		cands = append(cands, codexCandidates(opts.codexHome())...)
	}
	slices.SortFunc(cands, func(a, b candidate) int { return a.compare(b) })
	var page Page
	s := opts.summarizer()
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
			page.NextCursor = makeCursor(candidate{path: last.Path, mod: last.UpdatedAt})
			break
		}
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// candidate is a file that may be a session, before it is read.
type candidate struct {
	backend string
	path    string
	mod     time.Time
	size    int64
	ino     uint64 // 0 where the system has none
}

// summarizer reads the candidates of one listing, through opts.Cache
// when set.
type summarizer struct {
	opts   Options
	titles map[string]string // Codex's thread names, read once when needed
}

func (o Options) summarizer() *summarizer { return &summarizer{opts: o} }

// summarize is c's entry, false when it is not a session to list.
func (s *summarizer) summarize(c candidate) (Entry, bool) {
	hc := s.opts.Cache
	e, ok, cached := Entry{}, false, false
	if hc != nil {
		e, ok, cached = hc.get(c)
	}
	if !cached {
		switch c.backend {
		case Claude:
			e, ok = summarizeClaude(c)
		case Codex:
			e, ok = summarizeCodex(c)
		}
		if hc != nil {
			hc.put(c, e, ok)
		}
	}
	if ok && c.backend == Codex {
		if s.titles == nil {
			if hc != nil {
				s.titles = hc.threadNames(s.opts.codexHome())
			} else {
				s.titles = codexThreadNames(s.opts.codexHome())
			}
		}
		if t := s.titles[e.ID]; t != "" {
			e.Title = cutTitle(t)
		}
	}
	return e, ok
}

// done keeps what the listing read.
func (s *summarizer) done() {
	if s.opts.Cache != nil {
		s.opts.Cache.save()
	}
}

// compare orders candidates newest first, then by path.
func (a candidate) compare(b candidate) int {
	if c := b.mod.Compare(a.mod); c != 0 {
		return c
	}
	return strings.Compare(a.path, b.path)
}

// A cursor is the modification time and path of the last entry of a page,
// in base64 so that it is one opaque word.
func makeCursor(c candidate) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.mod.UnixNano(), 10) + "\n" + c.path))
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
	return &candidate{path: path, mod: time.Unix(0, n)}, nil
}

// regularFiles returns the regular files directly in dir whose names match
// keep, as candidates of backend; symbolic links and folders are left out.
// A folder that cannot be read gives none.
func regularFiles(backend, dir string, keep func(name string) bool) []candidate {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []candidate
	for _, de := range ents {
		if !de.Type().IsRegular() || !keep(de.Name()) {
			continue
		}
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		out = append(out, candidate{backend: backend, path: filepath.Join(dir, de.Name()), mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)})
	}
	return out
}

// subdirs returns the folders directly in dir (not symbolic links), sorted.
func subdirs(dir string) []string {
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

// Find returns the session of the stores opts names whose id is id (both
// CLIs unless opts.Backend says which); opts.Cwd is not used. Of several
// files of one id, the newest.
func Find(opts Options, id string) (Entry, error) {
	if id == "" || strings.ContainsAny(id, `/\*?[`) || id == "." || id == ".." {
		return Entry{}, fmt.Errorf("invalid session id %q", id)
	}
	var cands []candidate
	if opts.Backend != Codex {
		for _, c := range claudeCandidates(opts.claudeDir(), "") {
			if filepath.Base(c.path) == id+".jsonl" {
				cands = append(cands, c)
			}
		}
	}
	if opts.Backend != Claude {
		for _, c := range codexCandidates(opts.codexHome()) {
			if codexFileID(c.path) == id {
				cands = append(cands, c)
			}
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int { return a.compare(b) })
	s := opts.summarizer()
	defer s.done()
	for _, c := range cands {
		if e, ok := s.summarize(c); ok {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("no %s session %s (looked in %s)", backendWords(opts.Backend), id, storeWords(opts))
}

func backendWords(b string) string {
	switch b {
	case Claude:
		return "Claude Code"
	case Codex:
		return "Codex"
	}
	return "Claude Code or Codex"
}

func storeWords(o Options) string {
	var s []string
	if o.Backend != Codex {
		s = append(s, filepath.Join(o.claudeDir(), "projects"))
	}
	if o.Backend != Claude {
		s = append(s, filepath.Join(o.codexHome(), "sessions"))
	}
	return strings.Join(s, " and ")
}
