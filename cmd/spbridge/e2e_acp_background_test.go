package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/audit"
	"spbridge/internal/fakeapi"
)

// subagentRequest reports whether a /v1/messages request is a subagent's:
// its first message carries the subagent's prompt.
func subagentRequest(body []byte) bool {
	var req struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return false
	}
	return bytes.Contains(req.Messages[0].Content, []byte("SUBAGENT TASK"))
}

// sideRequest reports whether a request is one of claude's one-token side
// requests.
func sideRequest(body []byte) bool {
	var req struct {
		MaxTokens int `json:"max_tokens"`
	}
	return json.Unmarshal(body, &req) == nil && req.MaxTokens <= 1
}

// TestE2EServeClaudeBackground drives the real claude through spbridge
// serve with the official ACP client: a background subagent whose Bash
// asks its permission after the turn's result (its first reply streams
// slowly), then claude's own turn for its report. Between the first
// prompt's answer and the second prompt, with nothing asked, the editor
// gets the subagent's call as a tool_call under the Agent call
// (_meta.spbridge.parentToolCallId), its permission request (answered:
// the file is made), the report as message chunks and a usage_update; the
// second turn is the user's alone; _spbridge/save keeps the report in the
// history.
func TestE2EServeClaudeBackground(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	// The subagent's call streams its first chunk, then waits for the
	// first turn's end (its audit record, written as the turn ends): its
	// permission is asked between the turns however busy the machine.
	hold := make(chan struct{})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go releaseAfterTurn(filepath.Join(stateDirOf(e.env), "audit"), "The subagent is on its way.", hold, stop)
	main := func(body []byte) bool { return !subagentRequest(body) && !sideRequest(body) }
	sub := func(body []byte) bool { return subagentRequest(body) && !sideRequest(body) }
	e.srv.Push(
		fakeapi.Reply{Match: main, Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_agent_1", Name: "Agent", Input: map[string]any{
			"description": "Make a file", "prompt": "SUBAGENT TASK: make a file.", "subagent_type": "claude"}}}},
		fakeapi.Reply{Match: sub, Hold: hold, Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_sub_bash", Name: "Bash", Input: map[string]any{
			"command": "touch made.txt", "description": "Make the file"}}}},
		fakeapi.Reply{Match: sub, Blocks: []fakeapi.Block{{Text: "Made it."}}},
		fakeapi.Reply{Match: main, Blocks: []fakeapi.Block{{Text: "The subagent is on its way."}}},
		fakeapi.Reply{Match: main, Blocks: []fakeapi.Block{{Text: "The subagent made the file."}}},
		fakeapi.Reply{Match: main, Blocks: []fakeapi.Block{{Text: "Second answer."}}},
	)
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []string{"allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "have a subagent make a file"},
			// The turn's usage_update, then the one of claude's own turn.
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "usage_update", "count": 2},
			map[string]any{"op": "prompt", "session": "s1", "text": "anything else?"},
			map[string]any{"op": "ext", "method": "_spbridge/save", "params": map[string]any{"sessionId": "$s1"}},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("first prompt: %v", r)
	}
	if r := response(t, events, 4); r["stopReason"] != "end_turn" {
		t.Fatalf("second prompt: %v", r)
	}
	// Where each part is: after the first prompt's answer, before the
	// second prompt.
	answered, second := -1, -1
	for i, ev := range events {
		if ev.Step != nil && *ev.Step == 2 && ev.Event == "response" {
			answered = i
		}
		if ev.Step != nil && *ev.Step == 4 && ev.Event == "step" {
			second = i
		}
	}
	var agentID string
	var childAt, askedAt = -1, -1
	var between strings.Builder
	var secondTurn strings.Builder
	for i, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" && i > answered && i < second {
			askedAt = i
		}
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct{ Update map[string]any }
		json.Unmarshal(ev.Params, &p)
		u := p.Update
		switch u["sessionUpdate"] {
		case "tool_call":
			id, _ := u["toolCallId"].(string)
			meta, _ := u["_meta"].(map[string]any)
			sp, _ := meta["spbridge"].(map[string]any)
			if parent, _ := sp["parentToolCallId"].(string); parent != "" {
				if parent == agentID && childAt < 0 {
					childAt = i
				}
			} else if agentID == "" && i < answered {
				agentID = id // the first turn's one call
			}
		case "agent_message_chunk":
			c, _ := u["content"].(map[string]any)
			text, _ := c["text"].(string)
			switch {
			case i > answered && i < second:
				between.WriteString(text)
			case i > second:
				secondTurn.WriteString(text)
			}
		}
	}
	if agentID == "" || childAt < 0 {
		t.Fatalf("no tool_call under the Agent call %q", agentID)
	}
	if childAt < answered || childAt > second {
		t.Errorf("the subagent's tool_call (event %d) is not between the first answer (%d) and the second prompt (%d)", childAt, answered, second)
	}
	if askedAt < 0 {
		t.Error("the subagent's permission request was not asked between turns")
	}
	if _, err := os.Stat(filepath.Join(work, "made.txt")); err != nil {
		t.Errorf("the subagent's command did not run: %v", err)
	}
	if got := between.String(); got != "The subagent made the file." {
		t.Errorf("between the turns the editor was told %q", got)
	}
	if got := secondTurn.String(); got != "Second answer." {
		t.Errorf("the second turn said %q", got)
	}
	data, err := os.ReadFile(filepath.Join(e.pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var conv struct {
		History []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"history"`
	}
	if err := json.Unmarshal(data, &conv); err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, m := range conv.History {
		for _, c := range m.Content {
			if c["type"] == "text" {
				said = append(said, m.Role+": "+c["text"].(string))
			}
		}
	}
	want := []string{"user: have a subagent make a file", "assistant: The subagent is on its way.",
		"assistant: The subagent made the file.", "user: anything else?", "assistant: Second answer."}
	if strings.Join(said, "|") != strings.Join(want, "|") {
		t.Errorf("saved history says %q, want %q", said, want)
	}
	// Three turns in the audit log: the user's two and, between them, the
	// one claude ran on its own for the report.
	var stateDir string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "SPBRIDGE_STATE_DIR="); ok {
			stateDir = v
		}
	}
	path, err := audit.Path(stateDir, e.conv().Identity())
	if err != nil {
		t.Fatal(err)
	}
	records, err := audit.Read(path)
	var origins []string
	for _, r := range records {
		o, _ := r["origin"].(string)
		origins = append(origins, o+"/"+fmt.Sprint(r["user"]))
	}
	if err != nil || strings.Join(origins, "|") != "/have a subagent make a file|cli/|/anything else?" {
		t.Errorf("audit records (origin/user): %q, %v", origins, err)
	}
}

// stateDirOf is the state folder an e2e environment gives spbridge.
func stateDirOf(env []string) string {
	state := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SPBRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	return state
}

// releaseAfterTurn closes hold once an audit log under dir holds text
// (the record of a turn that said it, written as that turn ended), or
// when stop is closed. It looks again after every short pause: it waits
// for that event, however long it takes.
func releaseAfterTurn(dir, text string, hold, stop chan struct{}) {
	defer close(hold)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, l := range logs {
			if data, err := os.ReadFile(l); err == nil && strings.Contains(string(data), text) {
				return
			}
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}
