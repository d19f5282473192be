// Package claude runs conversation turns on Claude Code: it supervises one
// `claude` process per open conversation, speaks its stream-json and control
// protocol on stdin and stdout, and maps what it prints onto items with
// itemmap. It also reads Claude Code's own store of past sessions (History,
// a history.Store: its session files listed and imported), and its own
// record of trusted folders and what in a folder it would apply (for
// trust). Plugin is its row in the table of CLIs: with its tool
// vocabulary, its not-logged-in failure and its continue command.
package claude

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Provider is the archive's provider name for turns run on Claude Code.
const Provider = "claude-code"

// Options configure a Backend: Claude Code takes only the options every
// backend has. Program empty: $SPBRIDGE_CLAUDE, else "claude" on PATH;
// Model is passed as --model when set.
type Options = backend.Options

// Backend runs the turns of one open conversation on one claude process,
// restarting it (with --resume) when it dies. It is safe to call Interrupt
// from another goroutine while Turn runs; Turn itself is not reentrant.
// Interrupt asks the CLI through its control protocol, and it keeps running
// for the next turn; if it does not end the turn within the grace period it
// is signalled (SIGINT, SIGTERM, SIGKILL).
type Backend struct {
	*backend.CLI // the process, its options, stderr tail and reaping

	mapper *itemmap.Claude
	lines  sync.Mutex // held by a turn, which reads the process's lines, and by Prepare while it starts one
	bt     between    // the lines between turns
	steer  steering   // the messages steered into the running turn (steer.go)
	inTurn atomic.Bool
	// starting is held while a process is started: a mode or effort asked
	// for meanwhile is either on its command line or told to the process
	// once it runs, never lost between the two.
	starting sync.Mutex

	mu      sync.Mutex
	session string // the CLI's session id, once it reported one
	// The session's messages (rewind.go): lastUUID is the last one claude
	// printed, turnEnds the last of each turn this backend ran, resumeAt
	// the one the next start resumes at ("" for the session's end).
	lastUUID, resumeAt string
	turnEnds           []string
	mode               string            // the mode asked for, or the CLI's
	cliMode            string            // the mode the CLI last reported
	toldMode           string            // the mode Events.ModeChanged last heard
	modeSeq            int               // numbers the set_permission_mode requests
	commands           []backend.Command // the CLI's commands, once it said them
	models             []backend.Model   // the CLI's models, once it said them
	effort             string            // the reasoning effort asked for, "" for the CLI's
	mcpSaid            map[string]bool   // MCP servers whose failure this process noticed (read by the line reader only)
	mcpFile            func()            // removes the running process's --mcp-config file, until it has read it
	// compacting is the compaction the process's lines tell of (read by
	// the line reader only).
	compacting compaction
	// procTrusted: the running process was started with the folder's
	// own configuration (Opts.Folder trusted then).
	procTrusted bool
	// bgTasks is how many tasks claude said it runs in the background;
	// slept is set when Sleep ended the process of a session the next
	// start resumes, refused once a start after it was refused
	// (sleep.go).
	bgTasks        int
	slept, refused bool
	// waking is the process started to resume a session put to sleep,
	// until it said it did (its system/init) or refused.
	waking, refusedProc *cliproc.Proc
	// unnamed is the process that began a new session, until it is
	// given its name (nameSession).
	unnamed *cliproc.Proc

	// projectCommands reads a folder's .claude/commands (ProjectCommands),
	// with no lock held.
	projectCommands func(dir string) []backend.Command
}

// Name is the backend's name as the command line and the audit log say it.
func (b *Backend) Name() string { return "claude" }

// New returns a backend; nothing starts until the first Turn.
func New(opts Options) *Backend {
	mode := opts.Mode
	if mode == "" {
		mode = ModeDefault
	}
	b := &Backend{CLI: backend.NewCLI("claude", opts, ErrNotFound), mode: mode, cliMode: mode, toldMode: mode, session: opts.Resume,
		projectCommands: ProjectCommands}
	b.Environ = func() []string { return withTodoTools(b.Opts.Env) }
	return b
}

// sameFolderSettings make every Bash command of the session start in the
// session's folder: a `cd` does not carry over to the next command, so
// that spbridge knows where a command it is asked about runs (a grant
// covers a command in its folder only). Claude Code 2.1.328 reads
// CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR from its environment, and a
// settings file's env overrides that environment (a folder's
// .claude/settings.json could turn it off); the settings of --settings
// override the user's, the project's and the local ones.
const sameFolderSettings = `{"env":{"CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR":"1"}}`

