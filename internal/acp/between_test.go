package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// bgFake is a fake backend whose CLI goes on between turns: between tells
// its watcher what a background subagent did, as soon as no hold keeps it
// (backend.Background).
type bgFake struct {
	*fakeBackend
	hmu     sync.Mutex
	free    *sync.Cond // signalled when the last hold is released
	holds   int
	watcher backend.Between
}

func newBgFake() *bgFake {
	f := &bgFake{fakeBackend: newFake()}
	f.free = sync.NewCond(&f.hmu)
	return f
}

func (f *bgFake) Watch(h backend.Between) {
	f.hmu.Lock()
	f.watcher = h
	f.hmu.Unlock()
}

func (f *bgFake) Hold() func() {
	f.hmu.Lock()
	f.holds++
	f.hmu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.hmu.Lock()
			f.holds--
			f.free.Broadcast()
			f.hmu.Unlock()
		})
	}
}

// between waits until nothing holds the backend and tells the watcher,
// holding off holds meanwhile: a subagent's Read under the item parent,
// a report in two chunks, and the end of the turn run for it. bad sends
// an item the session cannot show (a zero item) instead.
func (f *bgFake) between(parent string, bad bool) {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	for f.holds > 0 {
		f.free.Wait()
	}
	w := f.watcher
	if bad {
		w.Change(itemmap.Change{Op: itemmap.OpAdd, Item: archive.Item{}})
		return
	}
	tool := archive.NewItem(archive.TypeTool)
	tool.Set("name", "Read")
	tool.Set("summary", "/w/readme.txt")
	tool.Set("status", archive.StatusSucceeded)
	w.Change(itemmap.Change{Op: itemmap.OpAdd, Item: tool, Tool: &itemmap.ToolView{Kind: itemmap.KindRead, Title: "Read readme.txt", ParentID: parent}})
	report := archive.NewItem(archive.TypeAssistant)
	report.Set("text", "The sub")
	w.Change(itemmap.Change{Op: itemmap.OpAdd, Item: report})
	report.Set("text", "The subagent counted 4 words.")
	w.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: report, Delta: "agent counted 4 words."})
	w.End(&itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "claude-sonnet-4-5", CostUSD: "0.25",
		Usage:     archive.Usage{Input: "100", Output: "8", ReportedCost: "0.25"},
		LastRound: archive.Usage{Input: "100", Output: "8"},
		History:   []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("The subagent counted 4 words.")}}}})
}

// startBg starts a server whose backends are bgFakes, handed to the test
// on the channel as they are made.
func startBg(t *testing.T) (*client, chan *bgFake) {
	made := make(chan *bgFake, 10)
	c := startServerWith(t, Config{CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		f := newBgFake()
		made <- f
		return f, nil
	})})
	return c, made
}

