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
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Provider is the archive's provider name for turns run on Claude Code.
const Provider = "claude-code"

// Defaults for Options.
const (
	DefaultIdleTimeout = 10 * time.Minute
	DefaultGrace       = 5 * time.Second
)

// Options configure a Backend.
type Options struct {
	// Program is the claude executable. Empty: $SPBRIDGE_CLAUDE, else
	// "claude" on PATH.
	Program string
	// Dir is the working folder the CLI runs in.
	Dir string
	// Model is passed as --model when set.
	Model string
	// Env is the CLI's complete environment; nil uses spbridge's own.
	Env []string
	// ExtraArgs are added to the command line (after spbridge's own flags).
	ExtraArgs []string
	// IdleTimeout ends a turn whose CLI printed nothing for this long while
	// no permission request was waiting. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Grace is how long an interrupt waits for the CLI at each step before
	// escalating (control interrupt, SIGINT, SIGTERM, SIGKILL). Default
	// DefaultGrace.
	Grace time.Duration
	// MaxLine is the longest stdout line read (cliproc's default when 0).
	MaxLine int
	// NewID names new items (random UUIDs when nil).
	NewID itemmap.IDFunc
}

// Image is an image attached to a message.
type Image struct {
	MimeType string
	Data     []byte
}

// Message is what the user sends in a turn. Text is exactly what the CLI
// receives (the caller adds any prefix).
type Message struct {
	Text   string
	Images []Image
}

// Decision is the host's answer to a permission request.
type Decision struct {
	Allow        bool
	UpdatedInput json.RawMessage // optional, with Allow
	Message      string          // optional, with a denial
}

// Host receives a turn's item changes and answers its permission requests.
type Host interface {
	// Change is called for every item change, in order, as it happens.
	Change(itemmap.Change)
	// Approve asks about a permission request and returns the answer. It may
	// block; ctx is cancelled when the turn is interrupted or ends.
	Approve(ctx context.Context, a itemmap.Approval) Decision
}

// Backend runs the turns of one open conversation on one claude process,
// restarting it (with --resume) when it dies. It is safe to call Interrupt
// from another goroutine while Turn runs; Turn itself is not reentrant.
type Backend struct {
	opts Options

	mu          sync.Mutex
	proc        *cliproc.Proc
	mapper      *itemmap.Claude
	session     string // the CLI's session id, once it reported one
	interruptCh chan struct{}
	program     string
	version     string
	skipped     int    // stdout lines that were not events, over every turn
	lastTail    string // stderr tail of the last process that ended
	lastExit    string // how the last process that ended, ended
	echoes      Echoes // prefixed messages sent, to cut out of stderr
}

// Name is the backend's name as the command line and the audit log say it.
func (b *Backend) Name() string { return "claude" }

// Version returns what `claude --version` prints (its first line), asking
// once; "" when it cannot be run.
func (b *Backend) Version() string {
	if b.version != "" {
		return b.version
	}
	path, err := b.Program()
	if err != nil {
		return ""
	}
	b.version = cliproc.Version(path, b.opts.Env)
	return b.version
}

// StderrTail returns the end of the running process's stderr, or of the
// last one's when none runs.
func (b *Backend) StderrTail() string {
	b.mu.Lock()
	p := b.proc
	last := b.lastTail
	b.mu.Unlock()
	if p != nil {
		return b.tail(p)
	}
	return last
}

// ExitStatus says how the last claude process ended ("" while one runs or
// none ran).
func (b *Backend) ExitStatus() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil {
		return ""
	}
	return b.lastExit
}

// SkippedLines returns how many stdout lines were not events the mapper
// knows (not JSON, or of a kind it does not show); they are skipped.
func (b *Backend) SkippedLines() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.skipped
}

// New returns a backend; nothing starts until the first Turn.
func New(opts Options) *Backend {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	return &Backend{opts: opts}
}

// ErrNotFound is matched by the error of a claude program that is not
// installed.
var ErrNotFound = errors.New("claude not found")

// Program returns the claude executable the backend runs: Options.Program,
// else $SPBRIDGE_CLAUDE, else claude found on PATH.
func (b *Backend) Program() (string, error) {
	if b.program != "" {
		return b.program, nil
	}
	p := b.opts.Program
	if p == "" {
		p = os.Getenv("SPBRIDGE_CLAUDE")
	}
	if p == "" {
		p = "claude"
	}
	path, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	b.program = path
	return path, nil
}

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
	if b.opts.Model != "" {
		a = append(a, "--model", b.opts.Model)
	}
	if b.session != "" {
		a = append(a, "--resume", b.session)
	}
	return append(a, b.opts.ExtraArgs...)
}

