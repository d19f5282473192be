package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// This file is a third CLI that exists only in the tests: a fake program
// (this test binary in a helper mode), its backend over the one turn
// driver (backend.Driver), its mapper and its row (backend.Plugin). The
// test that registers it (TestThirdCLI...) runs it through serve without
// a switch anywhere knowing it: the guard that the table of CLIs is
// complete.

// thirdName is the third CLI's name; $SPBRIDGE_THIRD is its program.
const thirdName = "third"

// thirdCLIEnv turns this test binary into the third CLI.
const thirdCLIEnv = "SPBRIDGE_TEST_THIRD_CLI"

// thirdHomeEnv is the folder the third CLI keeps its sessions in, one
// file each (SESSION.jsonl): its store of past sessions.
const thirdHomeEnv = "SPBRIDGE_TEST_THIRD_HOME"

// thirdTool is the third CLI's one tool, which runs a command.
const thirdTool = "sh"

func init() { helperModes[thirdCLIEnv] = thirdCLIMain }

// thirdPlugin is the third CLI's row.
var thirdPlugin = backend.Plugin{
	Name:     thirdName,
	Display:  "Third CLI",
	Provider: "third-cli",
	New:      newThirdBackend,
	Program: func() (string, error) {
		return backend.FindProgram(thirdName, "", errThirdNotFound)
	},
	LoginArgs: []string{"login"},
	AuthStatus: func(context.Context) (backend.AuthStatus, error) {
		return backend.AuthStatus{LoggedIn: true}, nil
	},
	Logout:      func(context.Context) error { return nil },
	Mapper:      func(newID itemmap.IDFunc, _ map[string]string) itemmap.Mapper { return newThirdMapper(newID, "") },
	Models:      []string{"third-small"},
	NotLoggedIn: func(failure string) bool { return failure == thirdNotLoggedIn },
	Continue:    func(id string) string { return "third --resume " + id },
	Tools:       backend.Tools{Commands: []string{thirdTool}, Kinds: map[string]string{thirdTool: itemmap.KindExecute}},
	History:     thirdStore{},
	Trust: trust.CLI{Name: thirdName, Who: "Third CLI", Files: thirdFolderFiles,
		LeftOut: "its greeting", RunsWith: "Third CLI runs without the folder's greeting"},
}

// thirdFolderFiles is what of a folder the third CLI applies when it runs
// there trusted: its .third/greeting.
func thirdFolderFiles(dir string, _ []string) []string {
	p := filepath.Join(dir, ".third", "greeting")
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return []string{p}
}

var errThirdNotFound = errors.New("the third CLI was not found")

// thirdNotLoggedIn is the failure of a turn of the third CLI when it is not
// logged in.
const thirdNotLoggedIn = "The third CLI is not logged in."

