package acp

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/session"
)

// TestCancelDuringTurnEndSave: the save at a turn's end (one that was also
// saved while it ran) holds up neither session/cancel nor the reading of
// any session's messages: while it is stopped on its way to the disk, a
// session/cancel for that session is read and a second session's request
// is answered; the first turn's prompt answers once the save goes on.
func TestCancelDuringTurnEndSave(t *testing.T) {
	entered, release := make(chan string, 1), make(chan struct{})
	c := startServerWith(t, Config{sessionOptions: func(id string, o *session.Options) {
		o.EndSaving = func(saved bool) {
			if !saved { // the save at the turn's end begins
				entered <- id
				<-release
			}
		}
	}})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	resA, _ := c.request("session/new", newSessionParams(newPackage(t)))
	a := resA["sessionId"].(string)
	resB, _ := c.request("session/new", newSessionParams(newPackage(t)))
	b := resB["sessionId"].(string)

	prompt := c.call("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock("batch")}})
	<-c.backend(0).began
	c.request("_spbridge/save", map[string]any{"sessionId": a}) // saved while the turn runs
	c.backend(0).finish <- struct{}{}
	if id := <-entered; id != a {
		t.Fatalf("turn-end save of %s, want %s", id, a)
	}

	// The save is stopped on its way to the disk: cancel the session and
	// ask the other one something.
	asked := make(chan float64, 1)
	go func() {
		c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": a}})
		asked <- c.call("_spbridge/save", map[string]any{"sessionId": b})
	}()
	guard := time.NewTimer(30 * time.Second) // fails the test; nothing waits on it otherwise
	defer guard.Stop()
	select {
	case id := <-asked:
		if r, _ := c.response(id); r["error"] != nil {
			t.Errorf("the other session's save: %v", r)
		}
	case <-guard.C:
		t.Fatal("serve stopped reading messages while a turn's end save ran")
	}
	select {
	case <-c.doneCh:
		t.Fatal("serve ended")
	default:
	}
	close(release)
	released = true
	if r, _ := c.response(prompt); r["error"] != nil {
		t.Errorf("the prompt: %v", r)
	}
}

// TestSaveOutsideLocks: a save writes without holding any lock of its
// session. While one save of session A is stopped between its snapshot and
// its write, A's streaming turn goes on reaching the client, session B
// runs a turn of its own, and a session/cancel of A answers A's prompt
// cancelled; the save then completes and writes a conversation that reads
// back, and the session's close saves how the turn ended.
func TestSaveOutsideLocks(t *testing.T) {
	entered, release := make(chan string, 4), make(chan struct{})
	var armed atomic.Bool
	c := startServerWith(t, Config{sessionOptions: func(id string, o *session.Options) {
		o.Writing = func() { // a save's snapshot is taken: it is about to write
			if armed.Load() {
				entered <- id
				<-release
			}
		}
	}})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	pkgA := newPackage(t)
	resA, _ := c.request("session/new", newSessionParams(pkgA))
	a := resA["sessionId"].(string)
	resB, _ := c.request("session/new", newSessionParams(newPackage(t)))
	b := resB["sessionId"].(string)
	chunk := func(id, text string) func(map[string]any) bool {
		return func(m map[string]any) bool {
			p, _ := m["params"].(map[string]any)
			u, _ := p["update"].(map[string]any)
			ct, _ := u["content"].(map[string]any)
			s, _ := ct["text"].(string)
			return m["method"] == "session/update" && p["sessionId"] == id && u["sessionUpdate"] == "agent_message_chunk" && strings.Contains(s, text)
		}
	}

	promptA := c.call("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock("feed")}})
	<-c.backend(0).began
	c.backend(0).feed <- "first "
	c.until(chunk(a, "first"))

	armed.Store(true)
	save := c.call("_spbridge/save", map[string]any{"sessionId": a})
	if id := <-entered; id != a {
		t.Fatalf("save of %s, want %s", id, a)
	}
	// The save is stopped on its way to the disk.
	c.backend(0).feed <- "second "
	c.until(chunk(a, "second"))

	promptB := c.call("session/prompt", map[string]any{"sessionId": b, "prompt": []any{textBlock("feed")}})
	<-c.backend(1).began
	c.backend(1).feed <- "other "
	c.until(chunk(b, "other"))
	c.backend(1).finish <- struct{}{}
	if r, _ := c.response(promptB); r["error"] != nil {
		t.Fatalf("session B's prompt: %v", r)
	}

	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": a}})
	r, _ := c.response(promptA)
	if reason := r["result"].(map[string]any)["stopReason"]; reason != "cancelled" {
		t.Fatalf("session A's prompt: %v, want cancelled", r)
	}
	c.mu.Lock()
	for _, m := range c.all {
		if m["id"] == save && m["method"] == nil {
			t.Errorf("the save answered before it was let write: %v", m)
		}
	}
	c.mu.Unlock()

	armed.Store(false)
	close(release)
	released = true
	if r, _ := c.response(save); r["error"] != nil {
		t.Fatalf("the save: %v", r)
	}
	// Closing the session waits for its saves.
	c.request("session/close", map[string]any{"sessionId": a})
	p, err := archive.Open(pkgA, archive.KindDocument, true)
	if err != nil || p.Unreadable != "" {
		t.Fatalf("the saved conversation: %v %q", err, p.Unreadable)
	}
	var texts []string
	for _, it := range p.Conv.Items {
		texts = append(texts, it.Type()+":"+it.String("text"))
	}
	// The save's snapshot held "first "; what the turn ended with came later.
	if got := strings.Join(texts, "|"); got != "user:feed|assistant:first second " {
		t.Errorf("saved items %s", got)
	}
}

// TestEditedOptIn: _spbridge/edited goes only to a client that asked for
// spbridge's extensions in initialize; a plain ACP client gets ACP alone.
func TestEditedOptIn(t *testing.T) {
	for _, optIn := range []bool{true, false} {
		var c *client
		if optIn {
			c = startServer(t)
		} else {
			c = startPlain(t, Config{}, nil)
			c.request("initialize", map[string]any{"protocolVersion": 1})
		}
		pkg := newPackage(t)
		c.request("session/new", newSessionParams(pkg))
		_, seen := c.request("session/prompt", promptParams(pkg, "hello"))
		_, more := c.request("_spbridge/rate", map[string]any{"sessionId": pkg, "itemId": "X", "rating": "good"})
		seen = append(seen, more...)
		var methods []string
		for _, m := range seen {
			if s, _ := m["method"].(string); strings.HasPrefix(s, "_spbridge/") {
				methods = append(methods, s)
			}
		}
		if got := strings.Contains(strings.Join(methods, " "), "_spbridge/edited"); got != optIn {
			t.Errorf("opted in %v: spbridge's notifications %v", optIn, methods)
		}
	}
}