// start starts the claude process.
func (b *Backend) start() error {
	path, err := b.Program()
	if err != nil {
		return err
	}
	p, err := cliproc.Start(cliproc.Config{
		Path:    path,
		Args:    b.args(),
		Dir:     b.opts.Dir,
		Env:     b.opts.Env,
		MaxLine: b.opts.MaxLine,
	})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		return err
	}
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()
	b.mapper = itemmap.NewClaude(b.opts.NewID)
	// The SDKs open with initialize; the CLI answers with its capabilities.
	post(p, map[string]any{"type": "control_request", "request_id": "spbridge-init",
		"request": map[string]any{"subtype": "initialize"}})
	return nil
}

// post queues v as a line for p's stdin and returns at once, with the
// channel that receives the write's outcome: a CLI that stops reading its
// input never holds the turn, whose idle timeout, interrupt and Close still
// work (Close ends the write).
func post(p *cliproc.Proc, v any) <-chan error {
	data, err := json.Marshal(v)
	if err != nil {
		ch := make(chan error, 1)
		ch <- err
		return ch
	}
	return p.Send(append(data, '\n'))
}

// userMessage is the stream-json line that carries msg.
func userMessage(msg Message) map[string]any {
	content := []any{map[string]any{"type": "text", "text": msg.Text}}
	for _, img := range msg.Images {
		content = append(content, map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": img.MimeType, "data": base64.StdEncoding.EncodeToString(img.Data)}})
	}
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil, "session_id": ""}
}

// Interrupt asks the running turn to stop. The CLI is asked through its
// control protocol and keeps running for the next turn; if it does not end
// the turn within the grace period it is signalled (SIGINT, SIGTERM,
// SIGKILL). Without a running turn it does nothing.
func (b *Backend) Interrupt() {
	b.mu.Lock()
	ch := b.interruptCh
	b.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// SetModel chooses the model for the next turns: a running claude is told
// through its control protocol, a later one gets --model.
func (b *Backend) SetModel(model string) {
	b.mu.Lock()
	b.opts.Model = model
	p := b.proc
	b.mu.Unlock()
	if p != nil {
		post(p, map[string]any{"type": "control_request", "request_id": "spbridge-model",
			"request": map[string]any{"subtype": "set_model", "model": model}})
	}
}

// Model returns the model asked for ("" for the CLI's default).
func (b *Backend) Model() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opts.Model
}

// Close ends the claude process, if one runs, and reaps it.
func (b *Backend) Close() error {
	b.mu.Lock()
	p := b.proc
	b.proc = nil
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	p.CloseStdin()
	err := p.Close(b.opts.Grace)
	var ee *cliproc.ExitError
	if errors.As(err, &ee) || errors.Is(err, cliproc.ErrWaitDelay) {
		// How a CLI we stopped ended is no failure of closing it.
		return nil
	}
	return err
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
func (b *Backend) Turn(ctx context.Context, msg Message, h Host) *itemmap.TurnEnd {
	interruptCh := make(chan struct{}, 1)
	b.mu.Lock()
	b.interruptCh = interruptCh
	b.echoes.Add(msg.Text)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.interruptCh = nil
		b.mu.Unlock()
	}()

	data, err := json.Marshal(userMessage(msg))
	if err != nil {
		return failBeforeStart(b.opts.NewID, h, "The message could not be encoded: "+err.Error(), "")
	}
	data = append(data, '\n')
	for attempt := 0; ; attempt++ {
		b.mu.Lock()
		p := b.proc
		b.mu.Unlock()
		if p == nil {
			if err := b.start(); err != nil {
				text := "Claude Code could not be started: " + err.Error()
				if errors.Is(err, ErrNotFound) {
					text = NotFoundText
				}
				return failBeforeStart(b.opts.NewID, h, text, err.Error())
			}
			b.mu.Lock()
			p = b.proc
			b.mu.Unlock()
		}
		end, err := b.sendMessage(ctx, p, data, h, interruptCh)
		switch {
		case end != nil:
			return end
		case err == nil:
			return b.loop(ctx, p, h, interruptCh)
		}
		b.mu.Lock()
		closed := b.proc != p
		b.mu.Unlock()
		b.reap(p)
		detail := b.tail(p)
		if closed {
			// Close stopped the CLI while the message was written.
			return failBeforeStart(b.opts.NewID, h, "Claude Code was stopped before it took the message.", detail)
		}
		// The process died between turns: start again, resuming, once.
		if attempt > 0 {
			// How it ended in the text; what it said (stderr) only in the
			// detail.
			text := "Claude Code did not take the message: " + err.Error()
			if perr := p.Err(); perr != nil {
				text += " (" + perr.Error() + ")"
			}
			return failBeforeStart(b.opts.NewID, h, text+".", detail)
		}
	}
}

