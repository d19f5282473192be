package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/sessionindex"
)

// TestForkAtMessage: session/fork is advertised under
// sessionCapabilities; it ends its copy with a message named by
// the messageId its chunks carried, keeping the message, as a top-level
// messageId or in the shape claude-agent-acp and codex-acp take
// (_meta.jetbrains.air.fork: version 1, messageId, an older build's
// ":segment:N" suffix, a fingerprint and occurrence when no message has
// the id). An unknown, foreign (another session's) or future (after the
// fork's end) messageId, an item that is no message, and a request that
// says it two ways or in a shape not known, each get -32602 naming why,
// and nothing changes: no package, no session, no entry in the list.
func TestForkAtMessage(t *testing.T) {
	state := t.TempDir()
	sessions := filepath.Join(state, "sessions")
	c := startServerWith(t, Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": t.TempDir(), "codex": t.TempDir()}},
		SessionsDir: sessions, Index: sessionindex.New(state), DefaultBackend: "claude"})
	// Advertised as ACP's sessionCapabilities.fork, and as before under
	// spbridge's _meta for older clients.
	res, _ := c.request("initialize", map[string]any{"protocolVersion": 1})
	caps := res["agentCapabilities"].(map[string]any)
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	sp, _ := caps["_meta"].(map[string]any)["spbridge"].(map[string]any)
	if _, ok := sc["fork"].(map[string]any); !ok || sp["sessionFork"] == nil {
		t.Errorf("initialize's capabilities: %v", caps)
	}
	cwd := t.TempDir()
	open := func() string {
		res, _ := c.request("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
		return res["sessionId"].(string)
	}
	orig, other := open(), open()
	for _, s := range []string{"one", "two"} {
		c.request("session/prompt", promptParams(orig, s))
	}
	c.request("session/prompt", promptParams(other, "elsewhere"))
	items := func(pkg string) []archive.Item {
		t.Helper()
		c.request("_spbridge/save", map[string]any{"sessionId": pkg})
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			t.Fatal(err)
		}
		return p.Conv.Items
	}
	all := items(orig)
	var types []string
	for _, it := range all {
		types = append(types, it.Type())
	}
	// Each turn: the user's message, the reply, a tool.
	if want := []string{"user", "assistant", "tool", "user", "assistant", "tool"}; !slices.Equal(types, want) {
		t.Fatalf("the conversation: %q, want %q", types, want)
	}
	fork := func(params map[string]any) (string, []archive.Item) {
		t.Helper()
		params["sessionId"], params["cwd"], params["mcpServers"] = orig, cwd, []any{}
		res, _ := c.request("session/fork", params)
		id, _ := res["sessionId"].(string)
		if filepath.Dir(id) != sessions {
			t.Fatalf("fork answered %v", res)
		}
		return id, items(id)
	}
	ids := func(list []archive.Item) []string {
		var out []string
		for _, it := range list {
			out = append(out, it.ID())
		}
		return out
	}
	air := func(fork map[string]any) map[string]any {
		return map[string]any{"_meta": map[string]any{"jetbrains": map[string]any{"air": map[string]any{"fork": fork}}}}
	}

	// A top-level messageId: the first reply, kept.
	first, got := fork(map[string]any{"messageId": all[1].ID()})
	if !slices.Equal(ids(got), ids(all[:2])) {
		t.Errorf("the fork at the first reply holds %q, want %q", ids(got), ids(all[:2]))
	}
	// The adapters' shape, with an older build's segment suffix: the
	// second user message, kept.
	_, got = fork(air(map[string]any{"version": 1, "messageId": all[3].ID() + ":segment:2"}))
	if !slices.Equal(ids(got), ids(all[:4])) {
		t.Errorf("the fork at the second user message holds %q, want %q", ids(got), ids(all[:4]))
	}
	// An id no message has, and the fingerprint of the second reply.
	sum := sha256.Sum256([]byte(all[4].String("text")))
	_, got = fork(air(map[string]any{"version": 1, "messageId": "msg_gone", "messageFingerprint": "sha256:" + hex.EncodeToString(sum[:]), "messageOccurrence": 2}))
	if !slices.Equal(ids(got), ids(all[:5])) {
		t.Errorf("the fork at the fingerprinted reply holds %q, want %q", ids(got), ids(all[:5]))
	}

	entries := func() []string {
		l, _ := os.ReadDir(sessions)
		var names []string
		for _, e := range l {
			names = append(names, e.Name())
		}
		return names
	}
	listed := func() int {
		res, _ := c.request("session/list", map[string]any{"cwd": cwd})
		return len(res["sessions"].([]any))
	}
	before, beforeListed, otherItems := entries(), listed(), items(other)
	for _, bad := range []struct {
		name   string
		from   string
		params map[string]any
		says   string
	}{
		{"unknown", orig, map[string]any{"messageId": "msg_unknown"}, `messageId "msg_unknown": session`},
		{"foreign", orig, map[string]any{"messageId": otherItems[1].ID()}, "has no message of that id"},
		{"future", first, map[string]any{"messageId": all[4].ID()}, "has no message of that id"},
		{"no message", orig, map[string]any{"messageId": all[2].ID()}, "names no message"},
		{"unknown, by the adapters' shape", orig, air(map[string]any{"version": 1, "messageId": "msg_unknown"}), `_meta.jetbrains.air.fork.messageId "msg_unknown"`},
		{"a fingerprint of no message", orig, air(map[string]any{"version": 1, "messageId": "x", "messageFingerprint": "sha256:" + strings.Repeat("0", 64)}), "has no message of that id"},
		{"another version", orig, air(map[string]any{"version": 2, "messageId": all[1].ID()}), "version must be 1"},
		{"no messageId", orig, air(map[string]any{"version": 1}), "messageId is required"},
		{"a bad fingerprint", orig, air(map[string]any{"version": 1, "messageId": "x", "messageFingerprint": "md5:1"}), "messageFingerprint"},
		{"occurrence 0", orig, air(map[string]any{"version": 1, "messageId": "x", "messageOccurrence": 0}), "messageOccurrence"},
		{"an empty messageId", orig, map[string]any{"messageId": " "}, "messageId must not be empty"},
		{"two messages", orig, func() map[string]any {
			p := air(map[string]any{"version": 1, "messageId": all[1].ID()})
			p["messageId"] = all[4].ID()
			return p
		}(), "name different messages"},
		{"an item and a message", orig, map[string]any{"messageId": all[1].ID(), "_meta": map[string]any{"spbridge": map[string]any{"atItem": all[1].ID()}}}, "give one"},
	} {
		params := bad.params
		params["sessionId"], params["cwd"], params["mcpServers"] = bad.from, cwd, []any{}
		m, _ := c.response(c.call("session/fork", params))
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if errCode(m) != jsonrpc.CodeInvalidParams || !strings.Contains(msg, bad.says) {
			t.Errorf("%s: fork answered %v, want -32602 saying %q", bad.name, m, bad.says)
		}
	}
	if after := entries(); !slices.Equal(after, before) {
		t.Errorf("the refused forks changed the sessions folder: %q, was %q", after, before)
	}
	if n := listed(); n != beforeListed {
		t.Errorf("the refused forks changed the list: %d sessions, was %d", n, beforeListed)
	}
	if now := items(orig); !slices.Equal(ids(now), ids(all)) {
		t.Errorf("the refused forks changed the source: %q", ids(now))
	}
}
