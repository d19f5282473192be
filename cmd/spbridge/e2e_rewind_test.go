package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// rewindMarks are the user messages of the rewind tests' turns; the
// replies say ANSWER-n.
var rewindMarks = []string{"MARK-one", "MARK-two", "MARK-three"}

// checkCut checks the request of the turn after a rewind to before the
// second message: it holds the first turn and the new message, and
// nothing of the two removed turns.
func checkCut(t *testing.T, what, body string) {
	t.Helper()
	if body == "" {
		t.Fatalf("%s: no request holds the message after the rewind", what)
	}
	for _, want := range []string{"MARK-one", "MARK-four"} {
		if !strings.Contains(body, want) {
			t.Errorf("%s: the request after the rewind lacks %s", what, want)
		}
	}
	for _, gone := range []string{"MARK-two", "ANSWER-two", "MARK-three", "ANSWER-three"} {
		if strings.Contains(body, gone) {
			t.Errorf("%s: the request after the rewind holds %s", what, gone)
		}
	}
}

// serveRewind runs three turns through spbridge serve on backend, rewinds
// the conversation to before the second user message with
// _session/rewind, and runs a fourth: it returns the rewind's answer.
func serveRewind(t *testing.T, e *e2e, backend string) map[string]any {
	t.Helper()
	p := startServe(t, e)
	open := map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": backend}}}
	p.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}}},
		map[string]any{"id": 1, "method": "session/new", "params": open})
	if m := p.response(1); m["error"] != nil {
		t.Fatalf("session/new: %v", m)
	}
	prompt := func(id int, text string) {
		t.Helper()
		p.write(map[string]any{"id": id, "method": "session/prompt", "params": map[string]any{"sessionId": e.pkg, "prompt": []any{map[string]any{"type": "text", "text": text}}}})
		if r := p.stopReason(float64(id)); r != "end_turn" {
			t.Fatalf("%s: %s\nstderr:\n%s", text, r, p.stderr.String())
		}
	}
	for i, m := range rewindMarks {
		prompt(2+i, m)
	}
	var users []string
	for _, m := range p.seen {
		if m["method"] != "_spbridge/item" {
			continue
		}
		params, _ := m["params"].(map[string]any)
		it, _ := params["item"].(map[string]any)
		if params["op"] == "add" && it["type"] == "user" {
			users = append(users, fmt.Sprint(it["id"]))
		}
	}
	if len(users) != 3 {
		t.Fatalf("user items %v", users)
	}
	p.write(map[string]any{"id": 10, "method": "_session/rewind", "params": map[string]any{"sessionId": e.pkg, "messageId": users[1], "mode": "conversation"}})
	m := p.response(10)
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("_session/rewind: %v\nstderr:\n%s", m, p.stderr.String())
	}
	prompt(11, "MARK-four")
	return res
}

// TestE2ERewindNative: through spbridge serve with the real claude and
// the real codex (app-server), a rewind while the CLI holds the session
// rewinds the CLI itself (context "native"), and the next request to the
// model holds nothing of the removed turns.
func TestE2ERewindNative(t *testing.T) {
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		var replies []fakeapi.Reply
		for _, a := range []string{"ANSWER-one", "ANSWER-two", "ANSWER-three", "ANSWER-four"} {
			replies = append(replies, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: a}}})
		}
		e := newE2E(t, replies...)
		res := serveRewind(t, e, "claude")
		if c, _ := res["conversation"].(map[string]any); c["context"] != "native" || c["rewound"] != true {
			t.Errorf("rewind: %v", res)
		}
		var last string
		for _, r := range e.srv.Requests() {
			if r.Path == "/v1/messages" && strings.Contains(string(r.Body), "MARK-four") {
				last = messagesText(r.Body)
			}
		}
		checkCut(t, "claude", last)
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		var replies []fakeapi.ResponsesReply
		for _, a := range []string{"ANSWER-one", "ANSWER-two", "ANSWER-three", "ANSWER-four"} {
			replies = append(replies, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(a)}})
		}
		e, srv := newCodexE2E(t, replies...)
		res := serveRewind(t, e, "codex")
		if c, _ := res["conversation"].(map[string]any); c["context"] != "native" || c["rewound"] != true {
			t.Errorf("rewind: %v", res)
		}
		var last string
		for _, r := range srv.Requests() {
			if strings.Contains(string(r.Body), "MARK-four") {
				last = string(r.Body)
			}
		}
		checkCut(t, "codex", last)
	})
}