// thirdCLIMain is the third CLI: each line it reads is a JSON message. A
// prompt {"type":"prompt","text":…} gets its session, the echo of the
// prompt's last paragraph ("heard: …", "told the conversation so far"
// when the prompt opens with it), and the turn's end; a last paragraph
// "run CMD" first asks to run CMD with its one tool and waits for the
// answer ({"type":"answer","id":…,"allow":…}); "log out" fails the turn as
// not logged in. With --trusted, each reply ends with the working
// folder's .third/greeting, when it has one. It exits at its input's
// end; --resume ID continues session ID. Each session is kept in
// $SPBRIDGE_TEST_THIRD_HOME/ID.jsonl: a first line {"third":ID,"cwd":…},
// then each prompt and each line the CLI printed.
func thirdCLIMain() int {
	if slices.Contains(os.Args[1:], "--version") {
		fmt.Println("third 1.0.0")
		return 0
	}
	session := fmt.Sprintf("third-%d", os.Getpid())
	if i := slices.Index(os.Args, "--resume"); i > 0 && i+1 < len(os.Args) {
		session = os.Args[i+1]
	}
	var log *json.Encoder
	if home := os.Getenv(thirdHomeEnv); home != "" {
		path := filepath.Join(home, session+".jsonl")
		_, err := os.Stat(path)
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if ferr != nil {
			fmt.Fprintln(os.Stderr, ferr)
			return 1
		}
		defer f.Close()
		log = json.NewEncoder(f)
		if err != nil {
			wd, _ := os.Getwd()
			log.Encode(map[string]string{"third": session, "cwd": wd})
		}
	}
	out := json.NewEncoder(os.Stdout)
	emit := func(m thirdMsg) {
		out.Encode(m)
		if log != nil {
			log.Encode(m)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	next := func() (m thirdMsg, ok bool) {
		for in.Scan() {
			if json.Unmarshal(in.Bytes(), &m) == nil {
				return m, true
			}
		}
		return m, false
	}
	for {
		m, ok := next()
		if !ok {
			return 0
		}
		if m.Type != "prompt" {
			continue
		}
		if log != nil {
			log.Encode(m)
		}
		emit(thirdMsg{Type: "session", ID: session})
		told := strings.HasPrefix(m.Text, "# Conversation so far\n")
		last := m.Text
		if i := strings.LastIndex(last, "\n\n"); i >= 0 {
			last = last[i+2:]
		}
		reply := "heard: " + last
		if told {
			reply += " (told the conversation so far)"
		}
		if greeting, err := os.ReadFile(filepath.Join(".third", "greeting")); err == nil && slices.Contains(os.Args, "--trusted") {
			reply += " (greeting: " + string(greeting) + ")"
		}
		if last == "log out" {
			emit(thirdMsg{Type: "failed", Text: thirdNotLoggedIn})
			continue
		}
		if cmd, ok := strings.CutPrefix(last, "run "); ok {
			id := fmt.Sprintf("call-%s-%d", session, time.Now().UnixNano())
			emit(thirdMsg{Type: "ask", ID: id, Command: cmd})
			for {
				a, ok := next()
				if !ok {
					return 0
				}
				if a.Type == "answer" && a.ID == id {
					if a.Allow {
						emit(thirdMsg{Type: "tool", ID: id, Command: cmd, Output: "ran " + cmd})
					} else {
						emit(thirdMsg{Type: "tool", ID: id, Command: cmd, Denied: true})
					}
					break
				}
			}
		}
		emit(thirdMsg{Type: "text", Text: reply})
		emit(thirdMsg{Type: "end", ID: session})
	}
}

// thirdMsg is a line of the third CLI's protocol, either way.
type thirdMsg struct {
	Type    string `json:"type"`
	ID      string `json:"id,omitempty"`
	Text    string `json:"text,omitempty"`
	Command string `json:"command,omitempty"`
	Output  string `json:"output,omitempty"`
	Denied  bool   `json:"denied,omitempty"`
	Allow   bool   `json:"allow,omitempty"`
}

// thirdMapper maps the third CLI's lines to items; its commands run in
// cwd ("" when not known).
type thirdMapper struct {
	newID     itemmap.IDFunc
	cwd       string
	inTurn    bool
	session   string
	tools     map[string]archive.Item // by call id
	approvals map[string]string       // the approval item of each call id
	history   []archive.Message
}

func newThirdMapper(newID itemmap.IDFunc, cwd string) *thirdMapper {
	if newID == nil {
		newID = archive.NewID
	}
	return &thirdMapper{newID: newID, cwd: cwd, tools: map[string]archive.Item{}, approvals: map[string]string{}}
}

func (m *thirdMapper) item(typ string) archive.Item {
	return archive.ItemFromMap(map[string]any{"id": m.newID(), "type": typ})
}

func (m *thirdMapper) InTurn() bool { return m.inTurn }

func (m *thirdMapper) Line(line []byte) itemmap.Result {
	var msg thirdMsg
	if json.Unmarshal(line, &msg) != nil {
		return itemmap.Result{Skipped: true}
	}
	var r itemmap.Result
	m.inTurn = true
	switch msg.Type {
	case "session":
		m.session = msg.ID
		r.Session = &itemmap.Session{ID: msg.ID}
	case "text":
		it := m.item(archive.TypeAssistant)
		it.Set("text", msg.Text)
		r.Changes = append(r.Changes, itemmap.Change{Op: itemmap.OpAdd, Item: it})
		m.history = append(m.history, archive.Message{Role: "assistant", Content: []archive.Block{archive.NewTextBlock(msg.Text)}})
	case "ask":
		tool := m.item(archive.TypeTool)
		tool.Set("name", thirdTool)
		tool.Set("summary", msg.Command)
		tool.Set("status", archive.StatusRunning)
		tool.Set("statusText", "")
		m.tools[msg.ID] = tool
		r.Changes = append(r.Changes, itemmap.Change{Op: itemmap.OpAdd, Item: tool, Tool: thirdView(msg.Command, "")})
		ap := m.item(archive.TypeToolApproval)
		ap.Set("name", thirdTool)
		ap.Set("summary", msg.Command)
		ap.Set("detail", "command: "+msg.Command)
		m.approvals[msg.ID] = ap.ID()
		r.Changes = append(r.Changes, itemmap.Change{Op: itemmap.OpAdd, Item: ap})
		input, _ := json.Marshal(map[string]string{"command": msg.Command})
		r.Approvals = append(r.Approvals, itemmap.Approval{RequestID: msg.ID, ToolUseID: msg.ID, ToolName: thirdTool, Input: input,
			ItemID: ap.ID(), ToolItemID: tool.ID(), Tool: thirdView(msg.Command, ""), Cwd: m.cwd})
		m.history = append(m.history, archive.Message{Role: "assistant", Content: []archive.Block{archive.NewToolCallBlock(msg.ID, thirdTool, string(input))}})
	case "tool":
		tool, ok := m.tools[msg.ID]
		if !ok {
			return itemmap.Result{Skipped: true}
		}
		status := archive.StatusSucceeded
		if msg.Denied {
			status = archive.StatusDenied
		}
		tool.Set("status", status)
		if msg.Output != "" {
			tool.Set("detail", "output:\n"+msg.Output)
		}
		r.Changes = append(r.Changes, itemmap.Change{Op: itemmap.OpUpdate, Item: tool, Tool: thirdView(msg.Command, msg.Output)})
		m.history = append(m.history, archive.Message{Role: "tool", Content: []archive.Block{archive.NewToolResultBlock(msg.ID, thirdTool, msg.Output, msg.Denied)}})
	case "failed":
		it := m.item(archive.TypeFailure)
		it.Set("text", msg.Text)
		r.Changes = append(r.Changes, itemmap.Change{Op: itemmap.OpAdd, Item: it})
		m.inTurn = false
		r.End = &itemmap.TurnEnd{Status: itemmap.TurnFailed, SessionID: m.session, History: m.history}
		m.history = nil
	case "end":
		m.inTurn = false
		r.End = &itemmap.TurnEnd{Status: itemmap.TurnCompleted, SessionID: m.session, History: m.history}
		m.history = nil
	default:
		r.Skipped = true
	}
	return r
}

// thirdView is how a call of the third CLI's tool is presented.
func thirdView(cmd, output string) *itemmap.ToolView {
	return &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`" + cmd + "`", Terminal: true, Output: output}
}

func (m *thirdMapper) Finish(interrupted bool, text, detail string) itemmap.Result {
	if !m.inTurn {
		return itemmap.Result{}
	}
	m.inTurn = false
	status := itemmap.TurnFailed
	it := m.item(archive.TypeFailure)
	it.Set("text", text)
	it.Set("detail", detail)
	if interrupted {
		status = itemmap.TurnInterrupted
		it = m.item(archive.TypeNotice)
		it.Set("text", "Interrupted.")
	}
	r := itemmap.Result{Changes: []itemmap.Change{{Op: itemmap.OpAdd, Item: it}}}
	r.End = &itemmap.TurnEnd{Status: status, SessionID: m.session, History: m.history}
	m.history = nil
	return r
}

// thirdStore is the third CLI's store of past sessions: the files its
// sessions are kept in, imported through its mapper.
type thirdStore struct{}

func (thirdStore) Name() string            { return thirdName }
func (thirdStore) Display() string         { return "Third CLI" }
func (thirdStore) Dir() string             { return os.Getenv(thirdHomeEnv) }
func (thirdStore) Where(dir string) string { return dir }
func (thirdStore) Files(dir, _ string) []history.File {
	return history.RegularFiles(dir, func(name string) bool { return strings.HasSuffix(name, ".jsonl") })
}
func (thirdStore) FileID(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".jsonl")
}
func (thirdStore) Sniff(v gjson.Result) bool { return v.Get("third").Exists() }

// Summarize reads a session's folder from its first line and its title
// from its first prompt.
func (s thirdStore) Summarize(f history.File) (history.Entry, bool) {
	r, size, err := history.OpenRegular(f.Path)
	if err != nil {
		return history.Entry{}, false
	}
	defer r.Close()
	e := history.Entry{Backend: s.Name(), ID: s.FileID(f.Path), Path: f.Path, UpdatedAt: f.Mod, Size: size}
	history.HeadLines(r, size, func(line []byte) bool {
		v, ok := history.Object(line)
		if ok && v.Get("third").Exists() {
			e.Cwd = v.Get("cwd").String()
		}
		if ok && v.Get("type").String() == "prompt" {
			e.Title = history.CutTitle(v.Get("text").String())
			return false
		}
		return true
	})
	return e, e.Title != ""
}

func (thirdStore) NewImporter(newID itemmap.IDFunc, rep *history.Report) history.Importer {
	return &thirdImport{rep: rep, m: newThirdMapper(newID, ""), conv: &archive.Conversation{}}
}

// thirdImport imports a session file: each prompt a user's item, each
// line the CLI printed through its mapper, as in a live turn.
type thirdImport struct {
	rep  *history.Report
	m    *thirdMapper
	conv *archive.Conversation
	turn history.Turn
}

func (ti *thirdImport) Line(line []byte) bool {
	v, ok := history.Object(line)
	switch {
	case !ok:
		return false
	case v.Get("third").Exists():
		ti.rep.ID, ti.rep.Cwd = v.Get("third").String(), v.Get("cwd").String()
		return true
	case v.Get("type").String() == "prompt":
		text := v.Get("text").String()
		ti.rep.Turns++
		ti.turn = history.Turn{User: &archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(text)}}, First: len(ti.conv.Items), Active: true}
		it := ti.m.item(archive.TypeUser)
		it.Set("text", text)
		history.ApplyResult(ti.conv, itemmap.Result{Changes: []itemmap.Change{{Op: itemmap.OpAdd, Item: it}}})
		return true
	}
	r := ti.m.Line(line)
	history.ApplyResult(ti.conv, r)
	history.EndTurn(ti.conv, &ti.turn, r.End, thirdPlugin.Provider)
	return !r.Skipped
}

