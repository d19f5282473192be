package codex

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
)

// Transports.
const (
	TransportExec      = "exec"
	TransportAppServer = "app-server"
)

// appState is the app-server transport's side of a Backend: one long-lived
// `codex app-server` process carrying every turn of the open, its thread,
// and the requests in flight.
type appState struct {
	proc     *cliproc.Proc
	threaded bool              // proc has the thread (started or resumed)
	trusted  bool              // proc was started with the folder's own configuration
	mapper   *itemmap.CodexApp // one for the thread, across processes
	nextID   int64
	turnID   string
}

// errInterrupted ends the start of an app-server that the turn's interrupt
// cut short.
var errInterrupted = errors.New("interrupted")

// errAnswered is matched by the error of a request the app-server
// answered with an error.
var errAnswered = errors.New("codex app-server")

// appStart starts `codex app-server` unless Prepare did, and starts the
// thread on it, or resumes it when an earlier process of this open had
// one. An interrupt meanwhile returns errInterrupted.
func (b *Backend) appStart(ctx context.Context, h backend.Host, interruptCh <-chan struct{}) error {
	if b.app.proc == nil {
		if err := b.appLaunch(ctx, h, interruptCh); err != nil {
			return err
		}
	}
	return b.appThread(ctx, h, interruptCh)
}

// appLaunch starts `codex app-server`, says hello and asks for its models.
func (b *Backend) appLaunch(ctx context.Context, h backend.Host, interruptCh <-chan struct{}) error {
	trusted := b.Opts.Folder.Trusted(Name)
	p, err := b.Start(slices.Concat([]string{"-c", fmt.Sprintf("sandbox_mode=%q", b.preset().sandbox)}, planTool, trustArgs(b.Opts.Dir, trusted), []string{
		// The model may ask the user to choose (request_user_input, which
		// codex otherwise offers only in its plan mode): the editor
		// answers (item/tool/requestUserInput).
		"-c", "features.default_mode_request_user_input=true", "-c", "suppress_unstable_features_warning=true",
		"app-server"}))
	if err != nil {
		return err
	}
	b.app.proc, b.app.trusted = p, trusted
	if _, err := b.appCall(ctx, h, interruptCh, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "spbridge", "title": "spbridge", "version": "1"},
		// The experimental API has thread/backgroundTerminals/clean, the
		// only way to stop a command codex left running in the background,
		// and the raw response items of thread/start.
		"capabilities": map[string]any{"experimentalApi": true}}); err != nil {
		return err
	}
	b.appSend(map[string]any{"jsonrpc": "2.0", "method": "initialized"})
	return b.listModels(ctx, h, interruptCh)
}

// appThread starts the thread on the running app-server, or resumes the
// one of an earlier process.
func (b *Backend) appThread(ctx context.Context, h backend.Host, interruptCh <-chan struct{}) error {
	pr := b.preset()
	params := map[string]any{"cwd": b.Opts.Dir, "approvalPolicy": pr.approval, "sandbox": pr.sandbox}
	if model := b.Model(); model != "" {
		params["model"] = model
	}
	// The editor's MCP servers, secrets included, go in the request on
	// stdin, not on argv.
	cfg, skipped := mcpConfig(b.Opts.MCPServers)
	if cfg != nil {
		params["config"] = cfg
	}
	b.mcpSkippedNotice(h, skipped)
	method := "thread/start"
	if b.thread != "" {
		method = "thread/resume"
		params["threadId"] = b.thread
		params["excludeTurns"] = true
	} else {
		// The model's own tool calls and the outputs codex sends back, for
		// the history (rawResponseItem/completed). thread/resume has no
		// such switch: a resumed thread's history falls back to the
		// neutral form.
		params["experimentalRawEvents"] = true
		// The one kind of thread thread/revert rewinds (rewind.go).
		params["historyMode"] = "paginated"
	}
	res, err := b.appCall(ctx, h, interruptCh, method, params)
	if err != nil {
		if method == "thread/resume" && errors.Is(err, errAnswered) {
			b.mu.Lock()
			if b.slept {
				// The thread of a server put to sleep is not to be had:
				// the next start begins a new one (ResumeRefused).
				b.thread, b.slept, b.refused = "", false, true
			}
			b.mu.Unlock()
		}
		return err
	}
	b.app.threaded = true
	b.mu.Lock()
	b.slept = false
	b.mu.Unlock()
	id := res.Get("thread.id").String()
	if id != "" {
		b.mu.Lock()
		b.thread = id
		b.model = res.Get("model").String()
		b.threadMode = modeOf(pr.sandbox)
		b.mu.Unlock()
	}
	if method == "thread/start" && id != "" {
		return b.nameThread(ctx, h, interruptCh, id)
	}
	return nil
}

