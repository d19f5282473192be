package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/pkglock"
	"spbridge/internal/restore"
)

// fakeBackend plays a turn by the message it gets: "slow" streams until
// interrupted, "ask" asks for a permission first, "quiet" writes nothing
// and ends failed when interrupted, "notstarted" fails before the CLI took
// the message, "panic" panics after its first chunk, anything else replies
// "Hello" in two chunks with one tool call.
type fakeBackend struct {
	mu      sync.Mutex
	sent    []string
	started bool
	closed  bool
	intr    chan struct{}
	finish  chan struct{} // ends a slow turn as completed
	began   chan string   // each turn's message as it begins
	feed    chan string   // the deltas of a "feed" turn's reply

	panicInterrupt, panicClose bool
	cwd                        string        // the session's folder, where its commands run
	interrupted                chan struct{} // each Interrupt as it is called, before it panics
}

func newFake() *fakeBackend {
	return &fakeBackend{intr: make(chan struct{}, 1), finish: make(chan struct{}, 1), began: make(chan string, 1000), feed: make(chan string),
		interrupted: make(chan struct{}, 100)}
}

func (f *fakeBackend) Name() string { return "claude" }
func (f *fakeBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	f.mu.Lock()
	f.sent = append(f.sent, msg.CLIText())
	f.started = true
	f.mu.Unlock()
	select { // an interrupt meant for an earlier turn
	case <-f.intr:
	default:
	}
	text := msg.Text
	select {
	case f.began <- text:
	default:
	}
	a := archive.NewItem(archive.TypeAssistant)
	switch {
	case strings.HasPrefix(text, "panic"):
		a.Set("text", "about to fail")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		panic("the fake backend panics")
	case strings.HasPrefix(text, "stubborn"):
		// A CLI that does not stop when asked: only finish ends it.
		a.Set("text", "working")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		<-f.finish
		return &itemmap.TurnEnd{Status: itemmap.TurnInterrupted}
	case strings.HasPrefix(text, "quiet"):
		select {
		case <-ctx.Done():
		case <-f.intr:
		}
		return &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	case strings.HasPrefix(text, "notstarted"):
		fl := archive.NewItem(archive.TypeFailure)
		fl.Set("text", "Claude Code is not installed (no claude on PATH).")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: fl})
		return &itemmap.TurnEnd{Status: itemmap.TurnFailed, NotStarted: true}
	case strings.HasPrefix(text, "crash"):
		f := archive.NewItem(archive.TypeFailure)
		f.Set("text", "Claude Code exited before the turn ended (exit status 3).")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: f})
		return &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	case strings.HasPrefix(text, "slow"):
		a.Set("text", "tick ")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		for {
			select {
			case <-ctx.Done():
			case <-f.intr:
			case <-f.finish:
				return &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
			case <-time.After(10 * time.Millisecond):
				a.Set("text", a.String("text")+"tick ")
				h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: "tick "})
				continue
			}
			n := archive.NewItem(archive.TypeNotice)
			n.Set("text", "Interrupted.")
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: n})
			return &itemmap.TurnEnd{Status: itemmap.TurnInterrupted}
		}
	case strings.HasPrefix(text, "sid "):
		// A turn on the CLI session named after "sid ".
		a.Set("text", "ok")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, SessionID: strings.TrimPrefix(text, "sid ")}
	case strings.HasPrefix(text, "feed"):
		// A reply that grows by each delta sent on feed, until the turn
		// is interrupted or finished.
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		for {
			select {
			case <-ctx.Done():
			case <-f.intr:
			case <-f.finish:
				return &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
			case d := <-f.feed:
				a.Set("text", a.String("text")+d)
				h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: d})
				continue
			}
			return &itemmap.TurnEnd{Status: itemmap.TurnInterrupted}
		}
	case strings.HasPrefix(text, "batch"):
		// A backend that says when it handed over every line so far (as
		// claude's does): a chunk, Idle, a chunk, Idle, a wait, one more
		// chunk.
		a.Set("text", "one ")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		backend.Idle(h)
		a.Set("text", "one two ")
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: "two "})
		backend.Idle(h)
		<-f.finish
		a.Set("text", "one two three")
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: "three"})
	case strings.HasPrefix(text, "long"):
		// "long N SIZE": a reply of N deltas of SIZE bytes each.
		var n, size int
		fmt.Sscan(strings.TrimPrefix(text, "long"), &n, &size)
		delta := strings.Repeat("x", size-1) + "\""
		var b strings.Builder
		b.WriteString(delta)
		a.Set("text", b.String())
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		for i := 1; i < n; i++ {
			b.WriteString(delta)
			a.Set("text", b.String())
			h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: delta})
		}
	case strings.HasPrefix(text, "term"):
		// A command whose output streams while it runs ("tick 1\n",
		// "tick 2\n") and whose final output, like Codex's, also has what
		// was not streamed ("start\n" first).
		tool := archive.NewItem(archive.TypeTool)
		tool.Set("name", "shell")
		tool.Set("summary", "make")
		tool.Set("status", archive.StatusRunning)
		v := &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`make`", Terminal: true}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: tool, Tool: v})
		out := ""
		for _, d := range []string{"tick 1\n", "tick 2\n"} {
			out += d
			nv := *v
			nv.Output = out
			h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: tool, Tool: &nv, OutputDelta: d})
		}
		tool.Set("status", archive.StatusFailed)
		tool.Set("statusText", "exit 2")
		nv := *v
		nv.Output, nv.ExitCode = "start\ntick 1\ntick 2\n", new(int)
		*nv.ExitCode = 2
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: tool, Tool: &nv})
		a.Set("text", "done")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	case strings.HasPrefix(text, "question"):
		in := `{"questions":[{"question":"Which lock?","header":"Lock","options":[{"label":"flock"},{"label":"fcntl"}]},` +
			`{"question":"Why?","options":[{"label":"speed"},{"label":"safety"}]}]}`
		d := h.Approve(ctx, itemmap.Approval{RequestID: "q", ToolName: "AskUserQuestion", Input: json.RawMessage(in)})
		a.Set("text", fmt.Sprintf("%v %s", d.Allow, gjson.GetBytes(d.UpdatedInput, "answers").Raw))
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	case strings.HasPrefix(text, "form "):
		// "form INPUT": a questions request of that input; the reply is
		// the answer: allowed, the input it passes on, or what the model
		// hears of a refusal.
		in := strings.TrimPrefix(text, "form ")
		d := h.Approve(ctx, itemmap.Approval{RequestID: "q", ToolName: "AskUserQuestion", Input: json.RawMessage(in)})
		a.Set("text", fmt.Sprintf("%v %s%s", d.Allow, d.UpdatedInput, d.Message))
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	case strings.HasPrefix(text, "cmds "):
		// "cmds A|B": one Bash permission request per command, run in the
		// session's folder; "A@DIR" runs A in DIR (relative to it, "@?"
		// in a folder not known, "@!" outside the sandbox). The reply
		// says how each was answered.
		for i, cmd := range strings.Split(strings.TrimPrefix(text, "cmds "), "|") {
			cmd, dir, _ := strings.Cut(cmd, "@")
			ap := itemmap.Approval{RequestID: fmt.Sprint("c", i), ToolName: "Bash", Cwd: filepath.Join(f.cwd, dir)}
			switch dir {
			case "?":
				ap.Cwd = ""
			case "!":
				ap.Cwd, ap.Escalated = f.cwd, true
			}
			ap.Input, _ = json.Marshal(map[string]string{"command": cmd})
			d := h.Approve(ctx, ap)
			a.Set("text", a.String("text")+fmt.Sprintf("%s=%v/%v ", cmd, d.Allow, d.Always != nil))
		}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	case text == "blank":
		// A command of blanks, and a Write that names no file.
		for i, in := range []string{`{"command":" \t "}`, `{"content":"x"}`} {
			d := h.Approve(ctx, itemmap.Approval{RequestID: fmt.Sprint("b", i), ToolName: []string{"Bash", "Write"}[i], Input: json.RawMessage(in)})
			a.Set("text", a.String("text")+fmt.Sprintf("%v ", d.Allow))
		}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	case strings.HasPrefix(text, "edits "):
		// "edits TOOL:FILE|…": one edit permission request per file.
		for i, e := range strings.Split(strings.TrimPrefix(text, "edits "), "|") {
			tool, file, _ := strings.Cut(e, ":")
			in, _ := json.Marshal(map[string]string{"file_path": file})
			d := h.Approve(ctx, itemmap.Approval{RequestID: fmt.Sprint("e", i), ToolName: tool, Input: in})
			a.Set("text", a.String("text")+fmt.Sprintf("%s=%v ", file, d.Allow))
		}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	case strings.HasPrefix(text, "ask"):
		tool := archive.NewItem(archive.TypeTool)
		tool.Set("name", "Bash")
		tool.Set("summary", "rm -rf x")
		tool.Set("status", archive.StatusRunning)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: tool})
		for i := 0; i < 2; i++ {
			ap := archive.NewItem(archive.TypeToolApproval)
			ap.Set("name", "Bash")
			ap.Set("summary", "rm -rf x")
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: ap})
			d := h.Approve(ctx, itemmap.Approval{RequestID: fmt.Sprint("r", i), ToolName: "Bash", Input: json.RawMessage(`{"command":"rm -rf x"}`), ToolItemID: tool.ID(), ItemID: ap.ID(), Cwd: f.cwd})
			a.Set("text", a.String("text")+fmt.Sprintf("allow=%v ", d.Allow))
		}
		tool.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: tool})
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
	default:
		a.Set("text", "Hel")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		a.Set("text", "Hello")
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: a, Delta: "lo"})
		tool := archive.NewItem(archive.TypeTool)
		tool.Set("name", "Read")
		tool.Set("summary", "/tmp/a.txt")
		tool.Set("status", archive.StatusRunning)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: tool})
		tool.Set("status", archive.StatusSucceeded)
		tool.Set("detail", "output:\nline")
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: tool})
	}
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "fake", History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock(a.String("text"))}}}}
}
func (f *fakeBackend) Interrupt() {
	select {
	case f.interrupted <- struct{}{}:
	default:
	}
	if f.panicInterrupt {
		panic("the fake backend's interrupt panics")
	}
	select {
	case f.intr <- struct{}{}:
	default:
	}
}
func (f *fakeBackend) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	if f.panicClose {
		panic("the fake backend's close panics")
	}
	return nil
}
func (f *fakeBackend) SetModel(m string) {
	if m == "panic" {
		panic("the fake backend's SetModel panics")
	}
}
func (f *fakeBackend) Started() bool            { f.mu.Lock(); defer f.mu.Unlock(); return f.started }
func (f *fakeBackend) Program() (string, error) { return "/bin/fake", nil }
func (f *fakeBackend) Version() string          { return "1" }
func (f *fakeBackend) StderrTail() string       { return "" }
func (f *fakeBackend) ExitStatus() string       { return "" }
func (f *fakeBackend) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// client drives a Server over pipes. Every message the server writes is
// kept; responses are found by id wherever they are, notifications are read
// in order from a cursor.
type client struct {
	t        *testing.T
	in       *io.PipeWriter
	mu       sync.Mutex
	cond     *sync.Cond // signalled on each message the server wrote, and at its end
	all      []map[string]any
	cursor   int
	eof      bool
	backends []*fakeBackend
	nextID   int
	answers  []string // permission answers, in order
	doneCh   chan struct{}
	doneErr  error
	// itemBytes counts the bytes of the _spbridge/item lines the server
	// wrote, itemLongest the longest of them.
	itemBytes, itemLongest int
}