// sendMessage writes the message line to p and waits until it is written:
// it returns the write's error, or, when the CLI did not read it within the
// idle timeout or the turn was interrupted meanwhile, the turn's end (the
// process is then stopped: it holds part of a line).
func (b *Backend) sendMessage(ctx context.Context, p *cliproc.Proc, data []byte, h Host, interruptCh <-chan struct{}) (*itemmap.TurnEnd, error) {
	sent := p.Send(data)
	idle := time.NewTimer(b.opts.IdleTimeout)
	defer idle.Stop()
	select {
	case err := <-sent:
		return nil, err
	case <-idle.C:
		b.reap(p) // closes stdin: the write ends
		detail := b.tail(p)
		return failBeforeStart(b.opts.NewID, h, fmt.Sprintf("Claude Code did not read the message for %v; it was stopped.", b.opts.IdleTimeout), detail), nil
	case <-interruptCh:
	case <-ctx.Done():
	}
	b.reap(p)
	return InterruptedBeforeStart(b.opts.NewID, h), nil
}

// InterruptedBeforeStart reports a turn interrupted before the CLI took
// it: an "Interrupted." notice and an interrupted TurnEnd marked
// NotStarted.
func InterruptedBeforeStart(newID itemmap.IDFunc, h Host) *itemmap.TurnEnd {
	it := archive.NewItem(archive.TypeNotice)
	if newID != nil {
		it.Set("id", newID())
	}
	it.Set("text", "Interrupted.")
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: itemmap.TurnInterrupted, NotStarted: true}
}

// failBeforeStart reports a turn that failed before the CLI took it.
func failBeforeStart(newID itemmap.IDFunc, h Host, text, detail string) *itemmap.TurnEnd {
	return FailBeforeStart(newID, h, text, detail)
}

// FailBeforeStart reports a turn that failed before the CLI took it: one
// failure item (text, and detail when it says more) and a failed TurnEnd
// with nothing else, marked NotStarted. Such a turn establishes no CLI
// session. The detail is masked (cliproc.MaskCredentials): it may quote
// the CLI's stderr.
func FailBeforeStart(newID itemmap.IDFunc, h Host, text, detail string) *itemmap.TurnEnd {
	it := archive.NewItem(archive.TypeFailure)
	if newID != nil {
		it.Set("id", newID())
	}
	it.Set("text", text)
	if detail = cliproc.MaskCredentials(detail); detail != "" && detail != text {
		it.Set("detail", detail)
	}
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: itemmap.TurnFailed, NotStarted: true}
}

// reap closes p, a process that ended or must end, keeping the session id
// so the next start resumes it.
func (b *Backend) reap(p *cliproc.Proc) {
	b.mu.Lock()
	if b.proc == p {
		b.proc = nil
	}
	b.mu.Unlock()
	err := p.Close(b.opts.Grace)
	exit := "exit status 0"
	if err != nil {
		exit = err.Error()
	}
	t := b.tail(p)
	b.mu.Lock()
	b.lastTail, b.lastExit = t, exit
	b.mu.Unlock()
}

type answer struct {
	requestID string
	decision  Decision
}

