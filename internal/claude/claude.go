// Package claude runs conversation turns on Claude Code: it supervises one
// `claude` process per open conversation, speaks its stream-json and control
// protocol on stdin and stdout, and maps what it prints onto items with
// itemmap.
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
	"time"

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
	inTurn atomic.Bool
	// starting is held while a process is started: a mode or effort asked
	// for meanwhile is either on its command line or told to the process
	// once it runs, never lost between the two.
	starting sync.Mutex

	mu       sync.Mutex
	session  string            // the CLI's session id, once it reported one
	mode     string            // the mode asked for, or the CLI's
	cliMode  string            // the mode the CLI last reported
	toldMode string            // the mode Events.ModeChanged last heard
	modeSeq  int               // numbers the set_permission_mode requests
	commands []backend.Command // the CLI's commands, once it said them
	models   []backend.Model   // the CLI's models, once it said them
	effort   string            // the reasoning effort asked for, "" for the CLI's
	mcpSaid  map[string]bool   // MCP servers whose failure this process noticed (read by the line reader only)
	mcpFile  func()            // removes the running process's --mcp-config file, until it has read it
}

// Name is the backend's name as the command line and the audit log say it.
func (b *Backend) Name() string { return "claude" }

// New returns a backend; nothing starts until the first Turn.
func New(opts Options) *Backend {
	mode := opts.Mode
	if mode == "" {
		mode = ModeDefault
	}
	b := &Backend{CLI: backend.NewCLI("claude", opts, ErrNotFound), mode: mode, cliMode: mode, toldMode: mode, session: opts.Resume}
	b.Environ = func() []string { return withTodoTools(b.Opts.Env) }
	return b
}

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
func (b *Backend) args() []string {
	a := []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json",
		"--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio"}
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
	}
	return a
}

