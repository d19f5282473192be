//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/fakeapi"
)

// steerItems is the saved conversation's items as "type: text" (a tool as
// "tool"), and its history's user and assistant texts, in order.
func steerItems(conv *archive.Conversation) (items, history []string) {
	for _, it := range conv.Items {
		switch it.Type() {
		case archive.TypeUser, archive.TypeAssistant:
			items = append(items, it.Type()+": "+it.String("text"))
		case archive.TypeTool:
			items = append(items, "tool")
		}
	}
	for _, m := range conv.History {
		for _, b := range m.Content {
			if b.Type() == archive.BlockText && (m.Role == "user" || m.Role == "assistant") {
				history = append(history, m.Role+": "+b.String("text"))
			}
		}
	}
	return items, history
}

// auditItems is the item texts of each audit record of pkg's
// conversation, as steerItems says them.
func auditItems(t *testing.T, env []string, conv *archive.Conversation) [][]string {
	t.Helper()
	path, err := audit.Path(stateDir(env), conv.Identity())
	if err != nil {
		t.Fatal(err)
	}
	records, err := audit.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, r := range records {
		var items []string
		list, _ := r["items"].([]any)
		for _, v := range list {
			m, _ := v.(map[string]any)
			switch m["type"] {
			case archive.TypeUser, archive.TypeAssistant:
				items = append(items, m["type"].(string)+": "+m["text"].(string))
			case archive.TypeTool:
				items = append(items, "tool")
			}
		}
		out = append(out, items)
	}
	return out
}

// steerAnswer is the result of a _session/steering step.
func steerAnswer(t *testing.T, events []acpEvent, step int) (outcome, reason string) {
	t.Helper()
	r := response(t, events, step)
	outcome, _ = r["outcome"].(string)
	reason, _ = r["reason"].(string)
	return outcome, reason
}

// errorCode is the error code of step n's answer (0 when it succeeded).
func errorCode(events []acpEvent, n int) int {
	for _, e := range events {
		if e.Step != nil && *e.Step == n && e.Event == "error" {
			var v struct{ Code int }
			json.Unmarshal(e.Error, &v)
			return v.Code
		}
	}
	return 0
}

// TestE2EServeSteerClaude steers a turn of the real claude through
// _session/steering with the official ACP client: the message typed while
// a command runs is injected, reaches the model with the turn's next
// request (after the command's result), and the saved conversation, its
// history and the audit record hold it in order, also once the session is
// loaded again. With no turn running, a client that asked gets
// promptRequired and nothing is kept; an empty message is refused.
func TestE2EServeSteerClaude(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	fifo := filepath.Join(work, "go.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Checking."}, {Type: "tool_use", ID: "toolu_wait", Name: "Bash", Input: map[string]any{"command": "cat " + fifo, "description": "Wait for the go"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Blue it is."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Green then."}}})
	env := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	serve := []string{spbridgeBin(t), "serve"}
	events := runACPClient(t, map[string]any{
		"command": serve, "env": env, "cwd": work, "permissions": []string{"allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},                                                                  // 0
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},                       // 1
			map[string]any{"op": "prompt", "session": "s1", "text": "paint it", "async": true, "name": "p"},     // 2
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "tool_call"},           // 3
			map[string]any{"op": "steer", "session": "s1", "text": "use blue"},                                  // 4
			map[string]any{"op": "exec", "command": []string{"sh", "-c", "echo go > " + fifo}},                  // 5
			map[string]any{"op": "await", "name": "p"},                                                          // 6
			map[string]any{"op": "steer", "session": "s1", "text": "no turn", "idleBehavior": "promptRequired"}, // 7
			map[string]any{"op": "steer", "session": "s1", "text": " "},                                         // 8
			map[string]any{"op": "steer", "session": "s1", "text": "and green"},                                 // 9
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "usage_update"},
			map[string]any{"op": "closeStdin"},
		},
	})
	init := response(t, events, 0)
	if m, _ := init["_meta"].(map[string]any); m == nil || m["steering"] == nil || m["steering"].(map[string]any)["supported"] != true {
		t.Errorf("initialize: no _meta.steering.supported: %v", init["_meta"])
	}
	if o, _ := steerAnswer(t, events, 4); o != "injected" {
		t.Errorf("steer during the turn: %s, want injected", o)
	}
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Errorf("the steered turn: %v", r)
	}
	if o, why := steerAnswer(t, events, 7); o != "promptRequired" || why != "noRunningTurn" {
		t.Errorf("steer with no turn: %s %s, want promptRequired noRunningTurn", o, why)
	}
	if c := errorCode(events, 8); c != -32602 {
		t.Errorf("an empty steer: code %d, want -32602", c)
	}
	if o, _ := steerAnswer(t, events, 9); o != "startedNewTurn" {
		t.Errorf("steer with no turn, no idle behaviour asked: %s, want startedNewTurn", o)
	}

	var bodies []string
	for _, r := range e.srv.Requests() {
		if r.Path == "/v1/messages" && strings.Contains(string(r.Body), "paint it") {
			bodies = append(bodies, strings.Join(userTexts(r.Body), "|")+" "+string(r.Body))
		}
	}
	// The third is the turn the last steer started.
	if len(bodies) != 3 || strings.Contains(bodies[0], "use blue") || !strings.Contains(bodies[1], "use blue") || !strings.Contains(bodies[2], "and green") {
		t.Errorf("the requests (%d): the second, after the command, must carry the steered message", len(bodies))
	}

	conv := e.conv()
	items, history := steerItems(conv)
	wantItems := []string{"user: paint it", "assistant: Checking.", "tool", "user: use blue", "assistant: Blue it is."}
	if !slices.Equal(items[:min(len(items), 5)], wantItems) || len(items) < 6 || items[5] != "user: and green" {
		t.Errorf("saved items %q, want %q then the turn steering started", items, wantItems)
	}
	wantHistory := []string{"user: paint it", "assistant: Checking.", "user: use blue", "assistant: Blue it is."}
	if !slices.Equal(history[:min(len(history), 4)], wantHistory) {
		t.Errorf("saved history %q, want %q first", history, wantHistory)
	}
	if got := auditItems(t, e.env, conv); len(got) < 1 || !slices.Equal(got[0], wantItems) {
		t.Errorf("audit records' items %q, want the first with %q", got, wantItems)
	}

	// Loaded again: the steered message is shown in its place.
	events = runACPClient(t, map[string]any{
		"command": serve, "env": env, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "loadSession", "sessionId": e.pkg, "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "closeStdin"},
		},
	})
	var shown []string
	for _, ev := range events {
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if ev.Event == "notification" && json.Unmarshal(ev.Params, &p) == nil && p.Update.SessionUpdate == "user_message_chunk" {
			shown = append(shown, p.Update.Content.Text)
		}
	}
	if !slices.Equal(shown, []string{"paint it", "use blue", "and green"}) {
		t.Errorf("replayed user messages %q", shown)
	}
}

