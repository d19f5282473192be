// Package trust decides whether a folder's own agent configuration may act
// (a CLI's project settings, hooks, MCP servers and the like). A folder is
// trusted when the user said so to spbridge (kept per folder in the state
// folder's trust.json), or when a CLI's own record trusts it. What a CLI
// would apply of a folder, and its own records, are the CLI's: each CLI's
// package supplies a CLI (its row's Trust), and trust names none; spbridge
// reads the CLIs' files and never writes them. A Folder carries one
// session's view of its folder: whether it is trusted, what it holds that
// would act, the user's answer when asked, and the notice, once, of what
// was left out.
package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"spbridge/internal/regfile"
	"spbridge/internal/statedir"
	"spbridge/internal/statefile"
)

// File is the trust store's name in the state folder; lockFile is the
// lock its writers take.
const (
	File     = "trust.json"
	lockFile = "trust.lock"
)

// maxStore bounds the trust store as read: a folder a line, it never
// comes near.
const maxStore = 16 << 20

// Record is the user's answer for one folder, as the store keeps it.
type Record struct {
	Trusted bool      `json:"trusted"` // false: the user said never
	At      time.Time `json:"at"`
}

// store is trust.json.
type store struct {
	Version int               `json:"version"`
	Folders map[string]Record `json:"folders"`
}

// Key is the name the store keeps dir under: its absolute, cleaned path,
// with links followed when it exists.
func Key(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return filepath.Clean(abs), nil
}

// Read returns the records of the store in the state folder state (none
// when it has no store yet).
func Read(state string) (map[string]Record, error) {
	path := filepath.Join(state, File)
	f, err := regfile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Record{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStore+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxStore {
		return nil, fmt.Errorf("%s is over %d MiB: not a trust store spbridge wrote; move it away", path, maxStore>>20)
	}
	var s store
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s is not readable (%v); move it away to start again", path, err)
	}
	if s.Folders == nil {
		s.Folders = map[string]Record{}
	}
	return s.Folders, nil
}

// update changes the store in state under its lock, written whole or not
// at all (statefile.WriteAtomic).
func update(state string, change func(map[string]Record) bool) error {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	return statefile.WithLock(filepath.Join(state, lockFile), func() error {
		folders, err := Read(state)
		if err != nil {
			return err
		}
		if !change(folders) {
			return nil
		}
		data, err := json.MarshalIndent(store{Version: 1, Folders: folders}, "", "  ")
		if err != nil {
			return err
		}
		return statefile.WriteAtomic(filepath.Join(state, File), append(data, '\n'))
	})
}

// Set keeps the user's answer for dir: trusted, or never.
func Set(state, dir string, trusted bool) error {
	key, err := Key(dir)
	if err != nil {
		return err
	}
	return update(state, func(f map[string]Record) bool {
		f[key] = Record{Trusted: trusted, At: time.Now().UTC().Truncate(time.Second)}
		return true
	})
}

// Remove forgets the user's answer for dir; false when there was none.
func Remove(state, dir string) (bool, error) {
	key, err := Key(dir)
	if err != nil {
		return false, err
	}
	found := false
	err = update(state, func(f map[string]Record) bool {
		_, found = f[key]
		delete(f, key)
		return found
	})
	return found, err
}

// Status is whether a folder is trusted, and by whom.
type Status struct {
	Dir     string // the folder (Key)
	Trusted bool
	Refused bool   // the user told spbridge never to trust it
	By      string // who trusts it, or refused it: BySpbridge, or a CLI's Who
	Record  string // the file that holds that answer
}

// BySpbridge is the By of the user's answer to spbridge.
const BySpbridge = "spbridge"

// A CLI is what trust weighs of one coding-agent CLI, supplied by the
// CLI's own package.
type CLI struct {
	Name string // the CLI's name (the backend's), as a Folder's methods take it
	Who  string // as its users know it: its record's By, the question's Who ("Claude Code")
	// Record is the file of the CLI's own record of the folders it
	// trusts, and those folders (each covers those below it; none when
	// the file is missing or unreadable), as the CLI runs with env.
	Record func(env []string) (file string, dirs []string)
	// Files is what in dir would act when the CLI runs there with the
	// folder's own configuration, absolute paths.
	Files func(dir string, env []string) []string
	// LeftOut says what of a folder's configuration is left out while it
	// is untrusted, and RunsWith what the CLI runs with instead, for the
	// notice ("hooks, MCP servers, …", "Claude Code runs with your own
	// settings only").
	LeftOut, RunsWith string
}

