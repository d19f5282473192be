package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// TestE2EClaudeClear: a /clear typed to the real claude resets its
// context. The turn after it (same process) and, after a reopen of the
// package, the new session's first turn carry nothing said before it; the
// panel keeps the items before it, with the reset's notice saved as the
// boundary.
func TestE2EClaudeClear(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Noted PINEAPPLE-4411."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hi, fresh start."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "After the reopen."}}})
	e.run(nil, "remember PINEAPPLE-4411 please", "/clear", "say hi")
	if e.code != 0 {
		e.fail("first run: exit %d", e.code)
	}
	items := e.conv().Items
	reset := archive.LastReset(items)
	if reset < 0 || items[reset].String("text") != itemmap.ClaudeResetText || items[reset].String(archive.ContextReset) != "clear" {
		t.Fatalf("no reset notice among the items: %q", e.items())
	}
	if !strings.Contains(strings.Join(e.items()[:reset], "\n"), "PINEAPPLE-4411") {
		t.Errorf("the items before the reset are gone: %q", e.items())
	}
	e.run(nil, "what now?")
	if e.code != 0 {
		e.fail("second run: exit %d", e.code)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (/clear asks the model nothing)", len(reqs))
	}
	for i, r := range reqs[1:] {
		if strings.Contains(string(r.Body), "PINEAPPLE") {
			t.Errorf("request %d, after the /clear, carries text from before it: %q", i+2, userTexts(r.Body))
		}
	}
	texts := userTexts(reqs[2].Body)
	if len(texts) != 1 || !strings.HasPrefix(texts[0], "# Conversation so far\n") || !strings.Contains(texts[0], "User: say hi") || !strings.HasSuffix(texts[0], "what now?") {
		t.Errorf("after the reopen the CLI was told %q", texts)
	}
	conv, _ := os.ReadFile(filepath.Join(e.pkg, "agent", "conversation.json"))
	if !strings.Contains(string(conv), `"contextReset" : "clear"`) {
		t.Errorf("the saved conversation has no reset notice")
	}
}
