package codex

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Provider is the archive's provider name for turns run on the Codex CLI.
const Provider = "codex"

// DefaultSandbox is the sandbox mode when Options.Sandbox is empty.
const DefaultSandbox = "workspace-write"

// Options configure a Backend: the options every backend has
// (backend.Options: Program empty is $SPBRIDGE_CODEX, else codex on PATH;
// Model is passed as -m), and codex's own.
type Options struct {
	backend.Options

	// CodexHome, when set, is the CODEX_HOME the CLI runs with (its
	// configuration and log-in); otherwise the user's own.
	CodexHome string
	// Sandbox is the sandbox mode: read-only, workspace-write (default) or
	// danger-full-access. Options.Mode, when set, takes its place.
	Sandbox string
	// Transport is how codex is driven: "app-server" (default: one
	// long-lived `codex app-server` per open, which streams text, asks for
	// approvals and interrupts without dying) or "exec" (one `codex exec
	// --json` process a turn).
	Transport string
}

// Backend runs the turns of one open conversation on the Codex CLI, over
// one of two transports. With app-server, one `codex app-server` process
// carries the thread and every turn (JSON-RPC on stdin and stdout). With
// exec, each turn is one `codex exec --json` process (the first starts a
// thread, later ones `codex exec resume` it), with the message on stdin.
// Interrupt may be called from another goroutine while Turn runs: codex
// exec gets SIGINT (its JSON mode has no other way), the app-server
// turn/interrupt, then SIGTERM and SIGKILL if the turn does not end; every
// item so far is kept and the thread is resumed by the next turn.
type Backend struct {
	*backend.CLI // the process, the common options, stderr tail and reaping

	codexHome string
	transport string
	sseSaid   bool           // the SSE servers left out were noticed
	mapper    *itemmap.Codex // exec: one for the thread (codex reports its running total)
	app       appState
	steer     steering   // the app-server turn's steered messages (steer.go)
	run       sync.Mutex // held by Turn, and by Prepare while it starts the app-server

	// patchUsed are the apply_patch calls of thread patchThread whose
	// changes an exec file_change item was given (held with run).
	patchUsed   map[string]bool
	patchThread string
	patchLate   *latePatch  // an item whose FileChange event is awaited
	rolloutFrom rolloutMark // where the thread's log was when the exec turn began (held with run)
	logRead     logTail     // how far the exec turn read the thread's log for refused calls (held with run)

	mu         sync.Mutex
	mode       string // the mode of the next turn
	threadMode string // the mode the app-server's thread runs in
	thread     string
	model      string          // the model the thread runs on, as codex said
	models     []backend.Model // the app-server's model list, once it said it
	effort     string          // the reasoning effort asked for, "" for codex's
	sentEffort string          // the effort the app-server's thread was last given
	fast       *bool           // the fast service tier chosen (SetSwitch), nil when not
	// slept is set when Sleep ended the server of a thread the next
	// start resumes; refused once that resume was refused (sleep.go).
	slept, refused bool
	turnIDs        []string // the app-server turns of the thread in this open (rewind.go)
}

// withModel names the model a turn ran on, for the price table and the
// record: what the app-server said the thread runs on, else the model asked
// for, else the one codex's configuration names (what codex exec runs when
// not told one; it does not say).
func (b *Backend) withModel(end *itemmap.TurnEnd) *itemmap.TurnEnd {
	if end != nil && end.Model == "" {
		b.mu.Lock()
		end.Model = b.model
		b.mu.Unlock()
		if end.Model == "" {
			end.Model = b.Model()
		}
		if end.Model == "" {
			end.Model = configModel(b.env())
		}
	}
	return end
}