func (ti *thirdImport) Finish() *archive.Conversation { return ti.conv }

// thirdBackend runs the third CLI: a process a turn, its lines read by
// the one turn driver.
type thirdBackend struct {
	*backend.CLI

	mu      sync.Mutex
	session string // the CLI's session, once it said it (or the one resumed)
	started bool
}

func newThirdBackend(opts backend.Options, _ map[string]string) backend.Backend {
	b := &thirdBackend{CLI: backend.NewCLI(thirdName, opts, errThirdNotFound), session: opts.Resume}
	b.Environ = func() []string { return append(os.Environ(), thirdCLIEnv+"=1") }
	return b
}

func (b *thirdBackend) Name() string { return thirdName }

func (b *thirdBackend) Started() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}

func (b *thirdBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	interrupt, done := b.BeginTurn(msg)
	defer done()
	backend.FolderTrust(ctx, b.Opts.Folder, thirdName, h, b.Opts.NewID)
	var args []string
	if b.Opts.Folder.Trusted(thirdName) {
		args = append(args, "--trusted")
	}
	b.mu.Lock()
	if b.session != "" {
		args = append(args, "--resume", b.session)
	}
	b.mu.Unlock()
	p, err := b.Start(args)
	if err != nil {
		return backend.FailBeforeStart(b.Opts.NewID, h, "The third CLI could not be started: "+err.Error(), "")
	}
	c := &thirdConn{b: b, p: p, m: newThirdMapper(b.Opts.NewID, b.Opts.Dir)}
	d := &backend.Driver{Conn: c, Proc: p, Opts: b.Opts, Who: "the third CLI", Interrupt: interrupt,
		Sent: backend.Post(p, thirdMsg{Type: "prompt", Text: msg.CLIText()})}
	end := d.Run(ctx, h)
	c.Reap()
	if !end.NotStarted && end.SessionID != "" {
		b.mu.Lock()
		b.session, b.started = end.SessionID, true
		b.mu.Unlock()
	}
	return end
}

