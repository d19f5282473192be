package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/jsonrpc"
)

// userItems are the ids of the user items among the _spbridge/item adds
// in msgs.
func userItems(msgs []map[string]any) []string {
	var ids []string
	for _, m := range msgs {
		if m["method"] != "_spbridge/item" {
			continue
		}
		p, _ := m["params"].(map[string]any)
		it, _ := p["item"].(map[string]any)
		if p["op"] == "add" && it["type"] == "user" {
			ids = append(ids, fmt.Sprint(it["id"]))
		}
	}
	return ids
}

// TestRewind: _session/rewind before a user message named by its
// messageId (or its fingerprint), a dry run first; bad messageIds and
// params answer -32602 and change nothing; undo puts the turns back and
// replays them; a rewind while a turn runs answers -32001 with the
// reason; the next turn after a rewind starts a new CLI session told the
// kept conversation only.
func TestRewind(t *testing.T) {
	c := startServer(t)
	init, _ := c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": itemsCapability})
	if meta, _ := init["_meta"].(map[string]any); fmt.Sprint(meta["rewind"]) == "<nil>" {
		t.Errorf("initialize says nothing of _session/rewind: %v", init["_meta"])
	}
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	var users []string
	for _, text := range []string{"MARK-one", "MARK-two", "MARK-three"} {
		_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock(text)}})
		users = append(users, userItems(seen)...)
	}
	if len(users) != 3 {
		t.Fatalf("user items %v", users)
	}
	rewind := func(params map[string]any) map[string]any {
		params["sessionId"] = sid
		m, _ := c.response(c.call("_session/rewind", params))
		return m
	}

	m := rewind(map[string]any{"messageId": users[1], "dryRun": true})
	r, _ := m["result"].(map[string]any)
	conv, _ := r["conversation"].(map[string]any)
	if r["dryRun"] != true || conv["rewound"] != false || conv["itemsRemoved"].([]any)[0] != users[1] || !slices.Contains(conv["itemsRemoved"].([]any), any(users[2])) {
		t.Fatalf("dry run: %v", m)
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"unknown", map[string]any{"messageId": "NOPE"}, "has no message of that id"},
		{"no message", map[string]any{}, "messageId"},
		{"mode", map[string]any{"messageId": users[1], "mode": "everything"}, "mode must be"},
		{"two messages", map[string]any{"messageId": users[1], "beforeMessage": map[string]any{"messageId": users[2]}}, "different messages"},
		{"undo with a message", map[string]any{"messageId": users[1], "undo": true}, "takes no message"},
	} {
		m := rewind(tc.params)
		if errCode(m) != jsonrpc.CodeInvalidParams || !strings.Contains(fmt.Sprint(m["error"]), tc.want) {
			t.Errorf("%s: %v, want -32602 saying %q", tc.name, m, tc.want)
		}
	}
	// No checkpoints (the files half needs them): the files alone are
	// refused; both rewind the conversation and say why not the files.
	if m := rewind(map[string]any{"messageId": users[1], "mode": "files"}); errCode(m) != jsonrpc.CodeInvalidRequest || !strings.Contains(fmt.Sprint(m["error"]), "no checkpoints") {
		t.Errorf("files without checkpoints: %v", m)
	}
	if f, _ := r["files"].(map[string]any); f["rewound"] != false || !strings.Contains(fmt.Sprint(f["error"]), "no checkpoints") {
		t.Errorf("the dry run's files: %v", r["files"])
	}
	if m := rewind(map[string]any{"undo": true}); errCode(m) != jsonrpc.CodeInvalidRequest || !strings.Contains(fmt.Sprint(m["error"]), "no rewind to undo") {
		t.Errorf("undo with nothing to undo: %v", m)
	}

	// By fingerprint, in the shape codex-acp takes, with an id the
	// client made up.
	sum := sha256.Sum256([]byte("MARK-two"))
	m = rewind(map[string]any{"beforeMessage": map[string]any{"messageId": "client-made", "messageFingerprint": "sha256:" + hex.EncodeToString(sum[:])}})
	r, _ = m["result"].(map[string]any)
	conv, _ = r["conversation"].(map[string]any)
	if conv["rewound"] != true || conv["before"] != users[1] || conv["context"] != "restart" {
		t.Fatalf("rewind: %v", m)
	}
	// Undo: the turns come back, replayed to the client.
	m, seen := c.response(c.call("_session/rewind", map[string]any{"sessionId": sid, "undo": true}))
	if r, _ := m["result"].(map[string]any); r["conversation"].(map[string]any)["undone"] != true {
		t.Fatalf("undo: %v", m)
	}
	if got := userItems(seen); !slices.Equal(got, users[1:]) {
		t.Errorf("the undo replayed user items %v, want %v", got, users[1:])
	}

	m = rewind(map[string]any{"messageId": users[1]})
	if r, _ := m["result"].(map[string]any); r["conversation"].(map[string]any)["rewound"] != true {
		t.Fatalf("rewind: %v", m)
	}
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("MARK-four")}})
	be := c.backend(len(c.backends) - 1)
	sent := be.texts()
	last := sent[len(sent)-1]
	if !strings.Contains(last, "# Conversation so far") || !strings.Contains(last, "MARK-one") || strings.Contains(last, "MARK-two") || !strings.HasSuffix(last, "MARK-four") {
		t.Errorf("the turn after the rewind sent %q", last)
	}

	// While a turn runs: refused, saying why.
	pid := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("slow")}})
	c.until(func(m map[string]any) bool { return m["method"] == "session/update" })
	m = rewind(map[string]any{"messageId": users[0]})
	if errCode(m) != CodeBusy || !strings.Contains(fmt.Sprint(m["error"]), "prompt is running") {
		t.Errorf("a rewind during a turn: %v", m)
	}
	be.finish <- struct{}{}
	c.response(pid)
}