// New returns a backend; nothing starts until the first Turn.
func New(opts Options) *Backend {
	if opts.Sandbox == "" {
		opts.Sandbox = DefaultSandbox
	}
	if opts.Transport == "" {
		opts.Transport = TransportAppServer
	}
	mode := opts.Mode
	if _, ok := presets[mode]; !ok {
		mode = modeOf(opts.Sandbox)
	}
	b := &Backend{
		CLI:       backend.NewCLI("codex", opts.Options, ErrNotFound),
		codexHome: opts.CodexHome,
		mode:      mode,
		transport: opts.Transport,
		mapper:    itemmap.NewCodex(opts.NewID),
		app:       appState{mapper: itemmap.NewCodexApp(opts.NewID)},
		thread:    opts.Resume, // a thread the user had: the first turn resumes it
	}
	b.Environ = b.env
	return b
}

// Name is the backend's name.
func (b *Backend) Name() string { return "codex" }

// env is the CLI's environment: Options.Env, with CODEX_HOME when set,
// and on the exec transport what the MCP servers need (mcpExecArgs).
func (b *Backend) env() []string {
	env := b.Opts.Env
	if env == nil {
		env = os.Environ()
	}
	if b.codexHome != "" {
		env = append(env[:len(env):len(env)], "CODEX_HOME="+b.codexHome)
	}
	if b.transport == TransportExec {
		if _, mcpEnv, _ := mcpExecArgs(b.Opts.MCPServers); len(mcpEnv) > 0 {
			env = append(env[:len(env):len(env)], mcpEnv...)
		}
	}
	return env
}

// Started reports whether codex started a thread in this open.
func (b *Backend) Started() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.thread != ""
}

// Thread returns the thread id later turns resume.
func (b *Backend) Thread() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.thread
}

// SetModel chooses the model for the next turns.
func (b *Backend) SetModel(model string) {
	b.CLI.SetModel(model)
	b.mu.Lock()
	b.model = "" // the next turn runs on the new one
	b.mu.Unlock()
}

// planTool turns on codex's update_plan tool, which 0.169.0 offers only
// some models: its plans are the editor's plan (the app-server's
// turn/plan/updated, exec's todo_list).
var planTool = []string{"-c", "tools.update_plan.enabled=true"}

// args builds the command line of a turn. The message never goes on it: it
// is read from stdin ("-").
func (b *Backend) args(images []string) []string {
	a := append([]string{"-c", fmt.Sprintf("sandbox_mode=%q", b.preset().sandbox)}, planTool...)
	a = append(a, trustArgs(b.Opts.Dir, b.Opts.Folder.Trusted(Name))...)
	if effort := b.Effort(); effort != "" {
		a = append(a, "-c", fmt.Sprintf("model_reasoning_effort=%q", effort))
	}
	a = append(append(a, b.execMCPArgs()...), "exec")
	for _, dir := range b.Opts.AddDirs {
		// exec's own flag, before resume (which has none): codex applies
		// it to the resumed thread's turn too.
		a = append(a, "--add-dir", dir)
	}
	if b.thread != "" {
		a = append(a, "resume")
	}
	a = append(a, "--json")
	if model := b.Model(); model != "" {
		a = append(a, "-m", model)
	}
	for _, img := range images {
		a = append(a, "-i", img)
	}
	// A flag after -i: the image list must not swallow the prompt.
	a = append(a, "--skip-git-repo-check")
	if b.thread != "" {
		a = append(a, b.thread)
	}
	return append(a, "-")
}

// reviewArgs builds the command line of /review on codex exec (codex exec
// review, ephemeral: a session of its own that nothing resumes) for its
// argument, and what goes to its stdin: the instructions of a custom
// review, read from stdin ("-"), never on argv.
func (b *Backend) reviewArgs(arg string) (argv []string, stdin string) {
	a := append([]string{"-c", fmt.Sprintf("sandbox_mode=%q", b.preset().sandbox)}, planTool...)
	a = append(a, trustArgs(b.Opts.Dir, b.Opts.Folder.Trusted(Name))...)
	if effort := b.Effort(); effort != "" {
		a = append(a, "-c", fmt.Sprintf("model_reasoning_effort=%q", effort))
	}
	a = append(append(a, b.execMCPArgs()...), "exec", "review", "--json", "--ephemeral", "--skip-git-repo-check")
	if model := b.Model(); model != "" {
		a = append(a, "-m", model)
	}
	switch t := reviewTarget(arg); t["type"] {
	case "uncommittedChanges":
		return append(a, "--uncommitted"), ""
	case "baseBranch":
		return append(a, "--base", t["branch"].(string)), ""
	case "commit":
		return append(a, "--commit", t["sha"].(string)), ""
	}
	return append(a, "-"), arg
}

