package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/pkglock"
	"spbridge/internal/session"
)

// lockedBuffer is a log the server writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines is the requests as one write: the server reads them at once.
func (c *client) lines(msgs ...map[string]any) []float64 {
	var buf bytes.Buffer
	var ids []float64
	for _, m := range msgs {
		if _, ok := m["method"]; ok && m["id"] == nil && m["notification"] == nil {
			c.mu.Lock()
			c.nextID++
			m["id"] = c.nextID
			c.mu.Unlock()
			ids = append(ids, float64(c.nextID))
		}
		delete(m, "notification")
		m["jsonrpc"] = "2.0"
		data, _ := json.Marshal(m)
		buf.Write(append(data, '\n'))
	}
	c.in.Write(buf.Bytes())
	return ids
}

func req(method string, params any) map[string]any {
	return map[string]any{"method": method, "params": params}
}

func note(method string, params any) map[string]any {
	return map[string]any{"method": method, "params": params, "notification": true}
}

func promptParams(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{textBlock(text)}}
}

func stopReason(t *testing.T, m map[string]any) string {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("no result: %v", m)
	}
	s, _ := res["stopReason"].(string)
	return s
}

// index is where the response to id is among everything the server wrote.
func (c *client) index(id float64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.all {
		if m["id"] == id && m["method"] == nil {
			return i
		}
	}
	return -1
}

// TestCancelRightAfterPrompt: a cancel written together with its prompt
// cancels it, every time, whether the turn had begun or not.
func TestCancelRightAfterPrompt(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	for i := range 100 {
		text := "slow"
		if i%2 == 1 {
			text = "quiet" // a CLI that has written nothing yet
		}
		ids := c.lines(req("session/prompt", promptParams(sid, text)), note("session/cancel", map[string]any{"sessionId": sid}))
		m, _ := c.response(ids[0])
		if r := stopReason(t, m); r != "cancelled" {
			t.Fatalf("try %d (%s): stopReason %q, want cancelled: %v", i, text, r, m)
		}
	}
	// The session goes on.
	if res, _ := c.request("session/prompt", promptParams(sid, "hi")); res["stopReason"] != "end_turn" {
		t.Errorf("after the cancels: %v", res)
	}
}

// TestCancelBeforeTheCLIWrote: a turn cancelled while the CLI has written
// nothing ends cancelled, not failed.
func TestCancelBeforeTheCLIWrote(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	id := c.call("session/prompt", promptParams(sid, "quiet"))
	<-c.backend(0).began
	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	m, _ := c.response(id)
	if r := stopReason(t, m); r != "cancelled" {
		t.Errorf("stopReason %q, want cancelled: %v", r, m)
	}
}

// TestPromptAfterCancelWaits: a prompt written right after the cancel of a
// running turn runs once that turn ended, instead of being refused.
func TestPromptAfterCancelWaits(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	slow := c.call("session/prompt", promptParams(sid, "slow"))
	<-c.backend(0).began
	ids := c.lines(note("session/cancel", map[string]any{"sessionId": sid}), req("session/prompt", promptParams(sid, "hi")))
	if m, _ := c.response(slow); stopReason(t, m) != "cancelled" {
		t.Errorf("the cancelled turn: %v", m)
	}
	if m, _ := c.response(ids[0]); stopReason(t, m) != "end_turn" {
		t.Errorf("the prompt after the cancel: %v", m)
	}
}

