package backend

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// Defaults for Options.
const (
	DefaultIdleTimeout = 10 * time.Minute
	DefaultGrace       = 5 * time.Second
)

// Options are what every backend's CLI is run with.
type Options struct {
	// Program is the executable. Empty: $SPBRIDGE_<NAME> (ProgramVar),
	// else the backend's name on PATH.
	Program string
	// Dir is the working folder the CLI runs in.
	Dir string
	// Model is asked of the CLI when set.
	Model string
	// Env is the CLI's complete environment; nil uses spbridge's own.
	Env []string
	// IdleTimeout ends a turn whose CLI printed nothing for this long while
	// no permission request was waiting. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Grace is how long an interrupt waits for the CLI at each step before
	// escalating (SIGINT, SIGTERM, SIGKILL). Default DefaultGrace.
	Grace time.Duration
	// MaxLine is the longest stdout line read (cliproc's default when 0).
	MaxLine int
	// NewID names new items (random UUIDs when nil).
	NewID itemmap.IDFunc
	// MCPServers are the editor's MCP servers, given to every process the
	// CLI starts (in addition to its own configuration).
	MCPServers []MCPServer
	// AddDirs are folders besides Dir the CLI's agent may read and write
	// (absolute paths, each once): claude's and codex exec's --add-dir,
	// and the app-server's writable roots. They are never saved.
	AddDirs []string
	// Mode is the mode the first process starts in ("" for the CLI's
	// default); SetMode changes it at run time. It is never saved.
	Mode string
	// Events hear of the CLI's changes besides items (mode, commands).
	Events Events
	// Resume is the CLI's own session the first turn continues (one the
	// user had with the CLI before, imported into the conversation):
	// claude's --resume, codex's thread/resume or exec resume. "" starts a
	// new session.
	Resume string
	// Folder is the trust of Dir (internal/trust): until it is trusted,
	// a CLI that would read the folder's own configuration runs with the
	// user's own only. nil: untrusted, and nobody is asked.
	Folder *trust.Folder
}

// withDefaults returns o with the defaults in place of what it leaves zero.
func (o Options) withDefaults() Options {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	return o
}

// ProgramVar is the environment variable that names the program of the
// backend called name: SPBRIDGE_CLAUDE for claude.
func ProgramVar(name string) string { return "SPBRIDGE_" + strings.ToUpper(name) }

// FindProgram returns the executable of the backend called name: program
// when set, else $ProgramVar(name), else name found on PATH. A program that
// is not there gives an error matching notFound and ErrNoProgram.
func FindProgram(name, program string, notFound error) (string, error) {
	if program == "" {
		program = os.Getenv(ProgramVar(name))
	}
	if program == "" {
		program = name
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return "", noProgram{notFound, program}
	}
	return path, nil
}

// ErrNoProgram is matched by the error of FindProgram when a CLI's
// program is not installed, whichever CLI's.
var ErrNoProgram = errors.New("the program is not installed")

// noProgram is FindProgram's error: "NOTFOUND: PROGRAM".
type noProgram struct {
	notFound error
	program  string
}

func (e noProgram) Error() string   { return e.notFound.Error() + ": " + e.program }
func (e noProgram) Unwrap() []error { return []error{e.notFound, ErrNoProgram} }

// NotInstalled reports whether err, from starting a program, says the
// program is not there.
func NotInstalled(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}