func startServer(t *testing.T) *client { return startServerWith(t, Config{}) }

func startServerWith(t *testing.T, cfg Config) *client { return startServerHook(t, cfg, nil) }

// startServerHook starts a server whose backends are fakes and initializes
// it as a client that asks for _spbridge/item; hook, when set, sees each
// backend before it is returned (it may block, panic or change it).
func startServerHook(t *testing.T, cfg Config, hook func(*fakeBackend)) *client {
	t.Helper()
	c := startPlain(t, cfg, hook)
	c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": itemsCapability})
	return c
}

// itemsCapability is the clientCapabilities of a client that asks for
// _spbridge/item.
var itemsCapability = map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}

// startPlain starts a server with fake backends and does not initialize it:
// a client that has not asked for _spbridge/item.
func startPlain(t *testing.T, cfg Config, hook func(*fakeBackend)) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, doneCh: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	cfg.AuditDir, cfg.Version = t.TempDir(), "test"
	if cfg.CLIs == nil { // a test's own, else fakes
		cfg.CLIs = rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
			if name != "claude" {
				return nil, fmt.Errorf("no %s", name)
			}
			b := newFake()
			b.cwd = o.Dir
			if hook != nil {
				hook(b)
			}
			c.mu.Lock()
			c.backends = append(c.backends, b)
			c.mu.Unlock()
			return b, nil
		})
	}
	srv := NewServer(outW, cfg)
	go func() {
		c.doneErr = srv.Serve(context.Background(), inR)
		outW.Close()
		close(c.doneCh)
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]any
			c.mu.Lock()
			if strings.Contains(sc.Text(), `"method":"_spbridge/item"`) {
				c.itemBytes += len(sc.Bytes()) + 1
				c.itemLongest = max(c.itemLongest, len(sc.Bytes())+1)
			}
			c.mu.Unlock()
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			if m["method"] == "session/request_permission" {
				c.answerPermission(m)
			}
			c.mu.Lock()
			c.all = append(c.all, m)
			c.cond.Broadcast()
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.eof = true
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	t.Cleanup(func() { inW.Close(); <-c.doneCh })
	return c
}