// nameThread gives the thread it began the conversation's title
// (backend.Titler), when there is one: thread/name/set, which codex keeps
// as the thread's name in its session_index.jsonl (codex resume's list
// shows it). A thread codex resumes keeps the name it has. A server that
// will not name it only loses the name: the turn goes on.
func (b *Backend) nameThread(ctx context.Context, h backend.Host, interruptCh <-chan struct{}, thread string) error {
	title := b.Title()
	if title == "" {
		return nil
	}
	_, err := b.appCall(ctx, h, interruptCh, "thread/name/set", nameParams(thread, title))
	if errors.Is(err, errAnswered) {
		return nil
	}
	return err
}

// nameParams are thread/name/set's parameters.
func nameParams(thread, title string) map[string]any {
	return map[string]any{"threadId": thread, "name": title}
}

// appSend queues v as a line for the server's stdin (backend.Post).
func (b *Backend) appSend(v any) <-chan error { return backend.Post(b.app.proc, v) }

// appRequest sends a request and returns its id and the channel of its
// write's outcome.
func (b *Backend) appRequest(method string, params any) (string, <-chan error) {
	b.app.nextID++
	id := strconv.FormatInt(b.app.nextID, 10)
	return id, b.appSend(map[string]any{"jsonrpc": "2.0", "id": b.app.nextID, "method": method, "params": params})
}

// appCallTimeout bounds the wait for the answer to a request of the
// handshake: the idle timeout, at most a minute and at least
// minCallTimeout (a program that just started, node on a busy machine,
// may take seconds to answer its first request, whatever the idle timeout
// asked of a turn).
func (b *Backend) appCallTimeout() time.Duration {
	return max(min(b.Opts.IdleTimeout, time.Minute), minCallTimeout)
}

// minCallTimeout is the least wait for the answer to a handshake request.
const minCallTimeout = 10 * time.Second

// response returns the JSON-RPC response to request id that line is, if it
// is one. A line nested too deep to be read is none.
func response(line []byte, id string) (gjson.Result, bool) {
	if jsonline.TooDeep(line) {
		return gjson.Result{}, false
	}
	msg := gjson.ParseBytes(line)
	if msg.Get("method").String() != "" || msg.Get("id").Raw != id {
		return gjson.Result{}, false
	}
	return msg, true
}

// appCall sends a request and reads the server's lines until its answer,
// mapping whatever else arrives meanwhile. It gives up when the server
// says nothing for appCallTimeout, and returns errInterrupted on an
// interrupt.
func (b *Backend) appCall(ctx context.Context, h backend.Host, interruptCh <-chan struct{}, method string, params any) (gjson.Result, error) {
	id, sent := b.appRequest(method, params)
	timeout := time.NewTimer(b.appCallTimeout())
	defer timeout.Stop()
	for {
		select {
		case err := <-sent:
			sent = nil
			if err != nil {
				return gjson.Result{}, fmt.Errorf("codex app-server did not take %s: %w", method, err)
			}
		case _, open := <-b.app.proc.Ready():
			for {
				line, ok := b.app.proc.Next()
				if !ok {
					if open {
						break
					}
					<-b.app.proc.Done()
					return gjson.Result{}, fmt.Errorf("codex app-server ended during %s: %v", method, b.app.proc.Err())
				}
				line.Data = bytes.Clone(line.Data) // the mapper keeps views into it
				if !timeout.Stop() {
					<-timeout.C
				}
				timeout.Reset(b.appCallTimeout())
				if msg, ok := response(line.Data, id); ok {
					if e := msg.Get("error"); e.Exists() {
						return gjson.Result{}, fmt.Errorf("%w: %s: %s", errAnswered, method, e.Get("message").String())
					}
					return msg.Get("result"), nil
				}
				b.observeApp(line.Data, h)
				r := b.app.mapper.Line(line.Data)
				for _, k := range r.Compactions {
					backend.Compacted(h, k)
				}
				for _, c := range r.Changes {
					h.Change(c)
				}
			}
		case <-timeout.C:
			if sent != nil {
				return gjson.Result{}, fmt.Errorf("codex app-server did not read %s for %v", method, b.appCallTimeout())
			}
			return gjson.Result{}, fmt.Errorf("codex app-server did not answer %s for %v", method, b.appCallTimeout())
		case <-interruptCh:
			return gjson.Result{}, errInterrupted
		case <-ctx.Done():
			return gjson.Result{}, errInterrupted
		}
	}
}

