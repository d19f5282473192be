package codex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/claude"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Provider is the archive's provider name for turns run on the Codex CLI.
const Provider = "codex"

// Defaults for Options.
const (
	DefaultSandbox     = "workspace-write"
	DefaultIdleTimeout = 10 * time.Minute
	DefaultGrace       = 5 * time.Second
)

// Options configure a Backend.
type Options struct {
	// Program is the codex executable. Empty: $SPBRIDGE_CODEX, else codex
	// on PATH.
	Program string
	// Dir is the working folder the CLI runs in.
	Dir string
	// Model is passed as -m when set.
	Model string
	// Env is the CLI's complete environment; nil uses spbridge's own.
	Env []string
	// CodexHome, when set, is the CODEX_HOME the CLI runs with (its
	// configuration and log-in); otherwise the user's own.
	CodexHome string
	// Sandbox is the sandbox mode: read-only, workspace-write (default) or
	// danger-full-access.
	Sandbox string
	// Transport is how codex is driven: "app-server" (default: one
	// long-lived `codex app-server` per open, which streams text, asks for
	// approvals and interrupts without dying) or "exec" (one `codex exec
	// --json` process a turn).
	Transport string
	// IdleTimeout ends a turn whose CLI printed nothing for this long.
	IdleTimeout time.Duration
	// Grace is how long an interrupt waits at each step (SIGINT, SIGTERM,
	// SIGKILL).
	Grace time.Duration
	// MaxLine is the longest stdout line read (cliproc's default when 0).
	MaxLine int
	// NewID names new items (random UUIDs when nil).
	NewID itemmap.IDFunc
}

// Backend runs the turns of one open conversation on the Codex CLI, over
// one of two transports. With app-server, one `codex app-server` process
// carries the thread and every turn (JSON-RPC on stdin and stdout). With
// exec, each turn is one `codex exec --json` process (the first starts a
// thread, later ones `codex exec resume` it), with the message on stdin.
// Interrupt may be called from another goroutine while Turn runs.
type Backend struct {
	opts   Options
	mapper *itemmap.Codex // exec: one for the thread (codex reports its running total)
	app    appState

	mu          sync.Mutex
	proc        *cliproc.Proc
	thread      string
	interruptCh chan struct{}
	program     string
	version     string
	skipped     int
	lastTail    string
	lastExit    string
	model       string        // the model the thread runs on, as codex said
	echoes      claude.Echoes // prefixed messages sent, to cut out of stderr
}

// withModel names the model a turn ran on, for the price table and the
// record: what the app-server said the thread runs on, else the model asked
// for, else the one codex's configuration names (what codex exec runs when
// not told one; it does not say).
func (b *Backend) withModel(end *itemmap.TurnEnd) *itemmap.TurnEnd {
	if end != nil && end.Model == "" {
		b.mu.Lock()
		end.Model = b.model
		if end.Model == "" {
			end.Model = b.opts.Model
		}
		b.mu.Unlock()
		if end.Model == "" {
			end.Model = configModel(b.env())
		}
	}
	return end
}

// New returns a backend; nothing starts until the first Turn.
func New(opts Options) *Backend {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Sandbox == "" {
		opts.Sandbox = DefaultSandbox
	}
	if opts.Transport == "" {
		opts.Transport = TransportAppServer
	}
	return &Backend{opts: opts, mapper: itemmap.NewCodex(opts.NewID), app: appState{mapper: itemmap.NewCodexApp(opts.NewID)}}
}

// Name is the backend's name.
func (b *Backend) Name() string { return "codex" }

// Program returns the codex executable the backend runs.
func (b *Backend) Program() (string, error) {
	if b.program != "" {
		return b.program, nil
	}
	p, err := Program(b.opts.Program)
	if err != nil {
		return "", err
	}
	b.program = p
	return p, nil
}

// env is the CLI's environment.
func (b *Backend) env() []string {
	env := b.opts.Env
	if env == nil {
		env = os.Environ()
	}
	if b.opts.CodexHome != "" {
		env = append(env[:len(env):len(env)], "CODEX_HOME="+b.opts.CodexHome)
	}
	return env
}