// hangGuard ends a wait of the test client that nothing ends: a hang, not
// a timing (each wait here is for an event that takes milliseconds).
const hangGuard = 2 * time.Minute

// wait closes stdin and waits for the server to end.
func (c *client) wait() error {
	c.in.Close()
	select {
	case <-c.doneCh:
		return c.doneErr
	case <-time.After(hangGuard):
		c.t.Fatal("the server did not end")
		return nil
	}
}

// waitLocked waits, c.mu held, for the next message the server writes (or
// its end); false once the hang guard from start passed.
func (c *client) waitLocked(start time.Time) bool {
	if time.Since(start) > hangGuard {
		return false
	}
	guard := time.AfterFunc(hangGuard-time.Since(start), func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	c.cond.Wait()
	guard.Stop()
	return true
}

func (c *client) backend(i int) *fakeBackend {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backends[i]
}

func (c *client) answerPermission(m map[string]any) {
	c.mu.Lock()
	answer := "cancelled"
	if len(c.answers) > 0 {
		answer, c.answers = c.answers[0], c.answers[1:]
	}
	c.mu.Unlock()
	if answer == "unanswered" {
		return
	}
	outcome := map[string]any{"outcome": "cancelled"}
	if answer != "cancelled" {
		outcome = map[string]any{"outcome": "selected", "optionId": answer}
	}
	go c.write(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"outcome": outcome}})
}

func (c *client) write(v any) {
	data, _ := json.Marshal(v)
	c.in.Write(append(data, '\n'))
}

func (c *client) raw(line string) { c.in.Write([]byte(line + "\n")) }

// call sends a request and returns its id.
func (c *client) call(method string, params any) float64 {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return float64(id)
}

// until reads messages from the cursor until one satisfies stop, which it
// returns with the ones before it. The server's end without one fails the
// test.
func (c *client) until(stop func(map[string]any) bool) (map[string]any, []map[string]any) {
	c.t.Helper()
	var seen []map[string]any
	start := time.Now()
	c.mu.Lock()
	for {
		for c.cursor < len(c.all) {
			m := c.all[c.cursor]
			c.cursor++
			if stop(m) {
				c.mu.Unlock()
				return m, seen
			}
			seen = append(seen, m)
		}
		if c.eof || !c.waitLocked(start) {
			break
		}
	}
	var all []string
	for _, m := range c.all {
		b, _ := json.Marshal(m)
		all = append(all, string(b))
	}
	eof := c.eof
	c.mu.Unlock()
	c.t.Fatalf("not found (eof %v); seen %v\nall messages:\n%s", eof, seen, strings.Join(all, "\n"))
	return nil, nil
}

// response waits for the response to id, wherever it is, and returns it
// with the messages from the cursor up to it (moving the cursor past it when
// it lies ahead).
func (c *client) response(id float64) (map[string]any, []map[string]any) {
	c.t.Helper()
	start := time.Now()
	c.mu.Lock()
	for checked := 0; ; {
		for i := checked; i < len(c.all); i++ {
			if m := c.all[i]; m["id"] == id && m["method"] == nil {
				var seen []map[string]any
				if i >= c.cursor {
					seen = append(seen, c.all[c.cursor:i]...)
					c.cursor = i + 1
				}
				c.mu.Unlock()
				return m, seen
			}
		}
		checked = len(c.all)
		if c.eof || !c.waitLocked(start) {
			break
		}
	}
	c.mu.Unlock()
	c.t.Fatalf("no response to %v", id)
	return nil, nil
}