// thirdConn is one turn of the third CLI's protocol.
type thirdConn struct {
	b      *thirdBackend
	p      *cliproc.Proc
	m      *thirdMapper
	reaped bool
}

func (c *thirdConn) Line(data []byte, h backend.Host) ([]itemmap.Approval, *itemmap.TurnEnd) {
	r := c.m.Line(data)
	for _, ch := range r.Changes {
		h.Change(ch)
	}
	return r.Approvals, r.End
}

func (c *thirdConn) Answer(id string, d backend.Decision, _ backend.Host) {
	backend.Post(c.p, thirdMsg{Type: "answer", ID: id, Allow: d.Allow})
}

func (c *thirdConn) Written(err error) error { return err }
func (c *thirdConn) Interrupt()              { c.p.CloseStdin() }
func (c *thirdConn) Escalate(int) bool       { return false }
func (c *thirdConn) Settled() bool           { return true }
func (c *thirdConn) Drained(backend.Host)    {}

func (c *thirdConn) Ended(end *itemmap.TurnEnd, _ bool, _ backend.Host) *itemmap.TurnEnd { return end }

func (c *thirdConn) Finish(interrupted bool, text, detail string) itemmap.Result {
	return c.m.Finish(interrupted, text, detail)
}

func (c *thirdConn) Reap() string {
	if !c.reaped {
		c.reaped = true
		c.b.CLI.Reap(c.p)
	}
	return c.b.Tail(c.p)
}