// TestPipelinedAfterOpen: a prompt written together with the session/new
// or session/load that opens its package runs once the package is open.
func TestPipelinedAfterOpen(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	ids := c.lines(req("session/new", newSessionParams(pkg)), req("session/prompt", promptParams(pkg, "MARK one")))
	if m, _ := c.response(ids[0]); m["error"] != nil {
		t.Fatalf("session/new: %v", m)
	}
	if m, _ := c.response(ids[1]); stopReason(t, m) != "end_turn" {
		t.Fatalf("the pipelined prompt: %v", m)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}

	c2 := startServer(t)
	load := map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}}
	ids = c2.lines(req("session/load", load), req("session/prompt", promptParams(pkg, "two")), req("_spbridge/save", map[string]any{"sessionId": pkg}))
	if m, _ := c2.response(ids[0]); m["error"] != nil {
		t.Fatalf("session/load: %v", m)
	}
	if m, _ := c2.response(ids[1]); stopReason(t, m) != "end_turn" {
		t.Fatalf("the prompt after load: %v", m)
	}
	if m, _ := c2.response(ids[2]); m["error"] != nil {
		t.Fatalf("save: %v", m)
	}
	// The prompt is answered when its turn ends; the save was handled
	// after the turn began (so the turn's end saves again, once the
	// prompt is answered: the shutdown waits for that save).
	if !(c2.index(ids[0]) < c2.index(ids[1]) && c2.index(ids[0]) < c2.index(ids[2])) {
		t.Errorf("answered before the load: load %d, prompt %d, save %d", c2.index(ids[0]), c2.index(ids[1]), c2.index(ids[2]))
	}
	if err := c2.wait(); err != nil {
		t.Fatal(err)
	}
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	var users []string
	for _, it := range p.Conv.Items {
		if it.Type() == archive.TypeUser {
			users = append(users, it.String("text"))
		}
	}
	if strings.Join(users, "|") != "MARK one|two" {
		t.Errorf("saved user items %q", users)
	}
}

// gate holds every backend's making until it is opened.
type gate struct {
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 10), open: make(chan struct{})} }

func (g *gate) hook(*fakeBackend) {
	g.entered <- struct{}{}
	<-g.open
}

// TestMessagesForAnOpeningSession: what names a session that is still
// opening waits for it, in order; a cancel among them cancels the prompt
// before it.
func TestMessagesForAnOpeningSession(t *testing.T) {
	g := newGate()
	c := startServerHook(t, Config{}, g.hook)
	pkg := newPackage(t)
	ids := c.lines(req("session/new", newSessionParams(pkg)),
		req("session/prompt", promptParams(pkg, "first")),
		note("session/cancel", map[string]any{"sessionId": pkg}),
		req("_spbridge/save", map[string]any{"sessionId": pkg}),
		req("_spbridge/rate", map[string]any{"sessionId": pkg, "itemId": "X", "rating": "good"}),
		req("session/prompt", promptParams(pkg, "second")),
		req("initialize", map[string]any{"protocolVersion": 1}))
	<-g.entered
	// Answered once every line before it was read and routed.
	c.response(ids[len(ids)-1])
	ids = ids[:len(ids)-1]
	close(g.open)
	var at []int
	for i, id := range ids {
		m, _ := c.response(id)
		if m["error"] != nil {
			t.Errorf("request %d: %v", i, m)
		}
		at = append(at, c.index(id))
	}
	if m, _ := c.response(ids[1]); stopReason(t, m) != "cancelled" {
		t.Errorf("the prompt before the cancel: %v", m)
	}
	if m, _ := c.response(ids[4]); stopReason(t, m) != "end_turn" {
		t.Errorf("the prompt after the cancel: %v", m)
	}
	for i := 1; i < len(at); i++ {
		if at[i-1] > at[i] {
			t.Errorf("answers out of order: %v", at)
		}
	}
	if sent := c.backend(0).texts(); len(sent) != 1 || sent[0] != "second" {
		t.Errorf("the CLI got %q, want only the second prompt", sent)
	}
}

// TestStdinClosesWhileOpening: the server ends cleanly when its input ends
// while a session/new or session/load is still opening, and what was
// queued for the session is answered.
func TestStdinClosesWhileOpening(t *testing.T) {
	for _, method := range []string{"session/new", "session/load"} {
		t.Run(method, func(t *testing.T) {
			g := newGate()
			c := startServerHook(t, Config{}, g.hook)
			pkg := newPackage(t)
			params := newSessionParams(pkg)
			params["sessionId"] = pkg
			ids := c.lines(req(method, params), req("session/prompt", promptParams(pkg, "hi")),
				req("_spbridge/rate", map[string]any{"sessionId": pkg, "itemId": "X", "rating": "bad"}),
				note("session/cancel", map[string]any{"sessionId": pkg}),
				req("initialize", map[string]any{"protocolVersion": 1}))
			<-g.entered
			c.response(ids[3]) // every line before it was read and routed
			done := make(chan error, 1)
			go func() { done <- c.wait() }()
			close(g.open)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if m, _ := c.response(ids[0]); m["error"] != nil {
				t.Errorf("%s: %v", method, m)
			}
			if m, _ := c.response(ids[1]); stopReason(t, m) != "cancelled" {
				t.Errorf("the prompt: %v", m)
			}
			if m, _ := c.response(ids[2]); m["error"] != nil {
				t.Errorf("rate: %v", m)
			}
			l, err := pkglock.Acquire(pkg)
			if err != nil {
				t.Fatalf("the package is still locked: %v", err)
			}
			l.Unlock()
			p, _ := archive.Open(pkg, archive.KindDocument, true)
			if p.Conv.Feedback["X"].Rating != "bad" {
				t.Errorf("the rating was not saved: %v", p.Conv.Feedback)
			}
		})
	}
}