// request calls and waits for the result, failing on an error.
func (c *client) request(method string, params any) (map[string]any, []map[string]any) {
	c.t.Helper()
	r, seen := c.response(c.call(method, params))
	if r["error"] != nil {
		c.t.Fatalf("%s: %v", method, r["error"])
	}
	res, _ := r["result"].(map[string]any)
	return res, seen
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

func newPackage(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.Mkdir(dir, 0o755)
	return dir
}

func newSessionParams(pkg string) map[string]any {
	return map[string]any{"cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}}
}

func updates(msgs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if m["method"] != "session/update" {
			continue
		}
		u := m["params"].(map[string]any)["update"].(map[string]any)
		if u["sessionUpdate"] == kind {
			out = append(out, u)
		}
	}
	return out
}

func count(msgs []map[string]any, method string) int {
	n := 0
	for _, m := range msgs {
		if m["method"] == method {
			n++
		}
	}
	return n
}

func TestInitializeAndErrors(t *testing.T) {
	c := startServer(t)
	res, _ := c.request("initialize", map[string]any{"protocolVersion": 1})
	caps := res["agentCapabilities"].(map[string]any)
	if res["protocolVersion"] != float64(1) || caps["loadSession"] != true || caps["promptCapabilities"].(map[string]any)["image"] != true || caps["promptCapabilities"].(map[string]any)["embeddedContext"] != true {
		t.Errorf("initialize = %v", res)
	}
	c.raw("{not json")
	m, _ := c.until(func(m map[string]any) bool { return m["error"] != nil })
	if errCode(m) != jsonrpc.CodeParseError || m["id"] != nil {
		t.Errorf("parse error = %v", m)
	}
	tests := []struct {
		method string
		params any
		code   float64
	}{
		{"no/such/method", map[string]any{}, jsonrpc.CodeMethodNotFound},
		{"initialize", map[string]any{}, jsonrpc.CodeInvalidParams},
		{"session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, jsonrpc.CodeInvalidParams},
		{"session/new", map[string]any{"cwd": "/", "mcpServers": []any{}, "_meta": map[string]any{"spbridge": map[string]any{"package": "/nonexistent/x", "backend": "claude"}}}, jsonrpc.CodeInvalidParams},
		{"session/new", map[string]any{"cwd": "/", "_meta": map[string]any{"spbridge": map[string]any{"package": "/tmp", "backend": "gemini"}}}, jsonrpc.CodeInvalidParams},
		{"session/prompt", map[string]any{"sessionId": "nope", "prompt": []any{textBlock("hi")}}, CodeNotFound},
		{"session/prompt", "not an object", jsonrpc.CodeInvalidParams},
		{"_spbridge/save", map[string]any{"sessionId": "nope"}, CodeNotFound},
	}
	for _, tt := range tests {
		m, _ := c.response(c.call(tt.method, tt.params))
		if errCode(m) != tt.code {
			t.Errorf("%s %v: %v, want code %v", tt.method, tt.params, m, tt.code)
		}
	}
	c.raw(`{"jsonrpc":"1.0","id":99,"method":"initialize"}`)
	if m, _ := c.response(99); errCode(m) != jsonrpc.CodeInvalidRequest {
		t.Errorf("jsonrpc 1.0: %v", m)
	}
	// Still serving.
	if res, _ := c.request("initialize", map[string]any{"protocolVersion": 1}); res["protocolVersion"] != float64(1) {
		t.Error("the server stopped serving")
	}
}

func TestPromptStreams(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	if sid != pkg {
		t.Errorf("sessionId %q, want the package path", sid)
	}
	// The model, and the CLI (the test's server has both CLIs' rows).
	if opts := res["configOptions"].([]any); len(opts) != 2 || opts[0].(map[string]any)["category"] != "model" ||
		opts[1].(map[string]any)["id"] != "cli" || opts[1].(map[string]any)["currentValue"] != "claude" {
		t.Errorf("configOptions = %v", opts)
	}
	res, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	if res["stopReason"] != "end_turn" {
		t.Errorf("stopReason = %v", res)
	}
	chunks := updates(seen, "agent_message_chunk")
	if len(chunks) != 2 || chunks[0]["content"].(map[string]any)["text"] != "Hel" || chunks[1]["content"].(map[string]any)["text"] != "lo" {
		t.Errorf("chunks = %v", chunks)
	}
	calls, ups := updates(seen, "tool_call"), updates(seen, "tool_call_update")
	if len(calls) != 1 || calls[0]["kind"] != "read" || calls[0]["status"] != "in_progress" || len(ups) != 1 || ups[0]["status"] != "completed" {
		t.Errorf("tool calls %v updates %v", calls, ups)
	}
	if loc := ups[0]["locations"].([]any); loc[0].(map[string]any)["path"] != "/tmp/a.txt" {
		t.Errorf("locations %v", loc)
	}
	if n := count(seen, "_spbridge/item"); n != 5 { // user, assistant ×2, tool ×2
		t.Errorf("%d _spbridge/item notifications, want 5", n)
	}
	if count(seen, "_spbridge/edited") < 1 {
		t.Error("no _spbridge/edited")
	}
	// Rating, then save writes the conversation.
	if _, seen := c.request("_spbridge/rate", map[string]any{"sessionId": sid, "itemId": "X", "rating": "good", "reasons": []any{"fast"}}); count(seen, "_spbridge/edited") != 0 {
		t.Log("edited came before the answer")
	}
	res, _ = c.request("_spbridge/save", map[string]any{"sessionId": sid})
	if w := res["written"].([]any); len(w) == 0 {
		t.Errorf("save wrote nothing: %v", res)
	}
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	if len(p.Conv.Items) != 3 || p.Conv.Feedback["X"].Rating != "good" || p.Conv.Provider != "claude-code" {
		t.Errorf("saved: %d items, feedback %v, provider %q", len(p.Conv.Items), p.Conv.Feedback, p.Conv.Provider)
	}
}

func TestPermissions(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.mu.Lock()
	c.answers = []string{"allow_once", "reject_once", "allow_always"}
	c.mu.Unlock()
	_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("ask")}})
	asked := 0
	for _, m := range seen {
		if m["method"] == "session/request_permission" {
			asked++
			p := m["params"].(map[string]any)
			if p["toolCall"].(map[string]any)["title"] != "Bash: rm -rf x" || len(p["options"].([]any)) != 4 {
				t.Errorf("request %v", p)
			}
		}
	}
	texts := updates(seen, "agent_message_chunk")
	if asked != 2 || texts[0]["content"].(map[string]any)["text"] != "allow=true allow=false " {
		t.Errorf("asked %d, reply %v", asked, texts)
	}
	// allow_always: the next two are not asked.
	_, seen = c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("ask")}})
	_, seen2 := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("ask")}})
	if n := count(seen, "session/request_permission") + count(seen2, "session/request_permission"); n != 1 {
		t.Errorf("%d requests after allow_always, want 1", n)
	}
}