// thirdServe is spbridge serve run in this process (so that it sees the
// CLIs a test registered), driven line by line as an editor would. It
// answers every permission request with its allow_always option, else its
// allow_once, and keeps the permission requests.
type thirdServe struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  *bufio.Scanner
	stderr syncBuffer
	code   chan int
	id     int
	asked  []map[string]any // the permission requests' params
}

func startThirdServe(t *testing.T, args ...string) *thirdServe {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &thirdServe{t: t, in: inW, lines: bufio.NewScanner(outR), code: make(chan int, 1)}
	s.lines.Buffer(nil, 64<<20)
	go func() {
		code := run(context.Background(), append([]string{"serve"}, args...), inR, outW, &s.stderr)
		outW.Close()
		s.code <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // a serve that ends says what it still has to say
		<-s.code
	})
	return s
}

func (s *thirdServe) write(m map[string]any) {
	m["jsonrpc"] = "2.0"
	data, _ := json.Marshal(m)
	if _, err := s.in.Write(append(data, '\n')); err != nil {
		s.t.Fatalf("write to serve: %v", err)
	}
}

// call sends a request and reads until its response, answering the
// permission requests that come meanwhile; it returns the result and the
// session/update notifications that came with it.
func (s *thirdServe) call(method string, params map[string]any) (result map[string]any, updates []map[string]any) {
	s.t.Helper()
	result, updates, rpcErr := s.request(method, params)
	if rpcErr != nil {
		s.t.Fatalf("%s: %v\nstderr:\n%s", method, rpcErr, s.stderr.String())
	}
	return result, updates
}

// request is call with the error of a request that failed.
func (s *thirdServe) request(method string, params map[string]any) (result map[string]any, updates []map[string]any, rpcErr map[string]any) {
	s.t.Helper()
	s.id++
	id := float64(s.id)
	s.write(map[string]any{"id": s.id, "method": method, "params": params})
	for s.lines.Scan() {
		var m map[string]any
		if err := json.Unmarshal(s.lines.Bytes(), &m); err != nil {
			s.t.Fatalf("serve wrote %q", s.lines.Text())
		}
		switch {
		case m["method"] == "session/update":
			p, _ := m["params"].(map[string]any)
			u, _ := p["update"].(map[string]any)
			updates = append(updates, u)
		case m["method"] == "session/request_permission":
			p, _ := m["params"].(map[string]any)
			s.asked = append(s.asked, p)
			choice := ""
			opts, _ := p["options"].([]any)
			for _, kind := range []string{"allow_always", "allow_once"} {
				for _, o := range opts {
					if o, _ := o.(map[string]any); o["kind"] == kind && choice == "" {
						choice, _ = o["optionId"].(string)
					}
				}
			}
			s.write(map[string]any{"id": m["id"], "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": choice}}})
		case m["id"] == id && m["method"] == nil:
			result, _ = m["result"].(map[string]any)
			rpcErr, _ = m["error"].(map[string]any)
			return result, updates, rpcErr
		}
	}
	s.t.Fatalf("serve ended without answering %s\nstderr:\n%s", method, s.stderr.String())
	return nil, nil, nil
}

