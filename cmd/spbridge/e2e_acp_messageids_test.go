package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// msgChunk is one message chunk a run of the ACP client saw.
type msgChunk struct {
	kind, messageID, text string
	line                  int // the bytes of its params as sent
}

// msgChunksOf are the message chunks of events, in order.
func msgChunksOf(events []acpEvent) []msgChunk {
	var out []msgChunk
	for _, e := range events {
		if e.Event != "notification" || e.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				MessageID     string `json:"messageId"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		json.Unmarshal(e.Params, &p)
		if strings.HasSuffix(p.Update.SessionUpdate, "_chunk") {
			out = append(out, msgChunk{p.Update.SessionUpdate, p.Update.MessageID, p.Update.Content.Text, len(e.Params)})
		}
	}
	return out
}

// msgIDs are the messageIds of the chunks of kind, each once in order,
// with each message's text; every chunk must carry one, and no line more
// than about 16 KiB.
func msgIDs(t *testing.T, cs []msgChunk, kind string) ([]string, map[string]string) {
	t.Helper()
	var ids []string
	texts := map[string]string{}
	for _, c := range cs {
		if c.kind != kind {
			continue
		}
		if c.line > 17<<10 {
			t.Errorf("a %s line of %d bytes", c.kind, c.line)
		}
		if c.messageID == "" {
			t.Errorf("a %s without a messageId (%d bytes of text)", kind, len(c.text))
			continue
		}
		if len(ids) == 0 || ids[len(ids)-1] != c.messageID {
			ids = append(ids, c.messageID)
		}
		texts[c.messageID] += c.text
	}
	return ids, texts
}

// checkMessageIDs runs the message id scenario on a CLI whose model says
// "First answer." (after a thought) to "first question" and long to
// "second question", then "After the fork." twice: every message chunk
// carries its message's id, the same live and when a new serve loads the
// session (the user's messages too); the long reply goes out in chunks of
// at most about 16 KiB, live and replayed; session/fork at the first
// answer's id (the adapters' _meta.jetbrains.air.fork, and the request's
// messageId) copies the conversation up to that answer, which its first
// prompt tells the model; an unknown messageId is refused.
func checkMessageIDs(t *testing.T, serve []string, env map[string]any, pkg, backend, long string, bodies func() [][]byte, texts func([]byte) []string) {
	work := filepath.Dir(pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": pkg, "backend": backend}}
	events := runACPClient(t, map[string]any{"command": serve, "env": env, "cwd": work, "steps": []any{
		map[string]any{"op": "initialize"},
		map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
		map[string]any{"op": "prompt", "session": "s1", "text": "first question"},  // 2
		map[string]any{"op": "prompt", "session": "s1", "text": "second question"}, // 3
		map[string]any{"op": "closeStdin"},
	}})
	for _, n := range []int{2, 3} {
		if r := response(t, events, n); r["stopReason"] != "end_turn" {
			t.Fatalf("step %d: %v", n, r)
		}
	}
	live := msgChunksOf(events)
	replies, replyTexts := msgIDs(t, live, "agent_message_chunk")
	thoughts, _ := msgIDs(t, live, "agent_thought_chunk")
	if len(replies) != 2 || replyTexts[replies[0]] != "First answer." || replyTexts[replies[1]] != long || len(thoughts) != 1 {
		t.Fatalf("live: replies %q (%d bytes in the second), thoughts %q", replies, len(replyTexts[replies[len(replies)-1]]), thoughts)
	}

	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, it := range p.Conv.Items {
		if it.Type() == archive.TypeUser {
			users = append(users, it.ID())
		}
	}
	air := func(id string) map[string]any {
		return map[string]any{"jetbrains": map[string]any{"air": map[string]any{"fork": map[string]any{"version": 1, "messageId": id}}}}
	}
	events = runACPClient(t, map[string]any{"command": serve, "env": env, "cwd": work, "steps": []any{
		map[string]any{"op": "initialize"}, // 0
		map[string]any{"op": "loadSession", "sessionId": pkg, "cwd": work, "meta": meta, "saveAs": "s1"},                                                               // 1
		map[string]any{"op": "forkSession", "sessionId": pkg, "meta": air(replies[0]), "saveAs": "f1"},                                                                 // 2
		map[string]any{"op": "prompt", "session": "f1", "text": "go on from the first answer"},                                                                         // 3
		map[string]any{"op": "ext", "method": "session/fork", "params": map[string]any{"sessionId": pkg, "cwd": work, "mcpServers": []any{}, "messageId": users[1]}},   // 4
		map[string]any{"op": "ext", "method": "session/fork", "params": map[string]any{"sessionId": pkg, "cwd": work, "mcpServers": []any{}, "messageId": "msg_nope"}}, // 5
		map[string]any{"op": "closeStdin"},
	}})
	if c, _ := response(t, events, 0)["agentCapabilities"].(map[string]any)["sessionCapabilities"].(map[string]any); c["fork"] == nil {
		t.Errorf("sessionCapabilities: %v", c)
	}
	var replay []msgChunk
	for _, e := range events {
		if e.Event == "response" && e.Step != nil && *e.Step == 1 {
			break
		}
		replay = append(replay, msgChunksOf([]acpEvent{e})...)
	}
	replayed, replayedTexts := msgIDs(t, replay, "agent_message_chunk")
	replayedThoughts, _ := msgIDs(t, replay, "agent_thought_chunk")
	replayedUsers, userTexts := msgIDs(t, replay, "user_message_chunk")
	if !slices.Equal(replayed, replies) || replayedTexts[replies[1]] != long || !slices.Equal(replayedThoughts, thoughts) {
		t.Errorf("replayed replies %q and thoughts %q, live %q and %q", replayed, replayedThoughts, replies, thoughts)
	}
	if !slices.Equal(replayedUsers, users) || userTexts[users[0]] != "first question" {
		t.Errorf("replayed user messages %q, the items %q", replayedUsers, users)
	}
	if r := response(t, events, 3); r["stopReason"] != "end_turn" {
		t.Errorf("the fork's prompt: %v", r)
	}
	sent := strings.Join(sentWith(t, bodies(), texts, "go on from the first answer"), "\n")
	if !strings.Contains(sent, "first question") || !strings.Contains(sent, "First answer.") || strings.Contains(sent, "second question") {
		t.Errorf("the fork at the first answer told the model %q", sent)
	}
	f2, _ := response(t, events, 4)["sessionId"].(string)
	if g, err := archive.Open(f2, archive.KindDocument, true); err != nil || len(g.Conv.Items) == 0 || g.Conv.Items[len(g.Conv.Items)-1].ID() != users[1] {
		t.Errorf("the fork at the second question %q: %v", f2, err)
	}
	refused := false
	for _, e := range events {
		if e.Event == "error" && e.Step != nil && *e.Step == 5 {
			var er struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			json.Unmarshal(e.Error, &er)
			refused = er.Code == -32602 && strings.Contains(er.Message, "msg_nope")
		}
	}
	if !refused {
		t.Error("a fork at an unknown messageId was not refused")
	}
}

// longReply is a reply of about 80,000 characters, more than one line a
// 64 KiB reader takes: words, accents and an emoji joined by ZWJ.
func longReply() string {
	var b strings.Builder
	for i := 0; b.Len() < 80000; i++ {
		b.WriteString("word été 👩‍👩‍👧 ")
		if i%20 == 19 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestE2EServeMessageIDs: the message id scenario (checkMessageIDs) with
// the real claude and the official client.
func TestE2EServeMessageIDs(t *testing.T) {
	t.Parallel()
	long := longReply()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "thinking", Thinking: "Let me think."}, {Text: "First answer."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: long}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "After the fork."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "After the fork."}}},
	)
	checkMessageIDs(t, []string{spbridgeBin(t), "serve"}, acpEnv(e.env), e.pkg, "claude", long, func() [][]byte {
		var bodies [][]byte
		for _, r := range e.srv.Requests() {
			bodies = append(bodies, r.Body)
		}
		return bodies
	}, userTexts)
}

// TestE2EServeCodexMessageIDs: the same with the real codex, on both
// transports.
func TestE2EServeCodexMessageIDs(t *testing.T) {
	transports(t, func(t *testing.T, transport string) {
		long := longReply()
		e, srv := newCodexE2E(t,
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ReasoningItem("Let me think."), fakeapi.MessageItem("First answer.")}},
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(long)}},
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("After the fork.")}},
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("After the fork.")}},
		)
		checkMessageIDs(t, []string{spbridgeBin(t), "serve", "--backend", "codex", "--codex-transport", transport}, acpEnv(e.env), e.pkg, "codex", long, func() [][]byte {
			var bodies [][]byte
			for _, r := range srv.Requests() {
				bodies = append(bodies, r.Body)
			}
			return bodies
		}, inputTexts)
	})
}