// Check says whether dir is trusted, for any of clis: spbridge's own
// record first (a "never" there stands whatever the CLIs say), then each
// CLI's own record in turn, each of which covers the folder it names and
// every folder below it. env is the CLIs' environment (nil: spbridge's
// own), which says where their configuration is. A store that cannot be
// read counts as no answer.
func Check(dir string, env []string, clis []CLI) Status {
	st := checkStore(dir)
	if st.By != "" {
		return st
	}
	last := Status{Dir: st.Dir}
	for _, c := range clis {
		if last = checkCLI(st.Dir, c, env); last.Trusted {
			return last
		}
	}
	return last
}

// checkStore is what spbridge's own record says of dir (By empty: none).
func checkStore(dir string) Status {
	key, err := Key(dir)
	if err != nil {
		key = dir
	}
	st := Status{Dir: key}
	if state, err := statedir.Dir(); err == nil {
		if folders, err := Read(state); err == nil {
			if r, ok := folders[key]; ok {
				st.By, st.Record = BySpbridge, filepath.Join(state, File)
				st.Trusted, st.Refused = r.Trusted, !r.Trusted
			}
		}
	}
	return st
}

// checkCLI is what cli's own record says of dir, a Key.
func checkCLI(dir string, cli CLI, env []string) Status {
	st := Status{Dir: dir}
	if cli.Record == nil {
		return st
	}
	if file, dirs := cli.Record(env); covered(dir, dirs) {
		st.Trusted, st.By, st.Record = true, cli.Who, file
	}
	return st
}

// Answer is the user's answer to "trust this folder?".
type Answer int

const (
	NotNow      Answer = iota // untrusted for this session; asked again in the next
	TrustOnce                 // trusted for this session only
	TrustAlways               // trusted, kept in the store
	Never                     // untrusted, kept in the store: never asked again
)

// Question is what the user is asked about a folder: the folder, what it
// holds that would act (absolute paths), and the CLI that would apply it
// (its Who).
type Question struct {
	Dir   string
	Files []string
	Who   string
}

// Folder is one session's view of the trust of the folder its CLI runs
// in: spbridge's own answer (one for every CLI), each CLI's own record
// (which counts for that CLI's sessions), and what the folder holds that
// each CLI would apply. Its methods are safe for concurrent use, and a nil
// Folder is untrusted and holds nothing.
type Folder struct {
	Dir string // the folder (Key)

	clis    map[string]CLI      // by name: the CLIs weighed
	files   map[string][]string // by CLI: what the folder holds that would act, absolute paths
	mu      sync.Mutex
	status  Status            // spbridge's own record (By empty: none)
	cli     map[string]Status // by CLI: its own record
	asked   bool              // the user was asked in this session (or answered by flag)
	noticed map[string]bool   // by CLI: the notice of what was left out was given
	once    bool              // trusted for this session only
}

// Open returns the view of dir for a session whose CLI, one of clis, runs
// with env (nil: spbridge's own environment).
func Open(dir string, env []string, clis []CLI) *Folder {
	st := checkStore(dir)
	f := &Folder{Dir: st.Dir, status: st, noticed: map[string]bool{},
		clis: map[string]CLI{}, cli: map[string]Status{}, files: map[string][]string{}}
	for _, c := range clis {
		f.clis[c.Name] = c
		f.cli[c.Name] = checkCLI(st.Dir, c, env)
		if c.Files != nil {
			f.files[c.Name] = c.Files(st.Dir, env)
		}
	}
	return f
}

// Files is what the folder holds that cli would apply.
func (f *Folder) Files(cli string) []string {
	if f == nil {
		return nil
	}
	return f.files[cli]
}

// Trusted reports whether the folder's own configuration may act in a
// session on cli: spbridge's answer says so (or, without one, cli's own
// record does), or the user trusted it for this session.
func (f *Folder) Trusted(cli string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.trustedLocked(cli)
}

func (f *Folder) trustedLocked(cli string) bool {
	if f.once || f.status.By != "" {
		return f.once || f.status.Trusted
	}
	return f.cli[cli].Trusted
}