// end closes serve's input and waits for it to end.
func (s *thirdServe) end() {
	s.t.Helper()
	s.in.Close()
	for s.lines.Scan() {
	}
	if code := <-s.code; code != 0 {
		s.t.Errorf("serve exited %d\nstderr:\n%s", code, s.stderr.String())
	}
	s.code <- 0 // for the cleanup
}

// updateTexts are the text chunks of the updates of kind, joined.
func updateTexts(updates []map[string]any, kind string) string {
	var b strings.Builder
	for _, u := range updates {
		if u["sessionUpdate"] != kind {
			continue
		}
		if c, _ := u["content"].(map[string]any); c != nil {
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestThirdCLIServe: a CLI that only this test knows, registered as one
// row of the list (clis.Register), runs through serve end to end: its
// log-in offered, a new session on it, a prompt, a tool call whose
// permission the client grants always, a failure its row tells as not
// logged in, session/list (with a session of its store and the command
// that continues it), session/load of that one (imported, then continued)
// and, in a later serve, of the first (its next prompt reaches a new
// process of the CLI told the conversation so far), and the trust question
// of a folder with its own configuration.
// No switch in spbridge names it: this is the guard that the table of
// CLIs is complete.
func TestThirdCLIServe(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(backend.ProgramVar(thirdName), exe)
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	home := t.TempDir()
	t.Setenv(thirdHomeEnv, home)
	undo := clis.Register(thirdPlugin)
	defer undo()
	cwd := t.TempDir()

	// A session the user had with the CLI in a terminal.
	cli := exec.Command(exe)
	cli.Dir, cli.Env = cwd, append(os.Environ(), thirdCLIEnv+"=1")
	cli.Stdin = strings.NewReader(`{"type":"prompt","text":"from the terminal"}` + "\n")
	out, err := cli.Output()
	var first thirdMsg
	if err == nil {
		err = json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &first)
	}
	if err != nil || first.Type != "session" {
		t.Fatalf("the CLI in a terminal: %v\n%s", err, out)
	}
	terminal := thirdName + ":" + first.ID

	s := startThirdServe(t, "--backend", thirdName)
	inited, _ := s.call("initialize", map[string]any{"protocolVersion": 1})
	if methods, _ := json.Marshal(inited["authMethods"]); !strings.Contains(string(methods), `"third-login"`) {
		t.Errorf("initialize's authMethods %s do not offer the third CLI's log-in", methods)
	}
	created, _ := s.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	sid, _ := created["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", created)
	}

	res, updates := s.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hello"}}})
	if res["stopReason"] != "end_turn" || updateTexts(updates, "agent_message_chunk") != "heard: hello" {
		t.Errorf("the first prompt: %v, reply %q", res, updateTexts(updates, "agent_message_chunk"))
	}

	res, updates = s.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "run ls -l"}}})
	if res["stopReason"] != "end_turn" || updateTexts(updates, "agent_message_chunk") != "heard: run ls -l" {
		t.Errorf("the tool's prompt: %v, reply %q", res, updateTexts(updates, "agent_message_chunk"))
	}
	if len(s.asked) != 1 {
		t.Fatalf("%d permission requests, want 1: %v", len(s.asked), s.asked)
	}
	call, _ := s.asked[0]["toolCall"].(map[string]any)
	if call["kind"] != itemmap.KindExecute || !strings.Contains(fmt.Sprint(call["title"]), "ls -l") {
		t.Errorf("the permission request's call: %v", call)
	}
	// Its tool runs commands (the row's vocabulary): "always" is offered,
	// scoped to the command.
	if opts, _ := json.Marshal(s.asked[0]["options"]); !strings.Contains(string(opts), `"allow_always"`) || !strings.Contains(string(opts), "ls -l") {
		t.Errorf("the permission request's options %s offer no allow_always for the command", opts)
	}
	var completed bool
	for _, u := range updates {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed" {
			data, _ := json.Marshal(u)
			completed = strings.Contains(string(data), "ran ls -l")
		}
	}
	if !completed {
		t.Errorf("no completed tool call with the command's output among %v", updates)
	}

	// Not logged in (as the row tells the failure): the prompt asks the
	// client to authenticate with the CLI's log-in, which the row's
	// status accepts.
	_, _, rpcErr := s.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "log out"}}})
	if rpcErr["code"] != float64(-32000) || !strings.Contains(fmt.Sprint(rpcErr["data"]), "backend:third") {
		t.Errorf("a prompt of a CLI not logged in: %v", rpcErr)
	}
	s.call("authenticate", map[string]any{"methodId": "third-login"})

	// Allowed always: the same command runs without asking again.
	res, updates = s.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "run ls -l"}}})
	if res["stopReason"] != "end_turn" || len(s.asked) != 1 || !strings.Contains(fmt.Sprint(updates), "ran ls -l") {
		t.Errorf("the command allowed always: %v, %d permission requests, updates %v", res, len(s.asked), updates)
	}

	// session/list: the session, and the one from the terminal (the
	// CLI's store, the row's); not the CLI's session the serve session ran
	// on.
	list, _ := s.call("session/list", map[string]any{"cwd": cwd})
	sessions, _ := list["sessions"].([]any)
	var listed, fromTerminal map[string]any
	for _, e := range sessions {
		switch e, _ := e.(map[string]any); e["sessionId"] {
		case sid:
			listed = e
		case terminal:
			fromTerminal = e
		}
	}
	if listed == nil || fromTerminal == nil || len(sessions) != 2 {
		t.Fatalf("session/list %v: want %s and %s", list, sid, terminal)
	}
	if fromTerminal["title"] != "from the terminal" || fromTerminal["cwd"] != cwd ||
		!strings.Contains(fmt.Sprint(fromTerminal["_meta"]), "continueCommand:third --resume "+first.ID) {
		t.Errorf("the terminal's session is listed as %v", fromTerminal)
	}
	meta, _ := listed["_meta"].(map[string]any)
	pkg, _ := meta["spbridge"].(map[string]any)["package"].(string)
	if pkg == "" {
		t.Fatalf("session/list names no package: %v", listed)
	}
	s.end()

	// A later serve, whose default is another CLI, loads it: the
	// conversation is replayed, and its next prompt goes to a new process
	// of the CLI it last ran on (its provider, the row's), told the
	// conversation so far.
	s = startThirdServe(t)
	s.call("initialize", map[string]any{"protocolVersion": 1})
	_, updates = s.call("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}})
	if got := updateTexts(updates, "user_message_chunk"); got != "hellorun ls -llog outrun ls -l" {
		t.Errorf("session/load replayed the user's messages %q", got)
	}
	if got := updateTexts(updates, "agent_message_chunk"); got != "heard: helloheard: run ls -lError: "+thirdNotLoggedIn+"heard: run ls -l" {
		t.Errorf("session/load replayed the replies %q", got)
	}
	res, updates = s.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "again"}}})
	if got := updateTexts(updates, "agent_message_chunk"); res["stopReason"] != "end_turn" || got != "heard: again (told the conversation so far)" {
		t.Errorf("the prompt after the load: %v, reply %q", res, got)
	}

	// session/load of the terminal's session imports it; its next prompt
	// continues the CLI's own session, told nothing more.
	_, updates = s.call("session/load", map[string]any{"sessionId": terminal, "cwd": cwd, "mcpServers": []any{}})
	if got := updateTexts(updates, "user_message_chunk") + "|" + updateTexts(updates, "agent_message_chunk"); got != "from the terminal|heard: from the terminal" {
		t.Errorf("session/load of the terminal's session replayed %q", got)
	}
	res, updates = s.call("session/prompt", map[string]any{"sessionId": terminal, "prompt": []any{map[string]any{"type": "text", "text": "go on"}}})
	if got := updateTexts(updates, "agent_message_chunk"); res["stopReason"] != "end_turn" || got != "heard: go on" {
		t.Errorf("the prompt after importing: %v, reply %q", res, got)
	}
	if log, err := os.ReadFile(filepath.Join(home, first.ID+".jsonl")); err != nil || !strings.Contains(string(log), `"text":"go on"`) {
		t.Errorf("the CLI's session did not go on: %v\n%s", err, log)
	}
	s.end()

	// A folder with the CLI's own configuration: the first prompt asks
	// whether to trust it (the row's trust.CLI), and the CLI runs with it
	// once trusted.
	s = startThirdServe(t)
	s.call("initialize", map[string]any{"protocolVersion": 1})
	greeted := t.TempDir()
	if err := os.MkdirAll(filepath.Join(greeted, ".third"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(greeted, ".third", "greeting"), []byte("hi there"), 0o644); err != nil {
		t.Fatal(err)
	}
	created, _ = s.call("session/new", map[string]any{"cwd": greeted, "mcpServers": []any{}, "_meta": map[string]any{"spbridge": map[string]any{"backend": thirdName}}})
	res, updates = s.call("session/prompt", map[string]any{"sessionId": created["sessionId"], "prompt": []any{map[string]any{"type": "text", "text": "hello"}}})
	if got := updateTexts(updates, "agent_message_chunk"); res["stopReason"] != "end_turn" || got != "heard: hello (greeting: hi there)" {
		t.Errorf("the prompt in a folder of the CLI's own: %v, reply %q", res, got)
	}
	if len(s.asked) != 1 || !strings.Contains(fmt.Sprint(s.asked[0]["toolCall"]), "Trust this folder? "+greeted) ||
		!strings.Contains(fmt.Sprint(s.asked[0]["toolCall"]), "Third CLI configuration would act: .third/greeting") {
		t.Errorf("the trust question: %v", s.asked)
	}
	s.end()

	// The conversation is saved as the third CLI's; the prefix went to the
	// CLI only.
	conv, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conv), `"third-cli"`) || strings.Contains(string(conv), "Conversation so far") || !strings.Contains(string(conv), "heard: again") {
		t.Errorf("conversation.json:\n%s", conv)
	}
}