// TestPanicInATurn: a backend that panics ends its own session with a saved
// failure; another session's turn goes on and the server keeps serving.
func TestPanicInATurn(t *testing.T) {
	var logs lockedBuffer
	c := startServerWith(t, Config{Log: log.New(&logs, "", 0)})
	a, b := newPackage(t), newPackage(t)
	c.request("session/new", newSessionParams(a))
	c.request("session/new", newSessionParams(b))
	slow := c.call("session/prompt", promptParams(b, "slow"))
	<-c.backend(1).began
	m, _ := c.response(c.call("session/prompt", promptParams(a, "panic now")))
	if errCode(m) != jsonrpc.CodeInternalError {
		t.Errorf("the panicking turn: %v", m)
	}
	if !strings.Contains(logs.String(), "the fake backend panics") || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("no stack logged:\n%s", logs.String())
	}
	// The session ended: saved, unlocked, its CLI closed.
	p, _ := archive.Open(a, archive.KindDocument, true)
	var types []string
	for _, it := range p.Conv.Items {
		types = append(types, it.Type())
	}
	if strings.Join(types, " ") != "user assistant failure" {
		t.Errorf("saved items %v", types)
	}
	if l, err := pkglock.Acquire(a); err != nil {
		t.Errorf("the ended session's package is locked: %v", err)
	} else {
		l.Unlock()
	}
	if !c.backend(0).closed {
		t.Error("the ended session's CLI was not closed")
	}
	if m, _ := c.response(c.call("session/prompt", promptParams(a, "hi"))); errCode(m) != CodeNotFound {
		t.Errorf("a prompt to the ended session: %v", m)
	}
	// The other session was not touched.
	c.backend(1).finish <- struct{}{}
	if m, _ := c.response(slow); stopReason(t, m) != "end_turn" {
		t.Errorf("the other session's turn: %v", m)
	}
	// The ended session opens again.
	c.request("session/load", map[string]any{"sessionId": a, "cwd": filepath.Dir(a), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}})
	if res, _ := c.request("session/prompt", promptParams(a, "hi")); res["stopReason"] != "end_turn" {
		t.Errorf("after reopening: %v", res)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPanicsElsewhere: a panic while opening, in a request's handler, in an
// interrupt or in closing the CLI ends only that session (or that call) and
// the server goes on; shutdown still releases every lock.
func TestPanicsElsewhere(t *testing.T) {
	var logs lockedBuffer
	var n int
	var mu sync.Mutex
	c := startServerHook(t, Config{Log: log.New(&logs, "", 0)}, func(b *fakeBackend) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		switch i {
		case 1:
			panic("the fake NewBackend panics")
		case 3:
			b.panicInterrupt = true
		case 4:
			b.panicClose = true
		}
	})
	opening, handler, interrupt, closing := newPackage(t), newPackage(t), newPackage(t), newPackage(t)
	if m, _ := c.response(c.call("session/new", newSessionParams(opening))); errCode(m) != jsonrpc.CodeInternalError {
		t.Errorf("a panic while opening: %v", m)
	}
	if l, err := pkglock.Acquire(opening); err != nil {
		t.Errorf("the package that failed to open is locked: %v", err)
	} else {
		l.Unlock()
	}

	c.request("session/new", newSessionParams(handler))
	c.request("session/prompt", promptParams(handler, "hi"))
	ids := c.lines(req("session/set_config_option", map[string]any{"sessionId": handler, "configId": "model", "value": "panic"}),
		req("_spbridge/save", map[string]any{"sessionId": handler}))
	if m, _ := c.response(ids[0]); errCode(m) != jsonrpc.CodeInternalError {
		t.Errorf("a panic in a handler: %v", m)
	}
	if m, _ := c.response(ids[1]); errCode(m) != CodeNotFound {
		t.Errorf("queued behind the panic: %v", m)
	}
	p, _ := archive.Open(handler, archive.KindDocument, true)
	if n := len(p.Conv.Items); n == 0 || p.Conv.Items[n-1].Type() != archive.TypeFailure {
		t.Errorf("the ended session was not saved with a failure: %d items", n)
	}

	// A turn that ends only when told to (finish), once its interrupt was
	// called: a turn that ended first would be interrupted no more.
	c.request("session/new", newSessionParams(interrupt))
	slow := c.call("session/prompt", promptParams(interrupt, "stubborn"))
	<-c.backend(1).began
	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": interrupt}})
	<-c.backend(1).interrupted
	c.backend(1).finish <- struct{}{}
	if m, _ := c.response(slow); stopReason(t, m) != "cancelled" {
		t.Errorf("a cancel whose interrupt panics: %v", m)
	}

	c.request("session/new", newSessionParams(closing))
	c.request("session/prompt", promptParams(closing, "hi"))
	if res, _ := c.request("initialize", map[string]any{"protocolVersion": 1}); res["protocolVersion"] != float64(1) {
		t.Error("the server stopped serving")
	}
	err := c.wait()
	if err == nil || !strings.Contains(err.Error(), "panic") {
		t.Errorf("shutdown: %v, want the close's panic reported", err)
	}
	for _, pkg := range []string{handler, interrupt, closing} {
		l, err := pkglock.Acquire(pkg)
		if err != nil {
			t.Errorf("%s is still locked: %v", pkg, err)
			continue
		}
		l.Unlock()
	}
	if p, _ := archive.Open(closing, archive.KindDocument, true); len(p.Conv.Items) == 0 {
		t.Error("the session whose close panicked was not saved")
	}
	for _, want := range []string{"NewBackend panics", "SetModel panics", "interrupt panics", "close panics"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not have %q", want)
		}
	}
}