// todoToolsEnv switch on Claude Code's TodoWrite, whose list becomes the
// editor's plan: in -p mode, Claude Code 2.1.328 offers it only with both
// set (and then as a deferred tool, found through ToolSearch).
var todoToolsEnv = []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=true", "CLAUDE_CODE_ENABLE_TASKS=false"}

// withTodoTools is env (nil: this process's) with todoToolsEnv, each
// unless env sets that variable itself: the user's choice stands.
func withTodoTools(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := env[:len(env):len(env)]
	for _, kv := range todoToolsEnv {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") }) {
			out = append(out, kv)
		}
	}
	return out
}

// ErrNotFound is matched by the error of a claude program that is not
// installed.
var ErrNotFound = errors.New("claude not found")

// SessionID returns the CLI's session id, once a turn reported it.
func (b *Backend) SessionID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session
}

// Started reports whether a CLI session has been established: a turn
// reached the CLI and it reported its session.
func (b *Backend) Started() bool { return b.SessionID() != "" }

// args builds the command line. The message never goes on it: argv is
// visible to every user of the machine.
func (b *Backend) args() []string { return b.argsTrusted(b.Opts.Folder.Trusted(Name)) }

// argsTrusted builds the command line of a claude that reads the folder's
// own configuration (trusted) or not.
func (b *Backend) argsTrusted(trusted bool) []string {
	a := []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json",
		"--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio",
		// Each user message echoed as claude takes it: where a steered
		// message goes (steer.go).
		"--replay-user-messages",
		"--settings", sameFolderSettings}
	if !trusted {
		// The folder's own settings (hooks, env, permission mode) and
		// MCP servers (.mcp.json) wait for its trust: only the user's
		// own settings, and only the MCP servers of --mcp-config (the
		// editor's and the user's own, carried over: mcpconfig.go).
		a = append(a, "--setting-sources", "user", "--strict-mcp-config")
	}
	if model := b.Model(); model != "" {
		a = append(a, "--model", model)
	}
	if effort := b.Effort(); effort != "" {
		a = append(a, "--effort", effort)
	}
	if bypassAllowed(b.Env()) {
		// Lets set_permission_mode switch to bypassPermissions later.
		a = append(a, "--allow-dangerously-skip-permissions")
	}
	if mode := b.Mode(); mode != ModeDefault {
		a = append(a, "--permission-mode", mode)
	}
	for _, dir := range b.Opts.AddDirs {
		// One flag a folder: each value is a whole path, whatever it holds.
		a = append(a, "--add-dir", dir)
	}
	if session := b.SessionID(); session != "" {
		a = append(a, "--resume", session)
		b.mu.Lock()
		at := b.resumeAt
		b.mu.Unlock()
		if at != "" {
			a = append(a, "--resume-session-at", at)
		}
	}
	return a
}