// TestThirdCLIShell: the third CLI from the shell, through the same table:
// run (a turn whose tool the command line allows), conversation list
// --cli, replay of its recorded stream and import of a session of its
// store.
func TestThirdCLIShell(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(backend.ProgramVar(thirdName), exe)
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	home := t.TempDir()
	t.Setenv(thirdHomeEnv, home)
	undo := clis.Register(thirdPlugin)
	defer undo()

	pkg := newPackage(t)
	code, out, errOut := runCmd(t, "run", pkg, "--backend", thirdName, "--allow-tool", thirdTool, "--cwd", filepath.Dir(pkg), "hello", "run ls")
	if code != 0 || !strings.Contains(out, "heard: hello") || !strings.Contains(out, "heard: run ls") || !strings.Contains(out, "ran ls") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "conversation", "list", "--cli", "--backend", thirdName)
	if code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("conversation list --cli: exit %d\n%s\n%s", code, out, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(home, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("the CLI's sessions: %v", files)
	}
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	// replay maps the recorded stream with the row's mapper.
	code, out, errOut = runCmd(t, "replay", "--backend", thirdName, files[0])
	if code != 0 || !strings.Contains(out, `"heard: run ls"`) || !strings.Contains(out, `"toolApproval"`) {
		t.Errorf("replay: exit %d\n%s\n%s", code, out, errOut)
	}
	into := newPackage(t)
	code, out, errOut = runCmd(t, "import", "--backend", thirdName, id, into)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	conv, err := os.ReadFile(filepath.Join(into, "agent", "conversation.json"))
	if err != nil || !strings.Contains(string(conv), `"third-cli"`) || !strings.Contains(string(conv), "ran ls") || !strings.Contains(string(conv), "heard: run ls") {
		t.Errorf("the imported conversation: %v\n%s", err, conv)
	}
}