// TestBatchAndStrayResponses: a batch gets one -32600; a response that
// matches no request of ours is never answered.
func TestBatchAndStrayResponses(t *testing.T) {
	c := startServer(t)
	c.raw(`[{"jsonrpc":"2.0","id":1001,"method":"initialize","params":{"protocolVersion":1}},{"jsonrpc":"2.0","id":1002,"method":"initialize","params":{"protocolVersion":1}}]`)
	c.raw(`[]`)
	for range 2 {
		m, _ := c.until(func(m map[string]any) bool { return m["error"] != nil })
		if errCode(m) != jsonrpc.CodeInvalidRequest || m["id"] != nil {
			t.Errorf("batch: %v", m)
		}
	}
	c.raw(`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`)
	c.raw(`{"jsonrpc":"2.0","id":12345,"result":{}}`)
	c.raw(`{"jsonrpc":"2.0","id":"x","result":null}`)
	c.raw(`{"id":7,"error":null}`)
	id := c.call("initialize", map[string]any{"protocolVersion": 1})
	m, seen := c.response(id)
	if m["error"] != nil || len(seen) != 0 {
		t.Errorf("stray responses were answered: %v, then %v", seen, m)
	}
	if i := c.index(1001); i >= 0 {
		t.Errorf("a request inside a batch was answered")
	}
}