// TestBetweenTurnsReachClient: what the CLI does between turns goes to the
// client at once, with no prompt running: the subagent's call as a
// tool_call under its parent, the report as message chunks, the usage;
// it is saved with the conversation (items, history, cost).
func TestBetweenTurnsReachClient(t *testing.T) {
	c, made := startBg(t)
	pkg := newPackage(t)
	s, _ := c.request("session/new", newSessionParams(pkg))
	sid := s["sessionId"]
	f := <-made
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	go f.between("agent-item", false)
	_, seen := c.until(func(m map[string]any) bool {
		u := updateOf(m)
		return m["method"] == "session/update" && u["sessionUpdate"] == "usage_update"
	})
	calls := updates(seen, "tool_call")
	if len(calls) != 1 || calls[0]["title"] != "Read readme.txt" {
		t.Fatalf("tool_call updates = %v", calls)
	}
	if p := calls[0]["_meta"].(map[string]any)["spbridge"].(map[string]any)["parentToolCallId"]; p != "agent-item" {
		t.Errorf("parentToolCallId = %v, want agent-item", p)
	}
	var said strings.Builder
	for _, u := range updates(seen, "agent_message_chunk") {
		said.WriteString(u["content"].(map[string]any)["text"].(string))
	}
	if said.String() != "The subagent counted 4 words." {
		t.Errorf("chunks say %q", said.String())
	}
	if n := count(seen, "_spbridge/edited"); n == 0 {
		t.Error("no _spbridge/edited for a change between turns")
	}
	c.request("_spbridge/save", map[string]any{"sessionId": sid})
	data, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var conv struct {
		Items   []map[string]any `json:"items"`
		History []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"history"`
		EstimatedCost map[string]any `json:"estimatedCost"`
	}
	if err := json.Unmarshal(data, &conv); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, it := range conv.Items {
		types = append(types, it["type"].(string))
	}
	if got := strings.Join(types, " "); got != "user assistant tool tool assistant" {
		t.Errorf("saved items: %s", got)
	}
	last := conv.History[len(conv.History)-1]
	if last.Role != "assistant" || last.Content[0]["text"] != "The subagent counted 4 words." {
		t.Errorf("the report is not last in the history: %+v", last)
	}
	if conv.EstimatedCost["dollars"] == nil {
		t.Errorf("estimatedCost = %v", conv.EstimatedCost)
	}
}

// TestBetweenTurnsWaitForPrompt: what the CLI does between turns while a
// turn runs goes out after the prompt's answer, never among its updates.
func TestBetweenTurnsWaitForPrompt(t *testing.T) {
	c, made := startBg(t)
	s, _ := c.request("session/new", newSessionParams(newPackage(t)))
	sid := s["sessionId"]
	f := <-made
	id := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("slow")}})
	if got := <-f.began; got != "slow" {
		t.Fatalf("turn began with %q", got)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.between("agent-item", false)
	}()
	f.finish <- struct{}{}
	<-done
	resp, _ := c.response(id)
	if resp["result"] == nil {
		t.Fatalf("prompt answer: %v", resp)
	}
	c.mu.Lock()
	answered, call := -1, -1
	for i, m := range c.all {
		if m["id"] == id && m["method"] == nil {
			answered = i
		}
		if u := updateOf(m); u["sessionUpdate"] == "tool_call" && u["title"] == "Read readme.txt" && call < 0 {
			call = i
		}
	}
	c.mu.Unlock()
	if call >= 0 && call < answered {
		t.Errorf("the between-turn tool_call (message %d) went out before the prompt's answer (message %d)", call, answered)
	}
	c.until(func(m map[string]any) bool {
		u := updateOf(m)
		return u["sessionUpdate"] == "tool_call" && u["title"] == "Read readme.txt"
	})
}

// TestBetweenTurnsPanic: a panic in what happens between turns ends that
// session, with a failure item saved, and nothing else: the server and its
// other sessions go on.
func TestBetweenTurnsPanic(t *testing.T) {
	c, made := startBg(t)
	pkg := newPackage(t)
	a, _ := c.request("session/new", newSessionParams(pkg))
	fa := <-made
	b, _ := c.request("session/new", newSessionParams(newPackage(t)))
	<-made
	c.request("session/prompt", map[string]any{"sessionId": a["sessionId"], "prompt": []any{textBlock("hi")}})
	fa.between("", true)
	c.until(func(m map[string]any) bool {
		u := updateOf(m)
		content, _ := u["content"].(map[string]any)
		text, _ := content["text"].(string)
		return strings.Contains(text, "internal error")
	})
	if res, _ := c.request("session/prompt", map[string]any{"sessionId": b["sessionId"], "prompt": []any{textBlock("hi")}}); res["stopReason"] != "end_turn" {
		t.Errorf("the other session: %v", res)
	}
	r, _ := c.response(c.call("session/prompt", map[string]any{"sessionId": a["sessionId"], "prompt": []any{textBlock("hi")}}))
	if errCode(r) != CodeNotFound {
		t.Errorf("the failed session still takes prompts: %v", r)
	}
	// The server ends once every session was closed, saved first.
	if err := c.wait(); err != nil {
		t.Errorf("server: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(pkg, "agent", "conversation.json"))
	if err != nil || !strings.Contains(string(data), "spbridge hit an internal error") {
		t.Errorf("saved conversation lacks the failure (%v)", err)
	}
}

// updateOf is the update of a session/update notification, else nil.
func updateOf(m map[string]any) map[string]any {
	p, _ := m["params"].(map[string]any)
	u, _ := p["update"].(map[string]any)
	return u
}
