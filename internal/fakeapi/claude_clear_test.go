//go:build unix

package fakeapi

import (
	"strings"
	"testing"
)

// TestClaudeClear records claude's /clear after a turn, with
// --replay-user-messages as internal/claude runs it: what it prints for the
// reset (a conversation_reset line, then a system/init with a new session
// id and a result of the local command), and that the request after it
// carries nothing of what was said before:
//
//	go test ./internal/fakeapi -run TestClaudeClear -record
func TestClaudeClear(t *testing.T) {
	t.Parallel()
	srv := start(t, text("PINEAPPLE noted."), text("Which word?"))
	s := startClaude(t, srv, "", nil, "--replay-user-messages")
	s.prompt("remember the word PINEAPPLE")
	first := s.result()
	s.prompt("/clear")
	cleared := s.result()
	s.prompt("what was the word?")
	second := s.result()
	if err := s.finish(); err != nil {
		t.Errorf("claude: %v", err)
	}
	s.save("clear")
	resets := 0
	for _, l := range s.lines() {
		if l["type"] == "conversation_reset" {
			resets++
			if l["trigger"] != "clear" || l["session_id"] != first["session_id"] {
				t.Errorf("conversation_reset = %v", l)
			}
		}
	}
	if resets != 1 {
		t.Errorf("%d conversation_reset lines, want 1", resets)
	}
	if cleared["local_command"] != "clear" || cleared["session_id"] == first["session_id"] || second["session_id"] != cleared["session_id"] {
		t.Errorf("sessions: first %v, /clear's result %v, then %v", first["session_id"], cleared, second["session_id"])
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (/clear asks the model nothing)", len(reqs))
	}
	if last := string(reqs[1].Body); strings.Contains(last, "PINEAPPLE") || !strings.Contains(last, "what was the word?") {
		t.Errorf("the request after /clear: %s", last)
	}
}