// TestSaveDuringATurn: a save while a turn runs writes the conversation as
// it stands, and the turn's end saves again (once its prompt is answered).
func TestSaveDuringATurn(t *testing.T) {
	endSaved := make(chan string, 1)
	c := startServerWith(t, Config{sessionOptions: func(id string, o *session.Options) {
		o.EndSaving = func(saved bool) {
			if saved { // the save at the turn's end ended
				endSaved <- id
			}
		}
	}})
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	slow := c.call("session/prompt", promptParams(pkg, "slow"))
	c.until(func(m map[string]any) bool { return m["method"] == "session/update" })
	c.request("_spbridge/queue", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("later")}})
	res, _ := c.request("_spbridge/save", map[string]any{"sessionId": pkg})
	if w, _ := res["written"].([]any); len(w) == 0 {
		t.Fatalf("the save during the turn wrote nothing: %v", res)
	}
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	if len(p.Conv.Items) != 2 || p.Conv.Items[0].String("text") != "slow" || !strings.HasPrefix(p.Conv.Items[1].String("text"), "tick") ||
		len(p.Conv.Queued) != 1 || p.Conv.Queued[0] != "later" {
		t.Errorf("saved during the turn: %d items, queued %v", len(p.Conv.Items), p.Conv.Queued)
	}
	// Saves while it streams, each a whole conversation.
	for range 20 {
		c.request("_spbridge/save", map[string]any{"sessionId": pkg})
	}
	c.backend(0).finish <- struct{}{}
	if m, _ := c.response(slow); stopReason(t, m) != "end_turn" {
		t.Fatalf("the turn: %v", m)
	}
	<-endSaved
	p, _ = archive.Open(pkg, archive.KindDocument, true)
	// The turn's history (the user's message: the fake's slow turn reports
	// none of its own) is only there when the turn's end saved.
	if len(p.Conv.History) != 1 || p.Conv.Provider != "claude-code" {
		t.Errorf("the turn's end did not save: %d history messages, queued %v, provider %q", len(p.Conv.History), p.Conv.Queued, p.Conv.Provider)
	}
}

// TestApprovalCards: how each permission request was answered in the editor
// is kept by its toolApproval item's id, marks the conversation edited, is
// saved, and a session/load shows it.
func TestApprovalCards(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	c.mu.Lock()
	c.answers = []string{"allow_once", "reject_once"}
	c.mu.Unlock()
	_, seen := c.request("session/prompt", promptParams(pkg, "ask"))
	var approvals []string
	var cards []string
	edited := 0
	for _, m := range seen {
		p, _ := m["params"].(map[string]any)
		switch m["method"] {
		case "_spbridge/item":
			it := p["item"].(map[string]any)
			if it["type"] == "toolApproval" && p["op"] == "add" {
				approvals = append(approvals, it["id"].(string))
			}
			if card, ok := p["card"].(map[string]any); ok {
				cards = append(cards, card["state"].(string))
			}
		case "_spbridge/edited":
			edited++
		}
	}
	if len(approvals) != 2 || strings.Join(cards, " ") != "allowed rejected" || edited == 0 {
		t.Fatalf("approvals %v, cards %v, edited %d", approvals, cards, edited)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	p, _ := archive.Open(pkg, archive.KindDocument, true)
	want := map[string]string{approvals[0]: CardAllowed, approvals[1]: CardRejected}
	for id, state := range want {
		card, _ := p.Conv.ApprovalCards[id].(map[string]any)
		if card["state"] != state {
			t.Errorf("approvalCards[%s] = %v, want state %q", id, p.Conv.ApprovalCards[id], state)
		}
	}

	c2 := startServer(t)
	_, seen = c2.request("session/load", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}})
	got := map[string]string{}
	for _, m := range seen {
		p, _ := m["params"].(map[string]any)
		if m["method"] == "_spbridge/item" && p["card"] != nil {
			got[p["item"].(map[string]any)["id"].(string)] = p["card"].(map[string]any)["state"].(string)
		}
	}
	if len(got) != 2 || got[approvals[0]] != CardAllowed || got[approvals[1]] != CardRejected {
		t.Errorf("replayed cards %v, want %v", got, want)
	}
}

// TestTurnNotStarted: a turn that failed before the CLI took the message
// answers the prompt with an error naming the cause, and leaves the
// document as it was: no edited, no save, an unreadable agent/ kept.
func TestTurnNotStarted(t *testing.T) {
	pkg := newPackage(t)
	agent := filepath.Join(pkg, "agent")
	os.Mkdir(agent, 0o700)
	newer := []byte(`{"formatVersion":2,"items":[]}`)
	os.WriteFile(filepath.Join(agent, "conversation.json"), newer, 0o600)
	c := startServer(t)
	c.request("session/new", newSessionParams(pkg))
	m, seen := c.response(c.call("session/prompt", promptParams(pkg, "notstarted")))
	e, _ := m["error"].(map[string]any)
	if errCode(m) != CodeNotStarted || !strings.Contains(e["message"].(string), "Claude Code is not installed") {
		t.Errorf("prompt: %v", m)
	}
	if n := count(seen, "_spbridge/edited"); n != 0 {
		t.Errorf("%d _spbridge/edited for a turn that did not start", n)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(agent, "conversation.json")); err != nil || !bytes.Equal(data, newer) {
		t.Errorf("agent/conversation.json changed: %q, %v", data, err)
	}
	if entries, _ := os.ReadDir(agent); len(entries) != 1 {
		t.Errorf("agent/ holds %d entries", len(entries))
	}
}