// writeImages stores a turn's images where codex can read them, named by
// their hash, in a private temporary folder the caller removes.
func writeImages(images []backend.Image) (string, []string, error) {
	if len(images) == 0 {
		return "", nil, nil
	}
	dir, err := os.MkdirTemp("", "spbridge-images-")
	if err != nil {
		return "", nil, err
	}
	var paths []string
	for _, img := range images {
		ext := map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}[img.MimeType]
		if ext == "" {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("image type %q: %w", img.MimeType, archive.ErrImageType)
		}
		sum := sha256.Sum256(img.Data)
		p := filepath.Join(dir, hex.EncodeToString(sum[:])+"."+ext)
		if err := os.WriteFile(p, img.Data, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		paths = append(paths, p)
	}
	return dir, paths, nil
}

// Turn sends msg and runs the turn to its end, reporting item changes and
// (app-server) permission requests to h. It always returns a TurnEnd; see
// backend.Backend. Commands run inside the sandbox without asking; the
// app-server asks for what needs more (a command outside the sandbox, a
// patch outside the workspace), while exec has no one to ask and codex
// refuses it.
func (b *Backend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	b.run.Lock()
	defer b.run.Unlock()
	interruptCh, done := b.BeginTurn(msg)
	defer done()

	if _, err := b.Program(); err != nil {
		// NotFoundText says what is missing and how to get it; the
		// error's words would say it again.
		return failBeforeStart(b.Opts.NewID, h, NotFoundText, "")
	}
	b.settleTrust(ctx, h)
	if b.transport == TransportAppServer {
		return b.withModel(b.appTurn(ctx, msg, h, interruptCh))
	}
	cmd, cmdArg, isCmd := commandOf(msg.Text)
	if isCmd && cmd == CommandCompact {
		// Not sent as text: the model would take it for a request of its
		// own and act on it.
		return failBeforeStart(b.Opts.NewID, h, "/compact is not available with codex exec: it needs the app-server transport (spbridge serve --codex-transport app-server).", "")
	}
	review := isCmd && cmd == CommandReview
	_, _, skipped := mcpExecArgs(b.Opts.MCPServers)
	b.mcpSkippedNotice(h, skipped)
	dir, images, err := writeImages(msg.Images)
	if err != nil {
		return failBeforeStart(b.Opts.NewID, h, "The images could not be passed to codex: "+err.Error(), "")
	}
	if dir != "" {
		defer os.RemoveAll(dir)
	}
	argv, stdin, m := b.args(images), msg.CLIText(), b.mapper
	if review {
		// A review is a session of codex's own (codex exec review), which
		// the thread does not resume: a mapper of its own.
		argv, stdin = b.reviewArgs(cmdArg)
		m = itemmap.NewCodex(b.Opts.NewID)
	} else {
		b.markRollout()
	}
	p, err := b.Start(argv)
	if err != nil {
		text, detail := "The Codex CLI could not be started: "+err.Error(), err.Error()
		if backend.NotInstalled(err) {
			text, detail = NotFoundText, ""
		}
		return failBeforeStart(b.Opts.NewID, h, text, detail)
	}
	// codex reads the prompt to the end of stdin (an open stdin hangs it):
	// the loop closes stdin once the prompt is written.
	b.patchLate = nil
	end := (&backend.Driver{Conn: &execConn{b: b, p: p, m: m, thread: !review}, Proc: p, Opts: b.Opts, Who: "codex",
		Interrupt: interruptCh, Sent: p.Send([]byte(stdin))}).Run(ctx, h)
	if !review {
		b.execLastRound(end)
		b.execHistory(m, end, h)
	}
	return b.withModel(end)
}