// TestE2EServeSteerCodex steers a turn of the real codex app-server
// through _session/steering: codex takes the message (turn/steer), drops
// the answer that was streaming and asks the model again, in the same
// turn, with it; the saved conversation, its history and the audit record
// hold it in order.
func TestE2EServeSteerCodex(t *testing.T) {
	t.Parallel()
	pause := make(chan struct{}) // never closed: codex drops the answer
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Checking the colours.")}, Pause: pause},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Blue it is.")}})
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve", "--codex-transport", "app-server"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},                                                              // 0
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},                   // 1
			map[string]any{"op": "prompt", "session": "s1", "text": "paint it", "async": true, "name": "p"}, // 2
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "agent_message_chunk"},
			map[string]any{"op": "steer", "session": "s1", "text": "use blue"}, // 4
			map[string]any{"op": "await", "name": "p"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if o, _ := steerAnswer(t, events, 4); o != "injected" {
		t.Errorf("steer during the turn: %s, want injected", o)
	}
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Errorf("the steered turn: %v", r)
	}
	var inputs [][]string
	for _, r := range srv.Requests() {
		if in := inputTexts(r.Body); slices.Contains(in, "paint it") {
			inputs = append(inputs, in)
		}
	}
	if len(inputs) != 2 || slices.Contains(inputs[0], "use blue") || !slices.Contains(inputs[1], "use blue") {
		t.Errorf("the turn's requests' user input %q: the second must carry the steered message", inputs)
	}
	conv := e.conv()
	items, history := steerItems(conv)
	users := slices.DeleteFunc(slices.Clone(items), func(s string) bool { return !strings.HasPrefix(s, "user: ") })
	if !slices.Equal(users, []string{"user: paint it", "user: use blue"}) || items[len(items)-1] != "assistant: Blue it is." {
		t.Errorf("saved items %q", items)
	}
	wantHistory := []string{"user: paint it", "user: use blue", "assistant: Blue it is."}
	if !slices.Equal(history, wantHistory) {
		t.Errorf("saved history %q, want %q", history, wantHistory)
	}
	if got := auditItems(t, e.env, conv); len(got) != 1 || !slices.Equal(got[0], items) {
		t.Errorf("audit records' items %q, want one with %q", got, items)
	}
}

// TestE2EServeSteerCodexExec: a turn of codex exec takes no message: a
// steer is queued behind it and the answer says why; the turn's cancel
// hands it back, kept among the conversation's unsent messages.
func TestE2EServeSteerCodexExec(t *testing.T) {
	t.Parallel()
	pause := make(chan struct{})
	defer close(pause)
	e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Checking the colours.")}, Pause: pause})
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve", "--codex-transport", "exec"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "paint it", "async": true, "name": "p"}, // 2
			map[string]any{"op": "steer", "session": "s1", "text": "use blue"},                              // 3
			map[string]any{"op": "cancel", "session": "s1"},
			map[string]any{"op": "await", "name": "p"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if o, why := steerAnswer(t, events, 3); o != "queued" || !strings.Contains(why, "codex exec") {
		t.Errorf("steer during a codex exec turn: %s (%s), want queued, saying why", o, why)
	}
	if r := response(t, events, 2); r["stopReason"] != "cancelled" {
		t.Errorf("the cancelled turn: %v", r)
	}
	conv := e.conv()
	if items, _ := steerItems(conv); slices.Contains(items, "user: use blue") {
		t.Errorf("the queued message became an item: %q", items)
	}
	if fmt.Sprint(conv.Unsent) != "[use blue]" {
		t.Errorf("unsent %v, want the steered message", conv.Unsent)
	}
}