// CLI supervises the processes of one backend's CLI: it holds the options,
// finds the program and its version once, tracks the running process and
// the turn's interrupt, and keeps how the last process ended. A backend
// embeds it: Program, Version, Model, SetModel, Interrupt, Close,
// StderrTail, ExitStatus and SkippedLines serve as the backend's own; the
// other methods are for the backend's turn loop. Interrupt, Model,
// StderrTail, ExitStatus and SkippedLines are safe to call while a turn
// runs.
type CLI struct {
	// Opts are the options, with their defaults. Read Model through Model:
	// SetModel may change it while a turn runs.
	Opts Options
	// Environ, when set, gives the CLI's environment instead of Opts.Env.
	Environ func() []string

	name     string
	notFound error
	program  string
	version  string

	mu          sync.Mutex
	proc        *cliproc.Proc
	interruptCh chan struct{}
	skipped     int    // stdout lines that were not events, over every turn
	lastTail    string // stderr tail of the last process that ended
	lastExit    string // how the last process that ended, ended
	echoes      Echoes // messages sent with a Context, to cut out of stderr
	onEnd       map[*cliproc.Proc]func()
	title       string // the name of the CLI sessions started from now on (SetTitle)
}

// NewCLI returns the supervision of the backend called name (which names
// its program and ProgramVar); a program not found gives errors matching
// notFound.
func NewCLI(name string, opts Options, notFound error) *CLI {
	return &CLI{Opts: opts.withDefaults(), name: name, notFound: notFound}
}

// Program returns the executable the backend runs (FindProgram), looking
// once.
func (c *CLI) Program() (string, error) {
	if c.program != "" {
		return c.program, nil
	}
	path, err := FindProgram(c.name, c.Opts.Program, c.notFound)
	if err != nil {
		return "", err
	}
	c.program = path
	return path, nil
}

// Env is the CLI's environment.
func (c *CLI) Env() []string {
	if c.Environ != nil {
		return c.Environ()
	}
	return c.Opts.Env
}

// Version returns the first line of what the program's --version prints,
// asking once; "" when it cannot be run.
func (c *CLI) Version() string {
	if c.version != "" {
		return c.version
	}
	path, err := c.Program()
	if err != nil {
		return ""
	}
	c.version = cliproc.Version(path, c.Env())
	return c.version
}

// Model returns the model asked for ("" for the CLI's default).
func (c *CLI) Model() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Opts.Model
}

// SetModel chooses the model for the next turns.
func (c *CLI) SetModel(model string) {
	c.mu.Lock()
	c.Opts.Model = model
	c.mu.Unlock()
}

// SetTitle names the CLI sessions the backend starts from now on
// (Titler); a session already started keeps its name.
func (c *CLI) SetTitle(title string) {
	c.mu.Lock()
	c.title = title
	c.mu.Unlock()
}

// Title is the name SetTitle gave, "" when none.
func (c *CLI) Title() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.title
}

// Start starts the program with args in Opts.Dir, with Env, and makes it
// the running process.
func (c *CLI) Start(args []string) (*cliproc.Proc, error) {
	path, err := c.Program()
	if err != nil {
		return nil, err
	}
	p, err := cliproc.Start(cliproc.Config{Path: path, Args: args, Dir: c.Opts.Dir, Env: c.Env(), MaxLine: c.Opts.MaxLine})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.proc = p
	c.mu.Unlock()
	return p, nil
}

// OnEnd runs fn once p has ended and been reaped (Reap or Close), or at
// once when p is nil: a file a process was given lives as long as it.
func (c *CLI) OnEnd(p *cliproc.Proc, fn func()) {
	if p == nil {
		fn()
		return
	}
	c.mu.Lock()
	if c.onEnd == nil {
		c.onEnd = make(map[*cliproc.Proc]func())
	}
	if prev := c.onEnd[p]; prev != nil {
		next := fn
		fn = func() { prev(); next() }
	}
	c.onEnd[p] = fn
	c.mu.Unlock()
}

// ended runs what OnEnd gave for p, once.
func (c *CLI) ended(p *cliproc.Proc) {
	c.mu.Lock()
	fn := c.onEnd[p]
	delete(c.onEnd, p)
	c.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// Proc returns the running process, or nil.
func (c *CLI) Proc() *cliproc.Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// BeginTurn starts a turn that sends msg: it returns the channel
// Interrupt signals until end is called. A message with a Context is
// remembered, to be cut out of the stderr tail (Echoes).
func (c *CLI) BeginTurn(msg Message) (interrupt <-chan struct{}, end func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.interruptCh = ch
	c.echoes.Add(msg)
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		c.interruptCh = nil
		c.mu.Unlock()
	}
}