// TestPermissionFolder: "always" on a command covers it in the folder it
// ran in, which the option names, and outside the sandbox only when given
// there; a command whose folder is not known offers no "always", and no
// grant covers it.
func TestPermissionFolder(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	prompt := func(text string, answers ...string) (string, [][]string) {
		c.mu.Lock()
		c.answers = answers
		c.mu.Unlock()
		_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock(text)}})
		texts := updates(seen, "agent_message_chunk")
		if len(texts) == 0 {
			t.Fatalf("prompt %q: no reply", text)
		}
		var options [][]string
		for _, m := range seen {
			if m["method"] == "session/request_permission" {
				var names []string
				for _, o := range m["params"].(map[string]any)["options"].([]any) {
					names = append(names, o.(map[string]any)["name"].(string))
				}
				options = append(options, names)
			}
		}
		return texts[0]["content"].(map[string]any)["text"].(string), options
	}
	reply, options := prompt("cmds rm -f *@work/build", "allow_always")
	if reply != "rm -f *=true/true " || len(options) != 1 || options[0][1] != "Always allow `rm -f *` in work/build in this session" {
		t.Fatalf("reply %q, options %q", reply, options)
	}
	// The same command in another folder, in the session's folder, in a
	// folder not known, and outside the sandbox: each asked.
	reply, options = prompt("cmds rm -f *@work/build|rm -f *@elsewhere|rm -f *|rm -f *@?|rm -f *@work/build/sub",
		"reject_once", "reject_once", "reject_once", "reject_once")
	if want := "rm -f *=true/false rm -f *=false/false rm -f *=false/false rm -f *=false/false rm -f *=false/false "; reply != want || len(options) != 4 {
		t.Errorf("reply %q, want %q; %d requests, want 4", reply, want, len(options))
	}
	if len(options) == 4 && !slices.Equal(options[2], []string{"Allow once", "Reject"}) {
		t.Errorf("a command in a folder not known offers %q, want no always", options[2])
	}
	if len(options) > 0 && options[0][1] != "Always allow `rm -f *` in elsewhere in this session" {
		t.Errorf("options %q", options[0])
	}
	reply, _ = prompt("cmds rm -f *@!", "allow_always")
	if reply != "rm -f *=true/true " {
		t.Errorf("outside the sandbox: %q", reply)
	}
	reply, options = prompt("cmds git clean -fdx|git clean -fdx@!", "allow_always", "reject_once")
	if want := "git clean -fdx=true/true git clean -fdx=false/false "; reply != want || len(options) != 2 ||
		options[1][1] != "Always allow `git clean …` in the working folder, also outside the sandbox in this session" {
		t.Errorf("reply %q, want %q; options %q", reply, want, options)
	}
}

// TestPermissionScopes: "always" covers a command by its prefix, for
// the session: allow_always on `npm test` lets `npm test -- --watch`
// through but asks about `rm`; reject_always on `rm -rf x` rejects it from
// then on, unasked. The options name their scope.
func TestPermissionScopes(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.mu.Lock()
	c.answers = []string{"allow_always", "reject_always"}
	c.mu.Unlock()
	prompt := func(text string) (string, []map[string]any) {
		_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock(text)}})
		texts := updates(seen, "agent_message_chunk")
		if len(texts) == 0 {
			t.Fatalf("prompt %q: no reply", text)
		}
		return texts[0]["content"].(map[string]any)["text"].(string), seen
	}
	reply, seen := prompt("cmds npm test|npm test -- --watch|rm -rf x")
	if want := "npm test=true/true npm test -- --watch=true/false rm -rf x=false/false "; reply != want {
		t.Errorf("reply %q, want %q", reply, want)
	}
	var names []string
	for _, m := range seen {
		if m["method"] == "session/request_permission" {
			for _, o := range m["params"].(map[string]any)["options"].([]any) {
				names = append(names, o.(map[string]any)["kind"].(string)+": "+o.(map[string]any)["name"].(string))
			}
		}
	}
	want := []string{"allow_once: Allow once", "allow_always: Always allow `npm test …` in the working folder in this session", "reject_once: Reject", "reject_always: Always reject `npm test …` in the working folder in this session",
		"allow_once: Allow once", "allow_always: Always allow `rm -rf x` in the working folder in this session", "reject_once: Reject", "reject_always: Always reject `rm -rf x` in the working folder in this session"}
	if !slices.Equal(names, want) {
		t.Errorf("options\n%q\nwant\n%q", names, want)
	}
	reply, seen = prompt("cmds rm -rf x|npm test")
	if want := "rm -rf x=false/false npm test=true/false "; reply != want || count(seen, "session/request_permission") != 0 {
		t.Errorf("reply %q with %d requests, want %q unasked", reply, count(seen, "session/request_permission"), want)
	}

	// An edit inside the session's folder offers all edits of the session
	// too; once chosen, no edit inside it asks again. A read, an MCP tool
	// that names a file, an edit outside the folder and a command still
	// do.
	w := filepath.Dir(pkg)
	c.mu.Lock()
	c.answers = []string{"allow_all_edits", "allow_once", "allow_once", "reject_once", "reject_once", "allow_once"}
	c.mu.Unlock()
	reply, seen = prompt(fmt.Sprintf("edits Edit:%[1]s/a.go|Write:%[1]s/sub/new.go|MultiEdit:%[1]s/b.go|NotebookEdit:%[1]s/n.ipynb|Read:%[1]s/c.go|mcp__fs__write:%[1]s/d.go|Edit:%[1]s/../e.go|Write:/elsewhere/f.go", w))
	names = nil
	for _, m := range seen {
		if m["method"] == "session/request_permission" {
			for _, o := range m["params"].(map[string]any)["options"].([]any) {
				names = append(names, o.(map[string]any)["optionId"].(string)+": "+o.(map[string]any)["name"].(string))
			}
		}
	}
	a := filepath.Join(w, "a.go")
	want = []string{"allow_once: Allow once", "allow_always: Always allow Edit of " + a + " in this session", "allow_all_edits: Allow all edits in this session",
		"reject_once: Reject", "reject_always: Always reject Edit of " + a + " in this session"}
	if got := count(seen, "session/request_permission"); got != 5 || len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Errorf("%d requests, options\n%q\nwant first\n%q", got, names, want)
	}
	wantReply := fmt.Sprintf("%[1]s/a.go=true %[1]s/sub/new.go=true %[1]s/b.go=true %[1]s/n.ipynb=true %[1]s/c.go=true %[1]s/d.go=true %[1]s/../e.go=false /elsewhere/f.go=false ", w)
	if reply != wantReply {
		t.Errorf("reply %q, want %q", reply, wantReply)
	}
	for _, n := range names[len(want):] {
		if strings.HasPrefix(n, "allow_all_edits") {
			t.Errorf("all edits offered on a request that is no edit inside the folder: %q", names[len(want):])
		}
	}
	if reply, seen = prompt("cmds make x"); reply != "make x=true/false " || count(seen, "session/request_permission") != 1 {
		t.Errorf("a command after all edits: %q with %d requests, want it asked", reply, count(seen, "session/request_permission"))
	}

	// A blank command, or an edit that names no file, has nothing to scope
	// an "always" by: none is offered.
	c.mu.Lock()
	c.answers = []string{"allow_once", "allow_once"}
	c.mu.Unlock()
	_, seen = prompt("blank")
	names = nil
	for _, m := range seen {
		if m["method"] == "session/request_permission" {
			for _, o := range m["params"].(map[string]any)["options"].([]any) {
				names = append(names, o.(map[string]any)["optionId"].(string))
			}
		}
	}
	if strings.Join(names, " ") != "allow_once reject_once allow_once reject_once" {
		t.Errorf("a blank command's options: %q, want allow_once and reject_once only", names)
	}
}