// loop reads the output of p, which took the message, until the turn ends.
func (b *Backend) loop(ctx context.Context, p *cliproc.Proc, h Host, interruptCh <-chan struct{}) *itemmap.TurnEnd {
	m := b.mapper
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer)
	pending := 0
	waiting := make(map[string]bool) // permission requests the host has not answered
	var approvals sync.WaitGroup
	defer approvals.Wait()

	idle := time.NewTimer(b.opts.IdleTimeout)
	defer idle.Stop()
	resetIdle := func() {
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		if pending == 0 {
			idle.Reset(b.opts.IdleTimeout)
		}
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
		cancel() // withdraws the questions to the host
		for id := range waiting {
			m.Answered(id, false)
			respond(p, id, Decision{Message: "The turn was interrupted."})
		}
		clear(waiting)
		pending = 0
		post(p, map[string]any{"type": "control_request", "request_id": "spbridge-interrupt",
			"request": map[string]any{"subtype": "interrupt"}})
		escalate = time.After(b.opts.Grace)
	}

	emit := func(r itemmap.Result) *itemmap.TurnEnd {
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
		for _, a := range r.Approvals {
			if interrupted {
				m.Answered(a.RequestID, false)
				respond(p, a.RequestID, Decision{Message: "The turn was interrupted."})
				continue
			}
			pending++
			waiting[a.RequestID] = true
			approvals.Add(1)
			go func(a itemmap.Approval) {
				defer approvals.Done()
				d := h.Approve(turnCtx, a)
				select {
				case answers <- answer{a.RequestID, d}:
				case <-turnCtx.Done():
				}
			}(a)
		}
		return r.End
	}

	for {
		select {
		case line, ok := <-p.Lines():
			if !ok {
				return b.exited(p, h, interrupted)
			}
			resetIdle()
			if line.Oversize > 0 {
				it := archive.NewItem(archive.TypeNotice)
				it.Set("text", fmt.Sprintf("Skipped a line of %d bytes from Claude Code: longer than the %d-byte limit.", line.Oversize, maxLine(b.opts.MaxLine)))
				h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
				continue
			}
			r := m.Line(line.Data)
			if r.Skipped {
				b.mu.Lock()
				b.skipped++
				b.mu.Unlock()
			}
			if end := emit(r); end != nil {
				if interrupted && end.Status == itemmap.TurnFailed {
					end.Status = itemmap.TurnInterrupted
				}
				return end
			}
		case a := <-answers:
			if !waiting[a.requestID] {
				continue
			}
			delete(waiting, a.requestID)
			pending--
			m.Answered(a.requestID, a.decision.Allow)
			respond(p, a.requestID, a.decision)
			resetIdle()
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
				escalate = time.After(b.opts.Grace)
			default:
				escalate = nil
				go p.Close(b.opts.Grace) // stdin closed, then SIGINT, SIGTERM, SIGKILL; Lines closes
			}
		case <-idle.C:
			if pending > 0 {
				continue
			}
			text := fmt.Sprintf("Claude Code printed nothing for %v; it was stopped.", b.opts.IdleTimeout)
			b.reap(p)
			detail := b.tail(p)
			r := m.Finish(false, text, detail)
			if emit(r) == nil {
				// Not a word of the turn: the CLI never started it.
				return failBeforeStart(b.opts.NewID, h, text, detail)
			}
			return r.End
		}
	}
}

// respond answers a permission request.
func respond(p *cliproc.Proc, requestID string, d Decision) {
	resp := map[string]any{"behavior": "deny", "message": d.Message}
	if d.Allow {
		resp = map[string]any{"behavior": "allow"}
		if len(d.UpdatedInput) > 0 {
			resp["updatedInput"] = d.UpdatedInput
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
func (b *Backend) exited(p *cliproc.Proc, h Host, interrupted bool) *itemmap.TurnEnd {
	m := b.mapper
	<-p.Done()
	text := "Claude Code exited before the turn ended"
	if err := p.Err(); err != nil {
		text += " (" + err.Error() + ")"
	}
	text += "."
	b.reap(p)
	detail := b.tail(p)
	r := m.Finish(interrupted, text, detail)
	for _, c := range r.Changes {
		h.Change(c)
	}
	if r.End == nil {
		// The CLI ended between turns' output: the turn never started.
		return failBeforeStart(b.opts.NewID, h, text, detail)
	}
	return r.End
}

// tail is the end of p's stderr as it may be shown and stored: valid
// UTF-8, with the prefixed messages it was sent cut out and credentials
// masked.
func (b *Backend) tail(p *cliproc.Proc) string {
	b.mu.Lock()
	echoes := b.echoes
	b.mu.Unlock()
	return echoes.Clean(string(p.StderrTail()))
}

func maxLine(n int) int {
	if n <= 0 {
		return cliproc.DefaultMaxLine
	}
	return n
}