// Interrupt asks the running turn to stop; without one it does nothing.
func (c *CLI) Interrupt() {
	c.mu.Lock()
	ch := c.interruptCh
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Close ends the running process, if any: its stdin is closed (a CLI
// that reads its input to the end leaves), then it is signalled within
// Opts.Grace, and reaped. How a CLI that was stopped ended is no failure
// of closing it.
func (c *CLI) Close() error {
	c.mu.Lock()
	p := c.proc
	c.proc = nil
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	p.CloseStdin()
	err := p.Close(c.Opts.Grace)
	c.ended(p)
	var ee *cliproc.ExitError
	if errors.As(err, &ee) || errors.Is(err, cliproc.ErrWaitDelay) {
		return nil
	}
	return err
}

// Reap closes p, a process that ended or must end, and keeps its stderr
// tail and how it ended for StderrTail and ExitStatus.
func (c *CLI) Reap(p *cliproc.Proc) {
	c.mu.Lock()
	if c.proc == p {
		c.proc = nil
	}
	c.mu.Unlock()
	err := p.Close(c.Opts.Grace)
	c.ended(p)
	exit := "exit status 0"
	if err != nil {
		exit = err.Error()
	}
	t := c.Tail(p)
	c.mu.Lock()
	c.lastTail, c.lastExit = t, exit
	c.mu.Unlock()
}

// Tail is the end of p's stderr as it may be shown and stored: valid
// UTF-8, with the prefixed messages it was sent cut out and credentials
// masked.
func (c *CLI) Tail(p *cliproc.Proc) string {
	c.mu.Lock()
	echoes := c.echoes
	c.mu.Unlock()
	return echoes.Clean(string(p.StderrTail()))
}

// StderrTail returns the end of the running process's stderr, or of the
// last one's when none runs.
func (c *CLI) StderrTail() string {
	c.mu.Lock()
	p := c.proc
	last := c.lastTail
	c.mu.Unlock()
	if p != nil {
		return c.Tail(p)
	}
	return last
}

// ExitStatus says how the last process ended ("" while one runs or none
// ran).
func (c *CLI) ExitStatus() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return ""
	}
	return c.lastExit
}

// Skipped counts a stdout line that was not an event the mapper knows.
func (c *CLI) Skipped() {
	c.mu.Lock()
	c.skipped++
	c.mu.Unlock()
}

// SkippedLines returns how many stdout lines were not events the mapper
// knows (not JSON, or of a kind it does not show); they are skipped.
func (c *CLI) SkippedLines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipped
}

// ExitedText is the failure text of a turn whose process, p, ended before
// the turn did: who exited, and how.
func ExitedText(who string, p *cliproc.Proc) string {
	text := who + " exited before the turn ended"
	if err := p.Err(); err != nil {
		text += " (" + err.Error() + ")"
	}
	return text + "."
}

// Post queues v as a JSON line for p's stdin and returns at once, with the
// channel that receives the write's outcome: a CLI that stops reading its
// input never holds the turn, whose idle timeout, interrupt and Close still
// work (Close ends the write).
func Post(p *cliproc.Proc, v any) <-chan error {
	data, err := json.Marshal(v)
	if err != nil {
		ch := make(chan error, 1)
		ch <- err
		return ch
	}
	return p.Send(append(data, '\n'))
}

// ResetIdle stops the idle timer t and, when armed, starts it again for d.
func ResetIdle(t *time.Timer, d time.Duration, armed bool) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	if armed {
		t.Reset(d)
	}
}

// LastLine is the last line of a command's output that is not blank, cut
// to 200 bytes: what a failed CLI command said last, for its error.
func LastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if len(line) > 200 {
		line = strings.ToValidUTF8(line[:200], "") + "…"
	}
	return line
}
