package fakeapi

import (
	"bufio"
	"strings"
	"testing"
)

// TestHoldReplies: a turn that carries HoldText and offers tools takes a
// held reply (its first delta, then nothing until the client goes away);
// a request without tools, such as a title request quoting the prompt,
// and any other turn are answered "ok" to their end.
func TestHoldReplies(t *testing.T) {
	srv := start(t, HoldReplies(2)...)
	side := turn(true)
	side["messages"] = []any{map[string]any{"role": "user", "content": "a title for: " + HoldText}}
	if got := textOf(t, srv, side); got != "ok" {
		t.Errorf("a request without tools: %q", got)
	}
	if got := textOf(t, srv, turn(true)); got != "ok" {
		t.Errorf("another turn: %q", got)
	}
	held := turn(true)
	held["messages"] = []any{map[string]any{"role": "user", "content": HoldText}}
	held["tools"] = []any{map[string]any{"name": "Bash"}}
	resp := post(t, srv, "/v1/messages", held)
	br := bufio.NewReader(resp.Body)
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "content_block_delta" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			seen = append(seen, strings.TrimSpace(name))
		}
	}
	// The client goes away here (resp.Body closes at the test's end) and
	// Close ends the held stream: the test ending at all shows it.
}

// TestHoldResponses: the same for the Responses API.
func TestHoldResponses(t *testing.T) {
	replies := HoldResponses(1)
	if len(replies) != 1 || !replies[0].Hold || replies[0].Match == nil {
		t.Fatalf("%+v", replies)
	}
	body := []byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"` + HoldText + `"}]}],"tools":[]}`)
	if !replies[0].Match(body) {
		t.Error("a turn with the text and tools does not match")
	}
	if replies[0].Match([]byte(`{"model":"m","input":"` + HoldText + `"}`)) {
		t.Error("a request without tools matches")
	}
}