// start starts the claude process and returns it. The turn goes on with
// that process even when a Close has stopped it meanwhile (the message's
// write then fails): reading the running process back could find none.
func (b *Backend) start() (*cliproc.Proc, error) {
	b.starting.Lock()
	defer b.starting.Unlock()
	trusted := b.Opts.Folder.Trusted(Name)
	args := b.argsTrusted(trusted)
	var own map[string]json.RawMessage
	if !trusted {
		own = userMCPServers(b.Opts.Dir, b.Env())
	}
	remove := func() {}
	if len(b.Opts.MCPServers) > 0 || len(own) > 0 {
		// The servers' env and headers may be secrets: they go in a
		// private file, never on argv, removed once claude read it
		// (mcpconfig.go).
		path, rm, err := b.writeMCPConfig(own)
		if err != nil {
			return nil, err
		}
		args = append(args, "--mcp-config", path)
		remove = rm
	}
	b.mu.Lock()
	b.mcpFile = remove
	b.procTrusted = trusted
	b.mu.Unlock()
	p, err := b.Start(args)
	if err != nil {
		remove()
		if backend.NotInstalled(err) {
			return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		return nil, err
	}
	b.OnEnd(p, remove)
	b.mu.Lock()
	if b.slept {
		b.waking, b.slept = p, false
	}
	if b.session == "" {
		b.unnamed = p // no --resume: a new session
	}
	b.mu.Unlock()
	b.mcpSaid = make(map[string]bool)
	b.compacting = compaction{} // a compaction of the process before ended with it
	moved := b.mapper != nil && b.mapper.FolderMoved()
	b.mapper = itemmap.NewClaude(b.Opts.NewID)
	if moved {
		b.mapper.ForgetFolder() // the session may go on in the other folder
	}
	// The SDKs open with initialize; the CLI answers with its capabilities.
	post(p, map[string]any{"type": "control_request", "request_id": initRequestID,
		"request": map[string]any{"subtype": "initialize"}})
	b.nameSession(p)
	return p, nil
}

// nameSession gives the new session p began the conversation's title
// (backend.Titler), once, when there is one: a rename_session control
// request, which claude writes into the session's file as its custom
// title (claude --resume's picker shows it). The title goes on stdin, not
// on argv (--name), which every user of the machine can read: it is the
// user's first message. A session claude continues (--resume) keeps the
// name it has.
func (b *Backend) nameSession(p *cliproc.Proc) {
	title := b.Title()
	b.mu.Lock()
	if b.unnamed != p || title == "" {
		b.mu.Unlock()
		return
	}
	b.unnamed = nil
	b.mu.Unlock()
	post(p, renameSession(title))
}

// renameSession is the control request that names claude's session
// title; "host" says the user's application chose it, as a rename of the
// user's own.
func renameSession(title string) map[string]any {
	return map[string]any{"type": "control_request", "request_id": "spbridge-title",
		"request": map[string]any{"subtype": "rename_session", "title": title, "source": "host"}}
}

// apply hands a mapped line's item changes to h, records the CLI's session
// id and refuses the control requests spbridge does not serve: what a line
// brings besides its permission requests and its turn's end, in a turn or
// between turns.
func (b *Backend) apply(p *cliproc.Proc, h backend.Host, r itemmap.Result) {
	for _, c := range r.Changes {
		h.Change(c)
	}
	if r.Session != nil && r.Session.ID != "" {
		b.mu.Lock()
		b.session = r.Session.ID
		b.mu.Unlock()
	}
	for _, cr := range r.ControlRequests {
		post(p, map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": cr.RequestID, "error": "spbridge does not support " + cr.Subtype}})
	}
}

// post queues v as a line for p's stdin (backend.Post).
func post(p *cliproc.Proc, v any) <-chan error { return backend.Post(p, v) }

// userMessage is the stream-json line that carries msg: its Context and
// text as one text block, then its images.
func userMessage(msg backend.Message) map[string]any {
	content := []any{map[string]any{"type": "text", "text": msg.CLIText()}}
	for _, img := range msg.Images {
		content = append(content, map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": img.MimeType, "data": base64.StdEncoding.EncodeToString(img.Data)}})
	}
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil, "session_id": ""}
}

// SetModel chooses the model for the next turns: a running claude is told
// through its control protocol, a later one gets --model.
func (b *Backend) SetModel(model string) {
	// As SetEffort: a process starting meanwhile has the model on its
	// command line, or is told once it runs.
	b.starting.Lock()
	b.CLI.SetModel(model)
	p := b.Proc()
	b.starting.Unlock()
	if p != nil {
		post(p, map[string]any{"type": "control_request", "request_id": "spbridge-model",
			"request": map[string]any{"subtype": "set_model", "model": model}})
	}
}

// NotFoundText is the failure shown when claude is not installed.
const NotFoundText = "Claude Code (claude) was not found. Install it with `npm install -g @anthropic-ai/claude-code`, or set SPBRIDGE_CLAUDE to its path."

// Turn sends msg and runs the turn to its end, reporting item changes and
// permission requests to h. It always returns a non-nil TurnEnd: a failure
// (the CLI missing, crashing, hanging past the idle timeout, not reading
// its input, an API error) is a failed turn with a failure item, and an
// interrupt gives an interrupted turn; every item so far is kept. A turn
// the CLI never took (it could not start, did not read the message, or
// printed nothing of it) is marked NotStarted. Cancelling ctx interrupts
// the turn.
//
// What claude printed between turns while no host watched (see Watch) is
// reported to h first; the end of a turn claude ran on its own meanwhile
// is folded into this turn's.
func (b *Backend) Turn(ctx context.Context, msg backend.Message, h backend.Host) (end *itemmap.TurnEnd) {
	release := b.Hold()
	defer release()
	b.lines.Lock()
	defer b.lines.Unlock()
	defer func() {
		if end != nil && !end.NotStarted {
			b.turnEnded()
		}
	}()
	b.inTurn.Store(true)
	defer b.inTurn.Store(false)
	interruptCh, done := b.BeginTurn(msg)
	defer done()
	held, heldEnd := b.takeHeld()
	for _, c := range held {
		h.Change(c)
	}
	if heldEnd != nil {
		defer func() {
			if end != nil && !end.NotStarted {
				end = mergeEnds(heldEnd, end)
			}
		}()
	}

	data, err := json.Marshal(userMessage(msg))
	if err != nil {
		return failBeforeStart(b.Opts.NewID, h, "The message could not be encoded: "+err.Error(), "")
	}
	b.settleTrust(ctx, h)
	data = append(data, '\n')
	for attempt := 0; ; attempt++ {
		p := b.Proc()
		if p == nil {
			var err error
			if p, err = b.start(); err != nil {
				text, detail := "Claude Code could not be started: "+err.Error(), err.Error()
				if errors.Is(err, ErrNotFound) {
					// It says what is missing and how to get it; the
					// error's words would say it again.
					text, detail = NotFoundText, ""
				}
				return failBeforeStart(b.Opts.NewID, h, text, detail)
			}
		}
		// Named before the message: the title is known by now when the
		// process began before it (Prepare).
		b.nameSession(p)
		d := b.driver(p, interruptCh, msg.CLIText())
		conn := d.Conn.(*turnConn)
		end, err := d.AwaitWrite(ctx, p.Send(data), h)
		switch {
		case end != nil:
			return end
		case err == nil:
			// claude took the message: the turn takes steered ones
			// until it ends.
			b.openSteering(p)
			defer b.closeSteering()
			end := d.Run(ctx, h)
			if conn.refused {
				// claude exits after its refusal: the next turn starts
				// a new session.
				p.CloseStdin()
				b.Reap(p)
			}
			return end
		}
		closed := b.Proc() != p
		b.Reap(p)
		detail := b.Tail(p)
		if closed {
			// Close stopped the CLI while the message was written.
			return failBeforeStart(b.Opts.NewID, h, "Claude Code was stopped before it took the message.", detail)
		}
		if b.isWaking(p) {
			// Started again to resume a session put to sleep, it died
			// before it took the message: it refused the session.
			sid := b.refuse(p)
			return failBeforeStart(b.Opts.NewID, h, "Claude Code could not resume its session "+sid+" after it was put to sleep.", detail)
		}
		// The process died between turns: start again, resuming, once.
		if attempt > 0 {
			// How it ended in the text; what it said (stderr) only in the
			// detail.
			text := "Claude Code did not take the message: " + err.Error()
			if perr := p.Err(); perr != nil {
				text += " (" + perr.Error() + ")"
			}
			return failBeforeStart(b.Opts.NewID, h, text+".", detail)
		}
	}
}

// settleTrust asks, the first time in the session, whether to trust the
// folder (backend.FolderTrust); a folder trusted now whose claude was
// started without its configuration (early, as the session opened) gets
// a claude that reads it: the running one is ended, and the turn starts
// it again (resuming its session, when it has one).
func (b *Backend) settleTrust(ctx context.Context, h backend.Host) {
	f := b.Opts.Folder
	backend.FolderTrust(ctx, f, Name, h, b.Opts.NewID)
	if !f.Trusted(Name) {
		return
	}
	b.mu.Lock()
	stale := !b.procTrusted
	b.mu.Unlock()
	if p := b.Proc(); p != nil && stale {
		p.CloseStdin()
		b.Reap(p)
	}
}

// failBeforeStart reports a turn that failed before the CLI took it.
func failBeforeStart(newID itemmap.IDFunc, h backend.Host, text, detail string) *itemmap.TurnEnd {
	return backend.FailBeforeStart(newID, h, text, detail)
}

// driver is the turn driver of p, which the message is written to.
func (b *Backend) driver(p *cliproc.Proc, interruptCh <-chan struct{}, text string) *backend.Driver {
	return &backend.Driver{Conn: &turnConn{b: b, p: p, ownText: text}, Proc: p, Opts: b.Opts, Who: "Claude Code",
		// Permission requests asked between turns may be answered now.
		Interrupt: interruptCh, Asked: b.asks(p, false)}
}

// turnConn is a turn's stream-json and control protocol on p
// (backend.Conn).
type turnConn struct {
	b *Backend
	p *cliproc.Proc
	// ownText is the text of the turn's own message, and own is set once
	// claude echoed it; held is claude's end of a turn that ended with a
	// steered message not taken yet (steer.go), and interrupted says the
	// turn was asked to stop.
	ownText     string
	own         bool
	held        *itemmap.TurnEnd
	interrupted bool
	// refused: p, started to resume a session put to sleep, would not
	// (sleep.go).
	refused bool
}

// Line maps a line (the mapper keeps nothing of it), hands its control
// responses to what waits for them, and applies what it brings.
func (c *turnConn) Line(data []byte, h backend.Host) ([]itemmap.Approval, *itemmap.TurnEnd) {
	b := c.b
	if refused, ok := b.resumeRefusal(c.p, data); ok {
		c.refused = true
		return nil, failBeforeStart(b.Opts.NewID, h, refused.text, refused.detail)
	}
	b.observe(data, h)
	b.answerWaiter(data)
	r := b.mapper.Line(data)
	if r.Skipped {
		b.Skipped()
	}
	b.apply(c.p, h, r)
	if msg, ok := b.echoed(data, &c.own, c.ownText); ok {
		b.steered(msg, h)
	}
	end := r.End
	if end != nil {
		switch {
		case c.interrupted:
			b.closeSteering()
		case !b.endable():
			// A steered message waits: claude runs it next, in this
			// turn.
			if c.held != nil {
				end = mergeEnds(c.held, end)
			}
			c.held, end = end, nil
		}
	}
	if end != nil && c.held != nil {
		end, c.held = mergeEnds(c.held, end), nil
	}
	return r.Approvals, end
}

func (c *turnConn) Answer(id string, d backend.Decision, _ backend.Host) {
	c.b.mapper.Answered(id, d.Allow)
	respond(c.p, id, d)
}

// Written: the message was written before the turn's lines are read.
func (c *turnConn) Written(err error) error { return err }

// Interrupt asks through the control protocol; the process stays for the
// next turn.
func (c *turnConn) Interrupt() {
	c.interrupted = true
	post(c.p, map[string]any{"type": "control_request", "request_id": "spbridge-interrupt",
		"request": map[string]any{"subtype": "interrupt"}})
}

// Escalate sends SIGINT first.
func (c *turnConn) Escalate(n int) bool {
	if n > 1 {
		return false
	}
	c.p.Signal(syscall.SIGINT)
	return true
}

// Settled: claude's result ends the turn.
func (c *turnConn) Settled() bool { return true }

// Ended: a turn that failed after an interrupt was interrupted.
func (c *turnConn) Ended(end *itemmap.TurnEnd, interrupted bool, _ backend.Host) *itemmap.TurnEnd {
	if interrupted && end.Status == itemmap.TurnFailed {
		end.Status = itemmap.TurnInterrupted
	}
	return end
}

// Drained: claude says everything on its output.
func (c *turnConn) Drained(backend.Host) {}

func (c *turnConn) Finish(interrupted bool, text, detail string) itemmap.Result {
	r := c.b.mapper.Finish(interrupted, text, detail)
	if c.held != nil {
		// claude ended a turn before the one it ran for a steered
		// message: its history and usage are the turn's too.
		if r.End != nil {
			r.End = mergeEnds(c.held, r.End)
		} else {
			r.End = c.held
			r.End.Status = itemmap.TurnFailed
			if interrupted {
				r.End.Status = itemmap.TurnInterrupted
			}
		}
		c.held = nil
	}
	return r
}

func (c *turnConn) Reap() string {
	c.b.Reap(c.p)
	return c.b.Tail(c.p)
}

// respond answers a permission request.
func respond(p *cliproc.Proc, requestID string, d backend.Decision) {
	resp := map[string]any{"behavior": "deny", "message": d.Message}
	if d.Allow {
		resp = map[string]any{"behavior": "allow"}
		if len(d.UpdatedInput) > 0 {
			resp["updatedInput"] = d.UpdatedInput
		}
		// Claude Code is told a grant only where its own rule means
		// exactly the grant (a whole tool by its plain name): a rule for
		// this session only, as Claude Code keeps its own "don't ask
		// again this session". Every other grant spbridge keeps: Claude
		// Code asks again, and spbridge answers.
		if g := d.Always; g != nil {
			if rule, ok := sessionRule(*g); ok {
				resp["updatedPermissions"] = []any{map[string]any{"type": "addRules", "rules": []any{rule},
					"behavior": "allow", "destination": "session"}}
			}
		}
	} else if d.Message == "" {
		resp["message"] = "Denied from spbridge."
	}
	post(p, map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID, "response": resp}})
}

func maxLine(n int) int {
	if n <= 0 {
		return cliproc.DefaultMaxLine
	}
	return n
}