// TestShutdownSavesARunningTurn: when the input ends, a turn's conversation
// as it stands is saved before spbridge waits for the turn to stop.
func TestShutdownSavesARunningTurn(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	c.call("session/prompt", promptParams(pkg, "stubborn"))
	c.until(func(m map[string]any) bool { return m["method"] == "session/update" })
	released := false
	t.Cleanup(func() { // runs before the server's: a failed test ends too
		if !released {
			c.backend(0).finish <- struct{}{}
		}
	})
	c.in.Close()
	// The turn does not stop; its conversation reaches the disk anyway.
	waitFor(t, func() bool {
		p, err := archive.Open(pkg, archive.KindDocument, true)
		return err == nil && len(p.Conv.Items) == 2 && p.Conv.Items[1].String("text") == "working"
	})
	released = true
	c.backend(0).finish <- struct{}{}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond, an event outside the protocol (a file written), up
// to a limit that only a hang reaches.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCancelRequest: $/cancel_request on a running prompt interrupts its
// turn, which answers cancelled; on a prompt queued behind it, that prompt
// alone answers cancelled without running, and the running one ends as it
// would. An id that names no prompt changes nothing.
func TestCancelRequest(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)

	slow := c.call("session/prompt", promptParams(sid, "slow"))
	<-c.backend(0).began
	c.write(map[string]any{"jsonrpc": "2.0", "method": "$/cancel_request", "params": map[string]any{"requestId": 999999}})
	c.write(map[string]any{"jsonrpc": "2.0", "method": "$/cancel_request", "params": map[string]any{"requestId": slow}})
	if m, _ := c.response(slow); stopReason(t, m) != "cancelled" {
		t.Errorf("the running prompt: %v", m)
	}

	first := c.call("session/prompt", promptParams(sid, "quiet"))
	<-c.backend(0).began
	queued := c.call("session/prompt", promptParams(sid, "hi"))
	c.until(func(m map[string]any) bool { return m["method"] == "_spbridge/edited" })
	c.write(map[string]any{"jsonrpc": "2.0", "method": "$/cancel_request", "params": map[string]any{"requestId": queued}})
	if m, _ := c.response(queued); stopReason(t, m) != "cancelled" {
		t.Errorf("the queued prompt: %v", m)
	}
	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	if m, _ := c.response(first); stopReason(t, m) != "cancelled" {
		t.Errorf("the first prompt: %v", m)
	}
	if got := c.backend(0).texts(); slices.Contains(got, "hi") {
		t.Errorf("the cancelled queued prompt ran: %q", got)
	}
	c.request("_spbridge/save", map[string]any{"sessionId": sid})
	if p, err := archive.Open(pkg, archive.KindDocument, true); err != nil || fmt.Sprint(p.Conv.Unsent) != "[hi]" || len(p.Conv.Queued) != 0 {
		t.Errorf("saved: unsent %q, queued %q, %v; want the cancelled prompt handed back", p.Conv.Unsent, p.Conv.Queued, err)
	}
	if res, _ := c.request("session/prompt", promptParams(sid, "hi")); res["stopReason"] != "end_turn" {
		t.Errorf("after the cancels: %v", res)
	}
}

// TestCancelledPermissionRequest: a permission request left unanswered
// when its turn is cancelled is withdrawn with $/cancel_request naming it.
func TestCancelledPermissionRequest(t *testing.T) {
	c := startServer(t)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	c.mu.Lock()
	c.answers = []string{"unanswered"}
	c.mu.Unlock()
	id := c.call("session/prompt", promptParams(sid, "ask"))
	asked, _ := c.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" })
	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	withdrawn, _ := c.until(func(m map[string]any) bool { return m["method"] == "$/cancel_request" })
	if got := withdrawn["params"].(map[string]any)["requestId"]; got != asked["id"] {
		t.Errorf("$/cancel_request for %v, want the permission request %v", got, asked["id"])
	}
	// The fake turn goes on to its end once denied: the prompt is answered.
	if m, _ := c.response(id); m["result"] == nil {
		t.Errorf("the prompt: %v", m)
	}
}
