package acp

import (
	"testing"

	"spbridge/internal/acp/wire"
)

// chunkText is the text of a session/update's agent_message_chunk, or "".
func chunkText(m map[string]any) string {
	if m["method"] != "session/update" {
		return ""
	}
	u, _ := m["params"].(map[string]any)["update"].(map[string]any)
	if u["sessionUpdate"] != wire.AgentMessageChunk {
		return ""
	}
	c, _ := u["content"].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

// TestBatchedUpdatesGoOut checks that a turn whose backend reports when it
// handed over every line so far (Idle) has its updates written by then
// while it still runs, and those after the last Idle with the prompt's
// answer, or, for a queued message that nobody answers, when it ends.
func TestBatchedUpdatesGoOut(t *testing.T) {
	pkg := newPackage(t)
	c := startServer(t)
	params := newSessionParams(pkg)
	// Keep off: no _spbridge/edited, which would flush the buffer too.
	params["_meta"].(map[string]any)["spbridge"].(map[string]any)["keepConversation"] = false
	res, _ := c.request("session/new", params)
	sid := res["sessionId"].(string)

	pid := c.call("session/prompt", promptParams(sid, "batch"))
	// Both chunks arrive while the turn waits, before anything else is
	// written.
	c.until(func(m map[string]any) bool { return chunkText(m) == "two " })
	c.backend(0).finish <- struct{}{}
	r, seen := c.response(pid)
	if r["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("answer %v", r)
	}
	var last string
	for _, m := range seen {
		if s := chunkText(m); s != "" {
			last = s
		}
	}
	if last != "three" {
		t.Errorf("the chunk after the last Idle came with the answer as %q; seen %v", last, seen)
	}

	// A queued message's turn has no answer: what it buffered goes out
	// when it ends.
	pid = c.call("session/prompt", promptParams(sid, "slow"))
	c.until(func(m map[string]any) bool { return chunkText(m) == "tick " })
	c.request("_spbridge/queue", map[string]any{"sessionId": sid, "prompt": []any{textBlock("batch queued")}})
	c.backend(0).finish <- struct{}{} // the slow turn completes; the queued one begins
	c.response(pid)
	c.until(func(m map[string]any) bool { return chunkText(m) == "two " })
	c.backend(0).finish <- struct{}{}
	c.until(func(m map[string]any) bool { return chunkText(m) == "three" })
}