// Version returns the first line of `codex --version`, asking once.
func (b *Backend) Version() string {
	if b.version != "" {
		return b.version
	}
	path, err := b.Program()
	if err != nil {
		return ""
	}
	b.version = cliproc.Version(path, b.env())
	return b.version
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
	b.mu.Lock()
	b.opts.Model = model
	b.model = "" // the next turn runs on the new one
	b.mu.Unlock()
}

// SkippedLines returns how many stdout lines were not events the mapper
// knows.
func (b *Backend) SkippedLines() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.skipped
}

// StderrTail returns the end of the running or last process's stderr.
func (b *Backend) StderrTail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil {
		return b.echoes.Clean(string(b.proc.StderrTail()))
	}
	return b.lastTail
}

// ExitStatus says how the last codex process ended ("" while one runs).
func (b *Backend) ExitStatus() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil {
		return ""
	}
	return b.lastExit
}

// Interrupt stops the running turn: codex gets SIGINT (its JSON mode has no
// other way), then SIGTERM and SIGKILL if it does not end. Every item so far
// is kept and the thread is resumed by the next turn.
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

// Close ends a running codex process, if any.
func (b *Backend) Close() error {
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	p.CloseStdin() // the app-server ends at the end of its input
	err := p.Close(b.opts.Grace)
	var ee *cliproc.ExitError
	if errors.As(err, &ee) || errors.Is(err, cliproc.ErrWaitDelay) {
		return nil
	}
	return err
}