// TestQuestion: an AskUserQuestion is one permission request per question
// whose options are its answers; the answers go back in the tool's input.
func TestQuestion(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.mu.Lock()
	c.answers = []string{"answer-1", "answer-0", "answer-0", "reject"}
	c.mu.Unlock()
	_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("question")}})
	var asked []string
	for _, m := range seen {
		if m["method"] == "session/request_permission" {
			p := m["params"].(map[string]any)
			var names []string
			for _, o := range p["options"].([]any) {
				names = append(names, o.(map[string]any)["name"].(string))
			}
			asked = append(asked, p["toolCall"].(map[string]any)["title"].(string)+" "+strings.Join(names, "|"))
		}
	}
	if want := []string{"Lock: Which lock? flock|fcntl|Don't answer", "Why? speed|safety|Don't answer"}; !slices.Equal(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
	reply := updates(seen, "agent_message_chunk")[0]["content"].(map[string]any)["text"]
	if want := `true {"Which lock?":"fcntl","Why?":"speed"}`; reply != want {
		t.Errorf("reply %q, want %q", reply, want)
	}
	_, seen = c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("question")}})
	if reply := updates(seen, "agent_message_chunk")[0]["content"].(map[string]any)["text"]; reply != "false " {
		t.Errorf("an unanswered question: reply %q, want a denial", reply)
	}
}

// TestCancelQueue: a second prompt while a turn runs is queued, like a
// _spbridge/queue message; session/cancel hands both back as unsent, the
// queued prompt answered cancelled.
func TestCancelQueue(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	pid := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("slow")}})
	c.until(func(m map[string]any) bool { return m["method"] == "session/update" })
	again := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("again")}})
	q, _ := c.response(c.call("_spbridge/queue", map[string]any{"sessionId": sid, "prompt": []any{textBlock("later")}}))
	if q["result"].(map[string]any)["queued"] != true {
		t.Errorf("queue: %v", q)
	}
	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	for _, id := range []float64{pid, again} {
		r, _ := c.response(id)
		if r["result"].(map[string]any)["stopReason"] != "cancelled" {
			t.Errorf("cancelled prompt %v: %v", id, r)
		}
	}
	// The interrupted turn handed its queue back; the next prompt goes on.
	res, _ = c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	if res["stopReason"] != "end_turn" {
		t.Errorf("after cancel: %v", res)
	}
	c.request("_spbridge/save", map[string]any{"sessionId": sid})
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	if fmt.Sprint(p.Conv.Unsent) != "[again later]" || len(p.Conv.Queued) != 0 {
		t.Errorf("unsent %v queued %v", p.Conv.Unsent, p.Conv.Queued)
	}

	// A queued message runs after a turn that completes.
	pid = c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("slow")}})
	c.until(func(m map[string]any) bool { return m["method"] == "session/update" })
	c.request("_spbridge/queue", map[string]any{"sessionId": sid, "prompt": []any{textBlock("queued one")}})
	c.backend(0).finish <- struct{}{} // the slow turn completes
	c.response(pid)
	c.until(func(m map[string]any) bool {
		if m["method"] != "_spbridge/item" {
			return false
		}
		it := m["params"].(map[string]any)["item"].(map[string]any)
		return it["type"] == "user" && it["text"] == "queued one"
	})
}

