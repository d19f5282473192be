package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// acpEvent is one line the ACP test client wrote.
type acpEvent struct {
	Event  string          `json:"event"`
	Step   *int            `json:"step"`
	Op     string          `json:"op"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Answer json.RawMessage `json:"answer"`
	Code   *int            `json:"code"`
	// Children are a children step's processes.
	Children []struct {
		PID     int      `json:"pid"`
		Command []string `json:"command"`
	} `json:"children"`
}

// runACPClient runs testdata/acp-client/client.mjs (the official ACP
// TypeScript library's client) on a scenario and returns its events. The
// client checks every message against the library's schemas; any invalid one
// fails the test.
func runACPClient(t *testing.T, scenario map[string]any) []acpEvent {
	t.Helper()
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(root, ".tools", "npm", "node_modules", "@agentclientprotocol", "sdk")
	if _, err := os.Stat(sdk); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the ACP SDK is not installed: %v", err)
		}
		t.Skipf("the ACP SDK is not installed (run bash scripts/install-clis): %v", err)
	}
	data, _ := json.Marshal(scenario)
	dir := t.TempDir()
	file := filepath.Join(dir, "scenario.json")
	os.WriteFile(file, data, 0o644)
	out, stderr, code, err := runOnACPClient(filepath.Join(root, "testdata", "acp-client", "client.mjs"), file, dir)
	if err != nil {
		t.Fatal(err)
	}
	var events []acpEvent
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e acpEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			events = append(events, e)
		}
	}
	for _, e := range events {
		if e.Event == "invalid" || e.Event == "fail" {
			t.Errorf("client: %s %s %s %s", e.Event, e.Method, e.Params, e.Error)
		}
	}
	if code != 0 {
		t.Fatalf("the ACP client failed: exit status %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	return events
}

// response returns the result of step n.
func response(t *testing.T, events []acpEvent, n int) map[string]any {
	t.Helper()
	for _, e := range events {
		if e.Step != nil && *e.Step == n && (e.Event == "response" || e.Event == "error") {
			if e.Event == "error" {
				t.Fatalf("step %d: error %s", n, e.Error)
			}
			var m map[string]any
			json.Unmarshal(e.Result, &m)
			return m
		}
	}
	t.Fatalf("no response to step %d", n)
	return nil
}

// updatesOf returns the session/update kinds in order, and the text of the
// agent_message_chunk updates.
func updatesOf(events []acpEvent) (kinds []string, text string) {
	var b strings.Builder
	for _, e := range events {
		if e.Event != "notification" || e.Method != "session/update" {
			continue
		}
		var p struct {
			Update map[string]any `json:"update"`
		}
		json.Unmarshal(e.Params, &p)
		kind, _ := p.Update["sessionUpdate"].(string)
		kinds = append(kinds, kind)
		if kind == "agent_message_chunk" {
			c, _ := p.Update["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return kinds, b.String()
}

func TestE2EServeWithACPClient(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("slowly ", 300)
	// The cancelled reply stops after its first chunk until claude hangs
	// up: the cancel always finds it streaming, however busy the machine.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello from the fake model over ACP."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_allow", Name: "Bash", Input: map[string]any{"command": "touch allowed-by-acp.txt", "description": "Make a file"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Made it."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_reject", Name: "Bash", Input: map[string]any{"command": "touch rejected-by-acp.txt", "description": "Make a file"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Not made."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: long}}, Hold: hold},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Continued after the cancel."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "A reply that takes a little while."}}, ChunkDelay: 100 * time.Millisecond},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "The queued message's reply."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "That is all."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "After the reload."}}},
	)
	envMap := acpEnv(e.env)
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	bin := spbridgeBin(t)
	prompt := func(text string) map[string]any {
		return map[string]any{"op": "prompt", "session": "s1", "text": text}
	}
	events := runACPClient(t, map[string]any{
		"command": []string{bin, "serve"}, "env": envMap, "cwd": work,
		"permissions": []string{"allow_once", "reject_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},                                            // 0
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"}, // 1
			prompt("say hello"),         // 2
			prompt("make a file"),       // 3
			prompt("make another file"), // 4
			map[string]any{"op": "prompt", "session": "s1", "text": "count", "async": true, "name": "slow"}, // 5
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "agent_message_chunk"},
			map[string]any{"op": "cancel", "session": "s1"},
			map[string]any{"op": "await", "name": "slow"},
			prompt("go on"), // 9
			map[string]any{"op": "prompt", "session": "s1", "text": "take your time", "async": true, "name": "busy"}, // 10
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "agent_message_chunk"},
			map[string]any{"op": "ext", "method": "_spbridge/queue", "params": map[string]any{"sessionId": "$s1", "prompt": []any{map[string]any{"type": "text", "text": "and then this"}}}}, // 12
			map[string]any{"op": "await", "name": "busy"},
			// Queued behind the queued message: answered once that has run.
			prompt("that is all"), // 14
			map[string]any{"op": "ext", "method": "_spbridge/save", "params": map[string]any{"sessionId": "$s1"}}, // 15
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 0); r["protocolVersion"] != float64(1) {
		t.Errorf("initialize: %v", r)
	}
	if r := response(t, events, 1); r["sessionId"] != e.pkg {
		t.Errorf("session/new: %v", r)
	}
	for step, want := range map[int]string{2: "end_turn", 3: "end_turn", 4: "end_turn", 5: "cancelled", 9: "end_turn", 10: "end_turn", 14: "end_turn"} {
		if r := response(t, events, step); r["stopReason"] != want {
			t.Errorf("step %d: stopReason %v, want %s", step, r["stopReason"], want)
		}
	}
	kinds, text := updatesOf(events)
	for _, want := range []string{"Hello from the fake model over ACP.", "Made it.", "Not made.", "slowly slowly", "Continued after the cancel.", "The queued message's reply."} {
		if !strings.Contains(text, want) {
			t.Errorf("the streamed text lacks %q", want)
		}
	}
	if strings.Contains(text, long) {
		t.Error("the cancelled reply was not cut")
	}
	if !strings.Contains(strings.Join(kinds, " "), "tool_call tool_call_update") {
		t.Errorf("no tool_call then tool_call_update: %v", kinds)
	}
	var answers []string
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" {
			answers = append(answers, string(ev.Answer))
		}
	}
	if len(answers) != 2 || !strings.Contains(answers[0], "allow_once") || !strings.Contains(answers[1], "reject_once") {
		t.Errorf("permission requests answered %v", answers)
	}
	if _, err := os.Stat(filepath.Join(work, "allowed-by-acp.txt")); err != nil {
		t.Error("the allowed command did not run")
	}
	if _, err := os.Stat(filepath.Join(work, "rejected-by-acp.txt")); err == nil {
		t.Error("the rejected command ran")
	}
	if r := response(t, events, 12); r["queued"] != true {
		t.Errorf("queue: %v", r)
	}

	p, err := archive.Open(e.pkg, archive.KindDocument, true)
	if err != nil || p.Unreadable != "" {
		t.Fatalf("open: %v %s", err, p.Unreadable)
	}
	var users []string
	for _, it := range p.Conv.Items {
		if it.Type() == archive.TypeUser {
			users = append(users, it.String("text"))
		}
	}
	if strings.Join(users, "|") != "say hello|make a file|make another file|count|go on|take your time|and then this|that is all" {
		t.Errorf("saved user items %q", users)
	}

	// A new server process loads the package: the conversation is replayed,
	// and the next prompt starts a new CLI session told what was said.
	events = runACPClient(t, map[string]any{
		"command": []string{bin, "serve"}, "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "loadSession", "sessionId": e.pkg, "cwd": work, "meta": meta, "saveAs": "s1"},
			prompt("what did we do?"),
			map[string]any{"op": "closeStdin"},
		},
	})
	kinds, _ = updatesOf(events)
	userChunks := 0
	for _, k := range kinds {
		if k == "user_message_chunk" {
			userChunks++
		}
	}
	if userChunks != 8 {
		t.Errorf("session/load replayed %d user messages, want 8", userChunks)
	}
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Errorf("prompt after load: %v", r)
	}
	reqs := e.srv.Requests()
	last := userTexts(reqs[len(reqs)-1].Body)
	if len(last) != 1 || !strings.HasPrefix(last[0], "# Conversation so far\nUser: say hello\n\nAssistant: Hello from the fake model over ACP.") || !strings.HasSuffix(last[0], "\n\nwhat did we do?") {
		t.Errorf("the first prompt after the reload sent %q", last)
	}
}

// TestE2EServeCodex drives a codex session (app-server) through spbridge
// serve with the official ACP client.
func TestE2EServeCodex(t *testing.T) {
	t.Parallel()
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ReasoningItem("Considering"), fakeapi.MessageItem("Hello from codex over ACP.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Second answer.")}})
	envMap := acpEnv(e.env)
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "hello"},
			map[string]any{"op": "prompt", "session": "s1", "text": "again"},
			map[string]any{"op": "closeStdin"},
		},
	})
	for _, step := range []int{2, 3} {
		if r := response(t, events, step); r["stopReason"] != "end_turn" {
			t.Errorf("step %d: %v", step, r)
		}
	}
	kinds, text := updatesOf(events)
	if !strings.Contains(text, "Hello from codex over ACP.Second answer.") || !strings.Contains(strings.Join(kinds, " "), "agent_thought_chunk") {
		t.Errorf("updates %v, text %q", kinds, text)
	}
	// One thread: the second request carries the first exchange.
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Hello from codex over ACP.") {
		t.Errorf("%d requests; the second lacks the history", len(reqs))
	}
	c := e.conv()
	if c.Provider != "codex" || len(c.Items) != 5 {
		t.Errorf("saved: provider %q, %d items", c.Provider, len(c.Items))
	}
}

// acpEnv is an environment (NAME=value entries) as the ACP test client's
// scenario takes it; a name the caller sets to nil there is removed from
// the environment the client would pass on.
func acpEnv(env []string) map[string]any {
	m := make(map[string]any, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