// args builds the command line of a turn. The message never goes on it: it
// is read from stdin ("-").
func (b *Backend) args(images []string) []string {
	a := []string{"-c", fmt.Sprintf("sandbox_mode=%q", b.opts.Sandbox), "exec"}
	if b.thread != "" {
		a = append(a, "resume")
	}
	a = append(a, "--json")
	if b.opts.Model != "" {
		a = append(a, "-m", b.opts.Model)
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

// writeImages stores a turn's images where codex can read them, named by
// their hash, in a private temporary folder the caller removes.
func writeImages(images []claude.Image) (string, []string, error) {
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
// claude.Backend.Turn. Commands run inside the sandbox without asking; the
// app-server asks for what needs more (a command outside the sandbox, a
// patch outside the workspace), while exec has no one to ask and codex
// refuses it.
func (b *Backend) Turn(ctx context.Context, msg claude.Message, h claude.Host) *itemmap.TurnEnd {
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

	path, err := b.Program()
	if err != nil {
		return failBeforeStart(b.opts.NewID, h, NotFoundText, err.Error())
	}
	if b.opts.Transport == TransportAppServer {
		return b.withModel(b.appTurn(ctx, msg, h, interruptCh))
	}
	dir, images, err := writeImages(msg.Images)
	if err != nil {
		return failBeforeStart(b.opts.NewID, h, "The images could not be passed to codex: "+err.Error(), "")
	}
	if dir != "" {
		defer os.RemoveAll(dir)
	}
	p, err := cliproc.Start(cliproc.Config{Path: path, Args: b.args(images), Dir: b.opts.Dir, Env: b.env(), MaxLine: b.opts.MaxLine})
	if err != nil {
		text := "The Codex CLI could not be started: " + err.Error()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			text = NotFoundText
		}
		return failBeforeStart(b.opts.NewID, h, text, err.Error())
	}
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()
	// codex reads the prompt to the end of stdin (an open stdin hangs it):
	// the loop closes stdin once the prompt is written.
	sent := p.Send([]byte(msg.Text))
	return b.withModel(b.loop(ctx, p, sent, h, interruptCh))
}

func failBeforeStart(newID itemmap.IDFunc, h claude.Host, text, detail string) *itemmap.TurnEnd {
	return claude.FailBeforeStart(newID, h, text, detail)
}

// loop runs a turn of codex exec, p, until it ends; sent delivers the
// outcome of writing the prompt. A prompt codex does not read counts
// toward the idle timeout, and an interrupt or Close ends it.
func (b *Backend) loop(ctx context.Context, p *cliproc.Proc, sent <-chan error, h claude.Host, interruptCh <-chan struct{}) *itemmap.TurnEnd {
	m := b.mapper
	taken := false // codex read the whole prompt
	idle := time.NewTimer(b.opts.IdleTimeout)
	defer idle.Stop()
	interrupted := false
	var escalate <-chan time.Time
	ctxDone := ctx.Done()
	var end *itemmap.TurnEnd
	emit := func(r itemmap.Result) {
		for _, c := range r.Changes {
			h.Change(c)
		}
		if r.Session != nil && r.Session.ID != "" {
			b.mu.Lock()
			b.thread = r.Session.ID
			b.mu.Unlock()
		}
		if r.End != nil {
			end = r.End
		}
	}
	stop := func() {
		if interrupted {
			return
		}
		interrupted = true
		p.KillEscaped(true) // the commands codex detached: SIGINT does not reach them
		p.Signal(syscall.SIGINT)
		escalate = time.After(b.opts.Grace)
	}
	for {
		select {
		case err := <-sent:
			sent = nil
			taken = err == nil
			p.CloseStdin()
		case line, ok := <-p.Lines():
			if !ok {
				return b.ended(p, h, end, interrupted)
			}
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(b.opts.IdleTimeout)
			if line.Oversize > 0 {
				it := archive.NewItem(archive.TypeNotice)
				it.Set("text", fmt.Sprintf("Skipped a line of %d bytes from codex: longer than the limit.", line.Oversize))
				h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
				continue
			}
			r := m.Line(line.Data)
			if r.Skipped {
				b.mu.Lock()
				b.skipped++
				b.mu.Unlock()
			}
			emit(r)
		case <-interruptCh:
			stop()
		case <-ctxDone:
			ctxDone = nil
			stop()
		case <-escalate:
			escalate = nil
			go p.Close(b.opts.Grace) // SIGINT again, SIGTERM, SIGKILL
		case <-idle.C:
			text := fmt.Sprintf("codex printed nothing for %v; it was stopped.", b.opts.IdleTimeout)
			if !taken {
				text = fmt.Sprintf("codex did not read the message for %v; it was stopped.", b.opts.IdleTimeout)
			}
			b.reap(p) // closes stdin: a write codex does not read ends
			detail := b.tail(p)
			r := m.Finish(false, text, detail)
			emit(r)
			if r.End != nil {
				return r.End
			}
			// Not a word of the turn: codex never started it.
			return failBeforeStart(b.opts.NewID, h, text, detail)
		}
	}
}

// ended finishes a turn whose codex process ended: with the turn's end when
// codex reported it, else interrupted or failed.
func (b *Backend) ended(p *cliproc.Proc, h claude.Host, end *itemmap.TurnEnd, interrupted bool) *itemmap.TurnEnd {
	<-p.Done()
	b.reap(p)
	if end != nil {
		if interrupted && end.Status == itemmap.TurnCompleted {
			// codex exec may end a turn it was told to stop as completed
			// (SIGINT came while it finished its reply); the user stopped
			// it, and what it printed is kept.
			end.Status = itemmap.TurnInterrupted
			it := archive.NewItem(archive.TypeNotice)
			if b.opts.NewID != nil {
				it.Set("id", b.opts.NewID())
			}
			it.Set("text", "Interrupted.")
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
		}
		return end
	}
	text := "codex exited before the turn ended"
	if err := p.Err(); err != nil {
		text += " (" + err.Error() + ")"
	}
	text += "."
	detail := b.tail(p)
	r := b.mapper.Finish(interrupted, text, detail)
	for _, c := range r.Changes {
		h.Change(c)
	}
	switch {
	case r.End != nil:
		return r.End
	case interrupted:
		return claude.InterruptedBeforeStart(b.opts.NewID, h)
	}
	return failBeforeStart(b.opts.NewID, h, text, detail)
}

func (b *Backend) reap(p *cliproc.Proc) {
	err := p.Close(b.opts.Grace)
	exit := "exit status 0"
	if err != nil {
		exit = err.Error()
	}
	t := b.tail(p)
	b.mu.Lock()
	if b.proc == p {
		b.proc = nil
	}
	b.lastTail, b.lastExit = t, exit
	b.mu.Unlock()
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