// Ask returns the question to ask the user now, for a session on cli:
// the folder is not trusted, holds something cli would apply, was not
// refused for good, and was not asked in this session. It is given once:
// a caller that gets it asks, and gives Answer the answer (NotNow without
// one). An answer given since the session opened (another session's, or
// spbridge trust) is taken instead of asking.
func (f *Folder) Ask(cli string) (Question, bool) {
	if f == nil {
		return Question{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked || f.trustedLocked(cli) || f.status.Refused || len(f.files[cli]) == 0 {
		return Question{}, false
	}
	f.asked = true
	if st := checkStore(f.Dir); st.By != "" {
		f.status = st
		return Question{}, false
	}
	return Question{Dir: f.Dir, Files: f.files[cli], Who: f.clis[cli].Who}, true
}

// Answer takes the user's answer: TrustAlways and Never are kept in the
// store (an error there leaves the answer for this session only).
func (f *Folder) Answer(a Answer) error {
	f.mu.Lock()
	f.asked = true
	switch a {
	case TrustOnce:
		f.once = true
	case TrustAlways, Never:
		// The answer holds for this session whatever happens to the
		// store.
		trusted := a == TrustAlways
		f.once = trusted
		f.status = Status{Dir: f.Dir, Trusted: trusted, Refused: !trusted, By: BySpbridge}
		state, err := statedir.Dir()
		if err == nil {
			f.status.Record = filepath.Join(state, File)
		}
		f.mu.Unlock()
		if err == nil { // the store is written with no lock of f held
			err = Set(state, f.Dir, trusted)
		}
		if err != nil {
			return fmt.Errorf("keep the answer for %s: %w", f.Dir, err)
		}
		return nil
	}
	f.mu.Unlock()
	return nil
}

// Notice returns, once a session for each CLI, what spbridge left out of
// an untrusted folder for cli and how to trust it; "" when the folder is
// trusted, holds nothing cli would apply, or the notice was given.
func (f *Folder) Notice(cli string) string {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	files := f.files[cli]
	if f.noticed[cli] || f.trustedLocked(cli) || len(files) == 0 {
		return ""
	}
	f.noticed[cli] = true
	why := "which you have not trusted"
	if f.status.Refused {
		why = "which you chose never to trust"
	}
	c := f.clis[cli]
	return fmt.Sprintf("This folder's own %s configuration was not applied (%s), %s: %s. %s. To apply it, trust the folder: spbridge trust add %s",
		c.Who, c.LeftOut, why, strings.Join(RelNames(f.Dir, files), ", "), c.RunsWith, shellQuote(f.Dir))
}

// RelNames is each of files as a path relative to dir where it can be.
func RelNames(dir string, files []string) []string {
	names := make([]string, len(files))
	for i, p := range files {
		names[i] = p
		if rel, err := filepath.Rel(dir, p); err == nil {
			names[i] = rel
		}
	}
	return names
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || r == ':' || r == '+' || r == ',' || r == '@') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	q := "'"
	for _, r := range s {
		if r == '\'' {
			q += `'\''`
		} else {
			q += string(r)
		}
	}
	return q + "'"
}

// NonEmptyDir reports whether p is a folder with something in it (a
// CLI's sandbox may leave empty folders in the roots it makes writable),
// without opening a FIFO or a device.
func NonEmptyDir(p string) bool {
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return false // (and a FIFO is never opened)
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// List is every folder a record trusts or refuses: spbridge's own, then
// those of clis (read only), sorted by folder within each.
func List(env []string, clis []CLI) ([]Status, error) {
	var out []Status
	state, err := statedir.Dir()
	if err != nil {
		return nil, err
	}
	folders, err := Read(state)
	if err != nil {
		return nil, err
	}
	for dir, r := range folders {
		out = append(out, Status{Dir: dir, Trusted: r.Trusted, Refused: !r.Trusted, By: BySpbridge, Record: filepath.Join(state, File)})
	}
	sortByDir(out)
	n := len(out)
	for _, c := range clis {
		if c.Record == nil {
			continue
		}
		file, dirs := c.Record(env)
		for _, d := range dirs {
			if _, mine := folders[d]; !mine {
				out = append(out, Status{Dir: d, Trusted: true, By: c.Who, Record: file})
			}
		}
	}
	sortByDir(out[n:])
	return out, nil
}

func sortByDir(s []Status) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].By != s[j].By {
			return s[i].By < s[j].By
		}
		return s[i].Dir < s[j].Dir
	})
}

// covered reports whether one of dirs is dir or a folder above it.
func covered(dir string, dirs []string) bool {
	for d := dir; ; {
		if slices.Contains(dirs, d) {
			return true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return false
		}
		d = parent
	}
}