// start starts the claude process and returns it. The turn goes on with
// that process even when a Close has stopped it meanwhile (the message's
// write then fails): reading the running process back could find none.
func (b *Backend) start() (*cliproc.Proc, error) {
	b.starting.Lock()
	defer b.starting.Unlock()
	args := b.args()
	remove := func() {}
	if len(b.Opts.MCPServers) > 0 {
		// The servers' env and headers may be secrets: they go in a
		// private file, never on argv, removed once claude read it
		// (mcpconfig.go).
		path, rm, err := b.writeMCPConfig()
		if err != nil {
			return nil, err
		}
		args = append(args, "--mcp-config", path)
		remove = rm
	}
	b.mu.Lock()
	b.mcpFile = remove
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
	b.mcpSaid = make(map[string]bool)
	b.mapper = itemmap.NewClaude(b.Opts.NewID)
	// The SDKs open with initialize; the CLI answers with its capabilities.
	post(p, map[string]any{"type": "control_request", "request_id": initRequestID,
		"request": map[string]any{"subtype": "initialize"}})
	return p, nil
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

// userMessage is the stream-json line that carries msg.
func userMessage(msg backend.Message) map[string]any {
	content := []any{map[string]any{"type": "text", "text": msg.Text}}
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
	b.inTurn.Store(true)
	defer b.inTurn.Store(false)
	interruptCh, done := b.BeginTurn(msg.Text)
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
	data = append(data, '\n')
	for attempt := 0; ; attempt++ {
		p := b.Proc()
		if p == nil {
			var err error
			if p, err = b.start(); err != nil {
				text := "Claude Code could not be started: " + err.Error()
				if errors.Is(err, ErrNotFound) {
					text = NotFoundText
				}
				return failBeforeStart(b.Opts.NewID, h, text, err.Error())
			}
		}
		end, err := b.sendMessage(ctx, p, data, h, interruptCh)
		switch {
		case end != nil:
			return end
		case err == nil:
			return b.loop(ctx, p, h, interruptCh)
		}
		closed := b.Proc() != p
		b.Reap(p)
		detail := b.Tail(p)
		if closed {
			// Close stopped the CLI while the message was written.
			return failBeforeStart(b.Opts.NewID, h, "Claude Code was stopped before it took the message.", detail)
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

// sendMessage writes the message line to p and waits until it is written:
// it returns the write's error, or, when the CLI did not read it within the
// idle timeout or the turn was interrupted meanwhile, the turn's end (the
// process is then stopped: it holds part of a line).
func (b *Backend) sendMessage(ctx context.Context, p *cliproc.Proc, data []byte, h backend.Host, interruptCh <-chan struct{}) (*itemmap.TurnEnd, error) {
	sent := p.Send(data)
	idle := time.NewTimer(b.Opts.IdleTimeout)
	defer idle.Stop()
	select {
	case err := <-sent:
		return nil, err
	case <-idle.C:
		b.Reap(p) // closes stdin: the write ends
		detail := b.Tail(p)
		return failBeforeStart(b.Opts.NewID, h, fmt.Sprintf("Claude Code did not read the message for %v; it was stopped.", b.Opts.IdleTimeout), detail), nil
	case <-interruptCh:
	case <-ctx.Done():
	}
	b.Reap(p)
	return backend.InterruptedBeforeStart(b.Opts.NewID, h), nil
}

// failBeforeStart reports a turn that failed before the CLI took it.
func failBeforeStart(newID itemmap.IDFunc, h backend.Host, text, detail string) *itemmap.TurnEnd {
	return backend.FailBeforeStart(newID, h, text, detail)
}

// loop reads the output of p, which took the message, until the turn ends.
func (b *Backend) loop(ctx context.Context, p *cliproc.Proc, h backend.Host, interruptCh <-chan struct{}) *itemmap.TurnEnd {
	m := b.mapper
	approvals := backend.NewApprovals(ctx, h)
	defer approvals.Close()
	// The turn's changes go through a merger (permission requests, asked
	// on their own goroutines, straight to the host).
	mh := backend.NewMerger(h)
	defer mh.Flush()
	h = mh

	// Nothing the turn's lines bring needs to go out before the rest of
	// their read: the host holds it until the Idle after each read's lines
	// (below), from the turn's first line on.
	backend.Idle(h)

	idle := time.NewTimer(b.Opts.IdleTimeout)
	defer idle.Stop()

	// Permission requests asked between turns may be answered now.
	var bgAnswers <-chan backend.Answer
	asks := b.asks(p, false)
	if asks != nil {
		bgAnswers = asks.Answers()
	}
	resetIdle := func() {
		backend.ResetIdle(idle, b.Opts.IdleTimeout, approvals.Pending() == 0 && (asks == nil || asks.Pending() == 0))
	}

	interrupted := false
	var escalate <-chan time.Time
	step := 0
	ctxDone := ctx.Done()
	startInterrupt := func() {
		if interrupted {
			return
		}
		interrupted = true
		for _, id := range approvals.Withdraw() {
			m.Answered(id, false)
			respond(p, id, backend.Decision{Message: "The turn was interrupted."})
		}
		post(p, map[string]any{"type": "control_request", "request_id": "spbridge-interrupt",
			"request": map[string]any{"subtype": "interrupt"}})
		escalate = time.After(b.Opts.Grace)
	}

	emit := func(r itemmap.Result) *itemmap.TurnEnd {
		b.apply(p, h, r)
		if len(r.Approvals) > 0 {
			mh.Flush() // the changes before the request
		}
		for _, a := range r.Approvals {
			if interrupted {
				m.Answered(a.RequestID, false)
				respond(p, a.RequestID, backend.Decision{Message: "The turn was interrupted."})
				continue
			}
			approvals.Ask(a)
		}
		return r.End
	}

	for {
		select {
		case _, open := <-p.Ready():
			// Every line read so far, each borrowed until the next: the
			// mapper keeps nothing of it.
			for line, ok := p.Next(); ok; line, ok = p.Next() {
				if line.Oversize > 0 {
					backend.Notice(nil, h, fmt.Sprintf("Skipped a line of %d bytes from Claude Code: longer than the %d-byte limit.", line.Oversize, maxLine(b.Opts.MaxLine)))
					continue
				}
				b.observe(line.Data, h)
				b.answerWaiter(line.Data)
				r := m.Line(line.Data)
				if r.Skipped {
					b.Skipped()
				}
				if end := emit(r); end != nil {
					if interrupted && end.Status == itemmap.TurnFailed {
						end.Status = itemmap.TurnInterrupted
					}
					return end
				}
			}
			if !open {
				return b.exited(p, h, interrupted)
			}
			resetIdle()
			backend.Idle(h) // what the lines brought may go out now
		case a := <-approvals.Answers():
			if !approvals.Take(a) {
				continue
			}
			m.Answered(a.RequestID, a.Decision.Allow)
			respond(p, a.RequestID, a.Decision)
			resetIdle()
		case a := <-bgAnswers:
			if asks.Take(a) {
				m.Answered(a.RequestID, a.Decision.Allow)
				respond(p, a.RequestID, a.Decision)
				resetIdle()
			}
		case <-interruptCh:
			startInterrupt()
		case <-ctxDone:
			ctxDone = nil
			startInterrupt()
		case <-escalate:
			step++
			switch step {
			case 1:
				p.Signal(syscall.SIGINT)
				escalate = time.After(b.Opts.Grace)
			default:
				escalate = nil
				go p.Close(b.Opts.Grace) // stdin closed, then SIGINT, SIGTERM, SIGKILL; Lines closes
			}
		case <-idle.C:
			if approvals.Pending() > 0 || (asks != nil && asks.Pending() > 0) {
				continue
			}
			text := fmt.Sprintf("Claude Code printed nothing for %v; it was stopped.", b.Opts.IdleTimeout)
			b.Reap(p)
			detail := b.Tail(p)
			r := m.Finish(false, text, detail)
			if emit(r) == nil {
				// Not a word of the turn: the CLI never started it.
				return failBeforeStart(b.Opts.NewID, h, text, detail)
			}
			return r.End
		}
	}
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
			if rule, ok := g.ClaudeRule(); ok {
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

// exited ends a turn whose CLI, p, stopped writing: it exited, crashed or
// was stopped. The failure's text says how it ended; its stderr goes in the
// detail only.
func (b *Backend) exited(p *cliproc.Proc, h backend.Host, interrupted bool) *itemmap.TurnEnd {
	m := b.mapper
	<-p.Done()
	text := backend.ExitedText("Claude Code", p)
	b.Reap(p)
	detail := b.Tail(p)
	r := m.Finish(interrupted, text, detail)
	for _, c := range r.Changes {
		h.Change(c)
	}
	if r.End == nil {
		// The CLI ended between turns' output: the turn never started.
		return failBeforeStart(b.Opts.NewID, h, text, detail)
	}
	return r.End
}

func maxLine(n int) int {
	if n <= 0 {
		return cliproc.DefaultMaxLine
	}
	return n
}
