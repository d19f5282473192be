package acp

import (
	"testing"
	"time"
)

// TestCancelDuringTurnEndSave: the save at a turn's end (one that was also
// saved while it ran) holds up neither session/cancel nor the reading of
// any session's messages: while it is stopped on its way to the disk, a
// session/cancel for that session is read and a second session's request
// is answered; the first turn's prompt answers once the save goes on.
func TestCancelDuringTurnEndSave(t *testing.T) {
	entered, release := make(chan string, 1), make(chan struct{})
	c := startServerWith(t, Config{turnEndSave: func(id string) {
		entered <- id
		<-release
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