// input is a message as app-server input: its Context and text, then its
// images as data URLs.
func input(msg backend.Message) []any {
	in := []any{map[string]any{"type": "text", "text": msg.CLIText(), "text_elements": []any{}}}
	for _, img := range msg.Images {
		in = append(in, map[string]any{"type": "image", "url": "data:" + img.MimeType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)})
	}
	return in
}

// appTurn runs a turn on the app-server transport.
func (b *Backend) appTurn(ctx context.Context, msg backend.Message, h backend.Host, interruptCh <-chan struct{}) *itemmap.TurnEnd {
	cmd, cmdArg, isCmd := commandOf(msg.Text)
	if isCmd && cmd == CommandCompact && b.Thread() == "" {
		return failBeforeStart(b.Opts.NewID, h, "Nothing to compact: Codex has no conversation in this session yet.", "")
	}
	if p := b.app.proc; p != nil {
		select {
		case <-p.Done():
			b.appReap() // the server Prepare started ended: start another
		default:
		}
	}
	if !b.app.threaded {
		if err := b.appStart(ctx, h, interruptCh); err != nil {
			b.appReap()
			if errors.Is(err, errInterrupted) {
				return backend.InterruptedBeforeStart(b.Opts.NewID, h)
			}
			text, detail := "The Codex CLI could not be started: "+err.Error(), joinLines(err.Error(), b.StderrTail())
			if errors.Is(err, ErrNotFound) || backend.NotInstalled(err) {
				text, detail = NotFoundText, b.StderrTail()
			}
			return failBeforeStart(b.Opts.NewID, h, text, detail)
		}
	}
	method, params := "turn/start", map[string]any{"threadId": b.thread}
	kind := ""
	switch {
	case isCmd && cmd == CommandReview:
		// Inline: on the thread itself, so that later turns know it.
		method, params["target"], params["delivery"] = "review/start", reviewTarget(cmdArg), "inline"
		kind = "a review"
	case isCmd && cmd == CommandCompact:
		method = "thread/compact/start"
		kind = "a compaction"
	default:
		params["input"] = input(msg)
		b.turnSettings(params)
	}
	// The message is written while the server's lines are read: a server
	// that does not read it counts toward the idle timeout.
	startID, startSent := b.appRequest(method, params)
	c := &appConn{b: b, p: b.app.proc, m: b.app.mapper, startID: startID}
	b.openSteering(c.p, b.thread, kind)
	defer b.closeSteering()
	return (&backend.Driver{Conn: c, Proc: c.p, Opts: b.Opts, Who: "codex", Process: "codex app-server",
		Interrupt: interruptCh, Sent: startSent}).Run(ctx, h)
}

// appConn is a turn on the app-server, p (backend.Conn): turn/start (or
// review/start, thread/compact/start) was sent as request startID.
type appConn struct {
	b           *Backend
	p           *cliproc.Proc
	m           *itemmap.CodexApp
	startID     string
	cleanID     string // the clean request of an interrupt, until answered
	interrupted bool
	refused     bool // the server refused the turn: its end is final
}

// Line reads a line, copied (the mapper keeps views into it): the answer
// to the turn's request, to the interrupt's clean, or what the mapper
// maps, with an image a view_image names and a refusal of what spbridge
// does not answer.
func (c *appConn) Line(data []byte, h backend.Host) ([]itemmap.Approval, *itemmap.TurnEnd) {
	b := c.b
	data = bytes.Clone(data)
	if msg, ok := response(data, c.startID); ok {
		return nil, c.started(msg, h)
	}
	if b.steerAnswer(data) {
		return nil, nil
	}
	if b.app.turnID == "" && bytes.Contains(data, []byte(`"turn/started"`)) {
		// thread/compact/start answers without the turn it starts.
		if v := gjson.ParseBytes(data); v.Get("method").String() == "turn/started" {
			b.setTurnID(v.Get("params.turn.id").String())
			if c.interrupted {
				c.cleanID = b.appInterrupt()
			}
		}
	}
	if c.cleanID != "" {
		if _, ok := response(data, c.cleanID); ok {
			c.cleanID = "" // the interrupt's commands are stopped
			return nil, nil
		}
	}
	b.observeApp(data, h)
	r := c.m.Line(data)
	if r.Skipped {
		b.Skipped()
	}
	for _, k := range r.Compactions {
		backend.Compacted(h, k)
	}
	for _, ch := range r.Changes {
		h.Change(ch)
	}
	b.steeredItem(data, c.m, h)
	if id, path, ok := viewedImagePath(data); ok {
		// An image the file no longer gives is left out: the item says
		// what was viewed.
		if im, err := readViewedImage(b.Opts.Dir, path); err == nil {
			for _, ch := range c.m.ViewedImage(id, im).Changes {
				h.Change(ch)
			}
		}
	}
	for _, cr := range r.ControlRequests {
		b.appSend(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(cr.RequestID),
			"error": map[string]any{"code": -32601, "message": "spbridge does not answer " + cr.Subtype}})
	}
	if r.End != nil {
		b.setTurnID("")
	}
	return r.Approvals, r.End
}