func TestLoadReplaysAndRestores(t *testing.T) {
	pkg := newPackage(t)
	c := startServer(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("MARK first")}})
	if err := c.wait(); err != nil { // closing stdin saves what changed
		t.Fatal(err)
	}
	if !c.backend(0).closed {
		t.Error("the CLI was not closed at shutdown")
	}

	c2 := startServer(t)
	// session/load by the package path alone.
	_, seen := c2.request("session/load", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}})
	if u := updates(seen, "user_message_chunk"); len(u) != 1 || u[0]["content"].(map[string]any)["text"] != "MARK first" {
		t.Errorf("replayed user messages %v", u)
	}
	if len(updates(seen, "agent_message_chunk")) != 1 || len(updates(seen, "tool_call")) != 1 || count(seen, "_spbridge/edited") != 0 {
		t.Errorf("replay: %v", seen)
	}
	c2.request("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("second")}})
	c2.request("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("third")}})
	sent := c2.backend(0).texts()
	want0 := "# Conversation so far\nUser: MARK first\n\nAssistant: Hello\n\nTool Read: /tmp/a.txt" + restore.Closing + "second"
	if len(sent) != 2 || sent[0] != want0 || sent[1] != "third" {
		t.Errorf("sent %q", sent)
	}
	// Opening the same package twice is refused.
	m, _ := c2.response(c2.call("session/new", newSessionParams(pkg)))
	if errCode(m) != jsonrpc.CodeInvalidRequest {
		t.Errorf("second open: %v", m)
	}
}

func TestSessionsRunConcurrently(t *testing.T) {
	c := startServer(t)
	var ids []string
	for range 3 {
		res, _ := c.request("session/new", newSessionParams(newPackage(t)))
		ids = append(ids, res["sessionId"].(string))
	}
	var pids []float64
	for i, id := range ids {
		pids = append(pids, c.call("session/prompt", map[string]any{"sessionId": id, "prompt": []any{textBlock("slow")}}))
		<-c.backend(i).began
	}
	for _, id := range ids {
		c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": id}})
	}
	for _, pid := range pids {
		if r, _ := c.response(pid); r["result"].(map[string]any)["stopReason"] != "cancelled" {
			t.Errorf("prompt %v: %v", pid, r)
		}
	}
}

func TestShutdownInterruptsAndSaves(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("slow")}})
	c.until(func(m map[string]any) bool { return m["method"] == "session/update" })
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	if len(p.Conv.Items) < 2 || p.Conv.Items[len(p.Conv.Items)-1].String("text") != "Interrupted." {
		t.Errorf("saved items %d", len(p.Conv.Items))
	}
}

// TestSessionWithoutMeta is an editor that knows nothing of spbridge: its
// session gets a package of its own, which session/load opens again.
func TestSessionWithoutMeta(t *testing.T) {
	dir := t.TempDir()
	c := startServerWith(t, Config{SessionsDir: dir, DefaultBackend: "claude"})
	res, _ := c.request("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	sid := res["sessionId"].(string)
	if filepath.Dir(sid) != dir {
		t.Fatalf("sessionId %q is not under %s", sid, dir)
	}
	if res, _ := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}}); res["stopReason"] != "end_turn" {
		t.Errorf("prompt: %v", res)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	c2 := startServerWith(t, Config{SessionsDir: dir, DefaultBackend: "claude"})
	_, seen := c2.request("session/load", map[string]any{"sessionId": sid, "cwd": t.TempDir(), "mcpServers": []any{}})
	if len(updates(seen, "user_message_chunk")) != 1 {
		t.Errorf("load replayed %v", seen)
	}
}