// messagesText is the messages of an Anthropic request, as JSON text.
func messagesText(body []byte) string {
	i := strings.Index(string(body), `"messages"`)
	if i < 0 {
		return ""
	}
	return string(body[i:])
}

// TestE2ERewindFallback: a conversation rewound with spbridge rewind
// (no CLI holds it then) goes on in a new CLI session told "# Conversation
// so far" from the kept items only: after a reopen, after the package
// moved to another folder, and on the other CLI.
func TestE2ERewindFallback(t *testing.T) {
	t.Parallel()
	var replies []fakeapi.Reply
	for _, a := range []string{"ANSWER-one", "ANSWER-two", "ANSWER-three", "ANSWER-four", "ANSWER-five"} {
		replies = append(replies, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: a}}})
	}
	e := newE2E(t, replies...)
	oai, err := fakeapi.NewOpenAI(fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("ANSWER-codex")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oai.Close)
	root := filepath.Dir(filepath.Dir(e.pkg))
	e.env = append(e.env, oai.CodexEnv(t, root)...)
	e.env = append(e.env, "SPBRIDGE_CODEX="+fakeapi.CodexPath(t), "CLAUDE_CONFIG_DIR="+filepath.Join(root, "home", ".claude"))
	for _, m := range rewindMarks {
		e.run(nil, m)
		if e.code != 0 {
			t.Fatalf("run %s: exit %d\n%s", m, e.code, e.stderr.String())
		}
	}
	rewind := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(spbridgeBin(t), append([]string{"rewind", e.pkg}, args...)...)
		cmd.Env = e.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("spbridge rewind %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := rewind("--to", "2"); !strings.Contains(out, "removed from the conversation, turn 2 on") {
		t.Errorf("spbridge rewind said %q", out)
	}
	lastWith := func(text string) string {
		var last string
		for _, r := range e.srv.Requests() {
			if r.Path == "/v1/messages" && strings.Contains(string(r.Body), text) {
				last = messagesText(r.Body)
			}
		}
		return last
	}

	// After a reopen, in another folder.
	moved := filepath.Join(root, "elsewhere", filepath.Base(e.pkg))
	os.MkdirAll(filepath.Dir(moved), 0o755)
	if err := os.Rename(e.pkg, moved); err != nil {
		t.Fatal(err)
	}
	e.pkg = moved
	e.run(nil, "MARK-four")
	if e.code != 0 {
		t.Fatalf("run after the rewind: exit %d\n%s", e.code, e.stderr.String())
	}
	body := lastWith("MARK-four")
	if !strings.Contains(body, "# Conversation so far") {
		t.Errorf("the turn after the rewind was not told the conversation so far: %.2000s", body)
	}
	checkCut(t, "claude after the move", body)

	// The other CLI: rewound again, then codex is told the kept items.
	rewind("--to", "2")
	e.run(nil, "--backend", "codex", "MARK-four again")
	if e.code != 0 {
		t.Fatalf("run on codex: exit %d\n%s", e.code, e.stderr.String())
	}
	var codexBody string
	for _, r := range oai.Requests() {
		if strings.Contains(string(r.Body), "MARK-four again") {
			codexBody = string(r.Body)
		}
	}
	if !strings.Contains(codexBody, "# Conversation so far") {
		t.Errorf("codex was not told the conversation so far: %.2000s", codexBody)
	}
	for _, gone := range []string{"MARK-two", "MARK-three", "ANSWER-two", "ANSWER-three", "ANSWER-four"} {
		if strings.Contains(codexBody, gone) {
			t.Errorf("codex was told %s, which the rewinds removed", gone)
		}
	}
	// Nothing of the prefix in the package.
	var saved strings.Builder
	for _, it := range e.conv().Items {
		saved.WriteString(it.String("text"))
	}
	if strings.Contains(saved.String(), "Conversation so far") {
		t.Error("the prefix entered the items")
	}
}
