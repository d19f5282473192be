//go:build unix

package fakeapi

import (
	"testing"
)

// TestClaudeCompact records claude's /compact after a turn: what it
// prints while and after it compacts (the system status and
// compact_boundary lines, the summary's user line), for the compaction's
// mapping:
//
//	go test ./internal/fakeapi -run TestClaudeCompact -record
func TestClaudeCompact(t *testing.T) {
	t.Parallel()
	srv := start(t, text("Hello there."), text("<analysis>thinking</analysis>\n<summary>The user said hi; the assistant greeted them.</summary>"))
	s := startClaude(t, srv, "", nil)
	s.prompt("hi")
	s.result()
	s.prompt("/compact")
	res := s.result()
	if err := s.finish(); err != nil {
		t.Errorf("claude: %v", err)
	}
	s.save("compact")
	for _, l := range s.lines() {
		t.Logf("%v %v %v", l["type"], l["subtype"], l["status"])
	}
	t.Logf("result %v", res)
	t.Logf("requests %d", len(srv.Requests()))
}