// failBeforeStart reports a turn that failed before codex took it.
func failBeforeStart(newID itemmap.IDFunc, h backend.Host, text, detail string) *itemmap.TurnEnd {
	return backend.FailBeforeStart(newID, h, text, detail)
}

// execConn is a turn of codex exec, p (backend.Conn): a prompt codex does
// not read counts toward the idle timeout, and an interrupt or Close ends
// it. m maps its events; the thread it reports is the one later turns
// resume when thread is set.
type execConn struct {
	b        *Backend
	p        *cliproc.Proc
	m        *itemmap.Codex
	thread   bool
	reported bool // codex reported the turn's end
}

// Line maps a line, copied: the mapper keeps views into it.
func (c *execConn) Line(data []byte, h backend.Host) ([]itemmap.Approval, *itemmap.TurnEnd) {
	b := c.b
	data = bytes.Clone(data)
	var end *itemmap.TurnEnd
	if c.thread {
		end = c.emit(b.execRefused(c.m), h)
		if e := c.emit(b.execLatePatch(c.m), h); e != nil {
			end = e
		}
		b.execFileChange(c.m, data)
	}
	r := c.m.Line(data)
	if r.Skipped {
		b.Skipped()
	}
	if e := c.emit(r, h); e != nil {
		end = e
	}
	if end != nil {
		c.reported = true
	}
	return nil, end
}

// Drained: what codex refused after its last line, from its log, unless
// the turn ended.
func (c *execConn) Drained(h backend.Host) {
	if c.thread && !c.reported {
		c.emit(c.b.execRefused(c.m), h)
	}
}

// emit hands r's changes to h, keeps the thread it reports, and returns
// its end.
func (c *execConn) emit(r itemmap.Result, h backend.Host) *itemmap.TurnEnd {
	for _, ch := range r.Changes {
		h.Change(ch)
	}
	if c.thread && r.Session != nil && r.Session.ID != "" {
		c.b.mu.Lock()
		c.b.thread = r.Session.ID
		c.b.mu.Unlock()
	}
	return r.End
}

// Answer: codex exec asks nothing.
func (c *execConn) Answer(string, backend.Decision, backend.Host) {}

// Written: codex reads the prompt to the end of stdin (an open stdin hangs
// it), so stdin is closed once the prompt is written, or could not be.
func (c *execConn) Written(error) error {
	c.p.CloseStdin()
	return nil
}

// Interrupt sends SIGINT, codex exec's JSON mode's only way, after
// killing the commands codex detached: SIGINT does not reach them.
func (c *execConn) Interrupt() {
	c.p.KillEscaped(true)
	c.p.Signal(syscall.SIGINT)
}

// Escalate: the process is closed (SIGINT again, SIGTERM, SIGKILL).
func (c *execConn) Escalate(int) bool { return false }

// Settled: the turn ends when the process does.
func (c *execConn) Settled() bool { return false }

// Ended: codex exec may end a turn it was told to stop as completed
// (SIGINT came while it finished its reply); the user stopped it, and
// what it printed is kept.
func (c *execConn) Ended(end *itemmap.TurnEnd, interrupted bool, h backend.Host) *itemmap.TurnEnd {
	if interrupted && end.Status == itemmap.TurnCompleted {
		end.Status = itemmap.TurnInterrupted
		backend.Notice(c.b.Opts.NewID, h, "Interrupted.")
	}
	return end
}

func (c *execConn) Finish(interrupted bool, text, detail string) itemmap.Result {
	return c.m.Finish(interrupted, text, detail)
}

func (c *execConn) Reap() string {
	c.b.Reap(c.p)
	return c.b.Tail(c.p)
}