func TestNewConversationKeepAndModel(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	c.request("_spbridge/save", map[string]any{"sessionId": sid})
	if _, err := os.Stat(filepath.Join(pkg, "agent", "conversation.json")); err != nil {
		t.Fatal(err)
	}
	// Model selection.
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "opus"})
	if opt := res["configOptions"].([]any)[0].(map[string]any); opt["currentValue"] != "opus" {
		t.Errorf("model option %v", opt)
	}
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "x"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown option: %v", m)
	}
	// New Conversation removes agent/ and a new CLI takes the next prompt.
	c.request("_spbridge/newConversation", map[string]any{"sessionId": sid})
	if _, err := os.Stat(filepath.Join(pkg, "agent")); !os.IsNotExist(err) {
		t.Errorf("agent/ after New Conversation: %v", err)
	}
	// The session still holds its package: ending the old CLI is not
	// closing the session.
	if l, err := pkglock.Acquire(pkg); err == nil {
		l.Unlock()
		t.Error("the package is not locked after New Conversation")
	}
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("fresh")}})
	if n := len(c.backends); n != 2 || !c.backend(0).closed {
		t.Errorf("%d backends, first closed %v", n, c.backend(0).closed)
	}
	// The keep switch off: the next save removes agent/.
	c.request("_spbridge/save", map[string]any{"sessionId": sid})
	c.request("_spbridge/setKeepConversation", map[string]any{"sessionId": sid, "keep": false})
	c.request("_spbridge/save", map[string]any{"sessionId": sid})
	if _, err := os.Stat(filepath.Join(pkg, "agent")); !os.IsNotExist(err) {
		t.Errorf("agent/ with keep off: %v", err)
	}
	if m, _ := c.response(c.call("_spbridge/setKeepConversation", map[string]any{"sessionId": sid})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("keep missing: %v", m)
	}
	if m, _ := c.response(c.call("_spbridge/rate", map[string]any{"sessionId": sid, "itemId": "x", "rating": "meh"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("bad rating: %v", m)
	}
}

func TestAuthenticate(t *testing.T) {
	logged := map[string]bool{"claude": true}
	c := startServerWith(t, Config{AuthStatus: func(_ context.Context, b string) (bool, error) { return logged[b], nil }})
	res, _ := c.request("initialize", map[string]any{"protocolVersion": 1})
	methods := res["authMethods"].([]any)
	if len(methods) != 2 || methods[0].(map[string]any)["type"] != nil ||
		!strings.Contains(methods[0].(map[string]any)["description"].(string), "spbridge login --backend claude") {
		t.Errorf("authMethods without auth.terminal %v", methods)
	}
	if _, seen := c.request("authenticate", map[string]any{"methodId": "claude-login"}); len(seen) != 0 {
		t.Errorf("unexpected %v", seen)
	}
	if m, _ := c.response(c.call("authenticate", map[string]any{"methodId": "codex-login"})); errCode(m) != CodeAuthRequired ||
		!strings.Contains(m["error"].(map[string]any)["message"].(string), "spbridge login --backend codex") {
		t.Errorf("codex not logged in: %v", m)
	}
	if m, _ := c.response(c.call("authenticate", map[string]any{"methodId": "other"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown method: %v", m)
	}
}

// TestCrashFailsOnlyItsSession: one session's CLI dies; the other's turn
// goes on, and the crashed session takes the next prompt.
func TestCrashFailsOnlyItsSession(t *testing.T) {
	c := startServer(t)
	a, _ := c.request("session/new", newSessionParams(newPackage(t)))
	b, _ := c.request("session/new", newSessionParams(newPackage(t)))
	slow := c.call("session/prompt", map[string]any{"sessionId": b["sessionId"], "prompt": []any{textBlock("slow")}})
	res, seen := c.request("session/prompt", map[string]any{"sessionId": a["sessionId"], "prompt": []any{textBlock("crash")}})
	meta := res["_meta"].(map[string]any)["spbridge"].(map[string]any)
	if res["stopReason"] != "end_turn" || meta["status"] != "failed" {
		t.Errorf("crashed turn: %v", res)
	}
	var ofA []map[string]any
	for _, m := range seen {
		if p, _ := m["params"].(map[string]any); p != nil && p["sessionId"] == a["sessionId"] {
			ofA = append(ofA, m)
		}
	}
	if chunks := updates(ofA, "agent_message_chunk"); len(chunks) == 0 || !strings.HasPrefix(chunks[len(chunks)-1]["content"].(map[string]any)["text"].(string), "Error: Claude Code exited") {
		t.Errorf("the failure was not shown: %v", chunks)
	}
	c.backend(1).finish <- struct{}{}
	if r, _ := c.response(slow); r["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Errorf("the other session's turn: %v", r)
	}
	if res, _ := c.request("session/prompt", map[string]any{"sessionId": a["sessionId"], "prompt": []any{textBlock("hi")}}); res["stopReason"] != "end_turn" {
		t.Errorf("after the crash: %v", res)
	}
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// TestTerminalOutput: a command's output streams to a client that has
// terminals of its own (initialize's clientCapabilities._meta.
// terminal_output) as _meta.terminal_output with the new bytes alone, then
// the final output the terminal lacks and _meta.terminal_exit; to any
// other client as the call's text content, growing, then whole.
func TestTerminalOutput(t *testing.T) {
	for _, terminal := range []bool{true, false} {
		c := startPlain(t, Config{}, nil)
		c.request("initialize", map[string]any{"protocolVersion": 1,
			"clientCapabilities": map[string]any{"_meta": map[string]any{"terminal_output": terminal}}})
		res, _ := c.request("session/new", newSessionParams(newPackage(t)))
		sid := res["sessionId"].(string)
		_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("term")}})
		calls, ups := updates(seen, "tool_call"), updates(seen, "tool_call_update")
		if len(calls) != 1 {
			t.Fatalf("terminal %v: tool calls %v", terminal, calls)
		}
		id := calls[0]["toolCallId"].(string)
		if !terminal {
			var texts []string
			for _, u := range ups {
				content := u["content"].([]any)
				texts = append(texts, content[0].(map[string]any)["content"].(map[string]any)["text"].(string))
			}
			want := []string{"```\ntick 1\n```", "```\ntick 1\ntick 2\n```", "```\nstart\ntick 1\ntick 2\n```"}
			if !slices.Equal(texts, want) || ups[2]["status"] != "failed" || calls[0]["_meta"] != nil {
				t.Errorf("terminal off: texts %q, updates %v", texts, ups)
			}
			continue
		}
		term := []any{map[string]any{"type": "terminal", "terminalId": id}}
		info, _ := calls[0]["_meta"].(map[string]any)["terminal_info"].(map[string]any)
		if !reflect.DeepEqual(calls[0]["content"], term) || info["terminal_id"] != id {
			t.Errorf("terminal on: tool_call %v", calls[0])
		}
		var data []string
		for _, u := range ups[:len(ups)-1] {
			o := u["_meta"].(map[string]any)["terminal_output"].(map[string]any)
			if o["terminal_id"] != id || u["content"] != nil || u["status"] != nil {
				t.Errorf("terminal on: output update %v", u)
			}
			data = append(data, o["data"].(string))
		}
		if want := []string{"tick 1\n", "tick 2\n", wire.ClearTerminal + "start\ntick 1\ntick 2\n"}; !slices.Equal(data, want) {
			t.Errorf("terminal on: data %q, want %q", data, want)
		}
		last := ups[len(ups)-1]
		exit := last["_meta"].(map[string]any)["terminal_exit"]
		if want := map[string]any{"terminal_id": id, "exit_code": 2.0, "signal": nil}; !reflect.DeepEqual(exit, want) ||
			last["status"] != "failed" || !reflect.DeepEqual(last["content"], term) {
			t.Errorf("terminal on: last update %v", last)
		}
	}
}

// rowsOf are the CLIs' rows with their backends made by newBackend; one it
// fails to make is a CLI this spbridge does not have.
func rowsOf(newBackend func(name string, o backend.Options) (backend.Backend, error)) []backend.Plugin {
	rows := slices.Clone(clis.All)
	for i := range rows {
		name := rows[i].Name
		rows[i].New = func(o backend.Options, _ map[string]string) backend.Backend {
			be, err := newBackend(name, o)
			if err != nil {
				return nil
			}
			return be
		}
	}
	return rows
}