// started reads the answer to the turn's request: the turn's id, or its
// refusal, which ends the turn.
func (c *appConn) started(msg gjson.Result, h backend.Host) *itemmap.TurnEnd {
	b := c.b
	if e := msg.Get("error"); e.Exists() {
		c.refused = true
		text := "codex app-server refused the turn: " + e.Get("message").String()
		r := c.m.Finish(false, text, "")
		for _, ch := range r.Changes {
			h.Change(ch)
		}
		if r.End == nil {
			return failBeforeStart(b.Opts.NewID, h, text, "")
		}
		return r.End
	}
	b.setTurnID(msg.Get("result.turn.id").String())
	if c.interrupted && b.app.turnID != "" {
		c.cleanID = b.appInterrupt()
	}
	return nil
}

// Answer tells codex the host's answer: to a request for the user's
// answers, an MCP elicitation, or an approval.
func (c *appConn) Answer(id string, d backend.Decision, h backend.Host) {
	c.m.Answered(id, d.Allow)
	if result, r, ok := c.m.AnswerQuestions(id, answersOf(d), notesOf(d)); ok {
		for _, ch := range r.Changes {
			h.Change(ch)
		}
		c.b.appSend(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": result})
		return
	}
	if c.m.TakeElicitation(id) {
		result := map[string]any{"action": "decline", "content": nil}
		if d.Allow {
			result["action"] = "accept"
			if g := d.Always; g != nil && g.Tool != "" && g.Prefix == nil && g.Exact == "" && g.File == "" && g.Files == nil && !g.AllEdits {
				// The whole MCP tool: codex asks no more about it this
				// session.
				result["_meta"] = map[string]any{"persist": "session"}
			}
		}
		c.b.appSend(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": result})
		return
	}
	decision := "decline"
	switch {
	case d.Allow && d.Always != nil && exactCommand(*d.Always):
		decision = "acceptForSession" // codex asks no more about this exact command this session
	case d.Allow:
		decision = "accept"
	}
	c.b.appSend(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": map[string]any{"decision": decision}})
}

// Written: a server that did not take the message (it is gone, or closed
// its input) never began the turn.
func (c *appConn) Written(err error) error { return err }

// Interrupt sends turn/interrupt and the clean of the thread's commands,
// once the turn has its id (else when it comes).
func (c *appConn) Interrupt() {
	c.interrupted = true
	if c.b.app.turnID != "" {
		c.cleanID = c.b.appInterrupt()
	}
}

// Escalate: the server did not end the turn, or stop its commands: it is
// closed.
func (c *appConn) Escalate(int) bool { return false }

// Settled: after an interrupt, the turn ends when the server says the
// commands are stopped.
//
// A turn/steer request not answered yet holds the end too: the message is
// either taken or refused, never lost between the two.
func (c *appConn) Settled() bool { return c.refused || (c.cleanID == "" && !c.b.steering()) }

// Ended ends a turn; after an interrupt, the commands codex started that
// still run (detached, in sessions of their own) are killed first: the
// server's clean answers before they are dead.
func (c *appConn) Ended(end *itemmap.TurnEnd, interrupted bool, _ backend.Host) *itemmap.TurnEnd {
	if interrupted && !c.refused {
		c.p.KillEscaped(true)
	}
	return end
}

// Drained: the server says everything on its output.
func (c *appConn) Drained(backend.Host) {}

func (c *appConn) Finish(interrupted bool, text, detail string) itemmap.Result {
	return c.m.Finish(interrupted, text, detail)
}

// Reap ends the server, keeping the thread for the next one to resume.
func (c *appConn) Reap() string {
	c.b.appReap() // closes stdin: a write the server does not read ends
	return c.b.StderrTail()
}

// answersOf reads the answers of a questions request from the host's
// decision (itemmap.QuestionsTool): none when it was not allowed.
func answersOf(d backend.Decision) map[string]string {
	answers := map[string]string{}
	if d.Allow {
		gjson.GetBytes(d.UpdatedInput, "answers").ForEach(func(k, v gjson.Result) bool {
			answers[k.String()] = v.String()
			return true
		})
	}
	return answers
}

// notesOf reads the notes the user added to a questions request's answers
// (annotations: question text to {"notes"}) from the host's decision.
func notesOf(d backend.Decision) map[string]string {
	notes := map[string]string{}
	if d.Allow {
		gjson.GetBytes(d.UpdatedInput, "annotations").ForEach(func(k, v gjson.Result) bool {
			if n := v.Get("notes").String(); n != "" {
				notes[k.String()] = n
			}
			return true
		})
	}
	return notes
}

// turnSettings adds to turn/start's params what the turn runs with: the
// model, the effort, and the mode's policies when they changed, or on
// every turn when the session has additional folders and the mode writes
// in the workspace (its writable roots; the policy holds for the thread,
// and a resumed thread starts from its mode's default again).
func (b *Backend) turnSettings(params map[string]any) {
	if model := b.Model(); model != "" {
		params["model"] = model
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if effort := b.turnEffort(); effort != "" {
		params["effort"] = effort
	}
	if b.fast != nil {
		// For this turn only: the thread keeps its own.
		params["serviceTierForTurn"] = "default"
		if *b.fast {
			params["serviceTierForTurn"] = fastTier
		}
	}
	pr := presets[b.mode]
	if roots := b.writableRoots(pr); b.mode != b.threadMode || len(roots) > 0 {
		// The thread runs in another mode: this turn and the next ones
		// take this one's policies.
		policy := map[string]any{"type": pr.policy}
		if len(roots) > 0 {
			policy["writableRoots"] = roots
		}
		params["sandboxPolicy"] = policy
		params["approvalPolicy"] = pr.approval
		b.threadMode = b.mode
	}
}

// writableRoots are the session's additional folders when the mode's
// sandbox writes in the workspace; none otherwise (read-only writes
// nowhere, full access everywhere).
func (b *Backend) writableRoots(pr preset) []string {
	if pr.policy != "workspaceWrite" || len(b.Opts.AddDirs) == 0 {
		return nil
	}
	return slices.Clone(b.Opts.AddDirs)
}

// appInterrupt asks the server to interrupt the running turn and to stop
// the commands of the thread that still run: turn/interrupt stops the
// command the turn waits for, not one codex left running in the background
// (its yield time passed), which would go on and act after the turn ended.
// It returns the id of the clean request, whose answer says the commands
// are stopped.
func (b *Backend) appInterrupt() string {
	b.appRequest("turn/interrupt", map[string]any{"threadId": b.thread, "turnId": b.app.turnID})
	id, _ := b.appRequest("thread/backgroundTerminals/clean", map[string]any{"threadId": b.thread})
	return id
}

// joinLines joins the non-empty strings with newlines.
func joinLines(parts ...string) string {
	var kept []string
	for _, s := range parts {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, "\n")
}

// appReap ends the app-server process, keeping the thread for the next one
// to resume. Its caller holds b.run, as the server's only reader does,
// and reads no more of it: what the server still prints is dropped, so
// that its end is not held for Opts.Grace by lines nobody takes (a
// session closed while Prepare's server started took 5 s).
func (b *Backend) appReap() {
	p := b.app.proc
	if p == nil {
		return
	}
	b.app.proc = nil
	b.app.threaded = false
	b.app.turnID = ""
	p.Discard()
	p.CloseStdin()
	b.Reap(p)
}

// appCloseGrace is how long closing the app-server waits at each step:
// for the server to exit once its input is closed, then after SIGINT and
// after SIGTERM, before SIGKILL.
const appCloseGrace = 500 * time.Millisecond

// Close ends the running process, if any (see backend.CLI's Close). The
// app-server is given appCloseGrace at each step (Opts.Grace when shorter):
// between turns it has nothing left to do, and codex 0.169.0's server
// that interrupted a command does not exit when its input closes (it
// waits, idle, for a signal), which made closing a session that had
// cancelled a command, and so serve's shutdown, take Opts.Grace. SIGINT
// ends it at once.
func (b *Backend) Close() error {
	if p := b.Proc(); p != nil && b.transport == TransportAppServer {
		p.Close(min(appCloseGrace, b.Opts.Grace)) // Close below reaps it
	}
	return b.CLI.Close()
}
