package claude

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// The streams in testdata/steer are the real claude 2.1.328's (with
// --replay-user-messages, against the fake API) when a user message
// ("STEER please") is written to its input while the model's first answer
// streams:
//   - after_tool: the answer calls a tool; claude takes the message with
//     the tool's result, in the same turn: its echo comes after the
//     result, the next request carries it, and there is one result.
//   - after_result: the answer is text only; claude ends the turn (a
//     result), then runs the message as a turn of its own (system init,
//     its echo, the answer, a second result).

// historyText is a history as "role:text" lines (a tool result as
// "tool:result").
func historyText(h []archive.Message) []string {
	var out []string
	for _, m := range h {
		for _, b := range m.Content {
			switch b.Type() {
			case archive.BlockText:
				out = append(out, m.Role+":"+b.String("text"))
			case archive.BlockToolResult:
				out = append(out, m.Role+":result")
			case archive.BlockToolCall:
				out = append(out, m.Role+":call")
			}
		}
	}
	return out
}

// TestSteerRecordedStreams feeds the recorded streams through a turn's
// protocol with the message pending: the turn ends at the last result
// only, the message is a user item and a user message where claude took
// it, and the turn's own message's echo is not taken for it.
func TestSteerRecordedStreams(t *testing.T) {
	for _, c := range []struct {
		file        string
		items, hist []string
	}{
		{"after_tool", []string{"assistant: running", "tool: succeeded", "user: STEER please", "assistant: after tool"},
			[]string{"assistant:running", "assistant:call", "tool:result", "user:STEER please", "assistant:after tool"}},
		{"after_result", []string{"assistant: first answer is long", "user: STEER please", "assistant: second"},
			[]string{"assistant:first answer is long", "user:STEER please", "assistant:second"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/steer/" + c.file + ".stdout.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			b := New(Options{NewID: itemmap.SequentialIDs()})
			b.mapper = itemmap.NewClaude(b.Opts.NewID)
			b.mcpSaid = map[string]bool{}
			b.steer.pending = []backend.Message{{Text: "STEER please"}}
			conn := &turnConn{b: b, ownText: "first message"}
			rec := &recorder{}
			lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
			var end *itemmap.TurnEnd
			for i, l := range lines {
				_, e := conn.Line(l, rec)
				if e != nil && i != len(lines)-1 {
					t.Fatalf("the turn ended at line %d of %d, with the message pending", i+1, len(lines))
				}
				end = e
			}
			if end == nil {
				t.Fatal("no end at the last result")
			}
			if got := rec.texts(); !slices.Equal(got, c.items) {
				t.Errorf("items %q, want %q", got, c.items)
			}
			if got := historyText(end.History); !slices.Equal(got, c.hist) {
				t.Errorf("history %q, want %q", got, c.hist)
			}
			if len(b.steer.pending) != 0 {
				t.Errorf("still pending: %v", b.steer.pending)
			}
		})
	}
}

// TestSteerRecordedStreamNothingPending: with no message steered, the
// recorded stream's first result ends the turn, as before steering.
func TestSteerRecordedStreamNothingPending(t *testing.T) {
	data, err := os.ReadFile("testdata/steer/after_result.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b := New(Options{NewID: itemmap.SequentialIDs()})
	b.mapper = itemmap.NewClaude(b.Opts.NewID)
	b.mcpSaid = map[string]bool{}
	conn := &turnConn{b: b, ownText: "first message"}
	rec := &recorder{}
	for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if _, e := conn.Line(l, rec); e != nil {
			if !bytes.Contains(l, []byte(`"type":"result"`)) || i > 20 {
				t.Errorf("the turn ended at line %d", i+1)
			}
			break
		}
	}
	if got := rec.texts(); !slices.Equal(got, []string{"assistant: first answer is long"}) {
		t.Errorf("items %q", got)
	}
}

// steerOnce steers the turn with text at the first item the host hears,
// then lets the held reply go on.
func steerOnce(t *testing.T, b *Backend, rec *recorder, text string, hold chan struct{}) {
	var once sync.Once
	rec.onItem = func(archive.Item) {
		once.Do(func() {
			if err := b.Steer(backend.Message{Text: text}); err != nil {
				t.Errorf("Steer = %v", err)
			}
			close(hold)
		})
	}
}

// TestE2ESteer steers the real claude while the model's first answer
// streams: the message reaches the model within the same turn (the fake
// API's next request carries it), the turn ends once, and its items and
// history hold the message where claude took it; a steer after the turn
// is refused with ErrNoTurn.
func TestE2ESteer(t *testing.T) {
	for _, c := range []struct {
		name  string
		first fakeapi.Reply
		items []string
	}{
		{"after a tool", fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "running"}, tool("toolu_steer_1", "Bash", map[string]any{"command": "echo hi", "description": "say hi"})}},
			[]string{"assistant: running", "tool: succeeded", "user: use blue", "assistant: done"}},
		{"after the answer", fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "first answer"}}},
			[]string{"assistant: first answer", "user: use blue", "assistant: done"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hold := make(chan struct{})
			c.first.Hold = hold
			b, s, _ := realClaude(t, Options{}, c.first, reply("done"))
			if err := b.SetMode(context.Background(), ModeBypass); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{allow: true}
			steerOnce(t, b, rec, "use blue", hold)
			end := b.Turn(context.Background(), backend.Message{Text: "paint it"}, rec)
			if end.Status != itemmap.TurnCompleted {
				t.Fatalf("turn = %v, items %q", end.Status, rec.texts())
			}
			if got := rec.texts(); !slices.Equal(got, c.items) {
				t.Errorf("items %q, want %q", got, c.items)
			}
			h := historyText(end.History)
			if i := slices.Index(h, "user:use blue"); i < 0 || i != len(h)-2 || h[len(h)-1] != "assistant:done" {
				t.Errorf("history %q: the steered message is not right before the last answer", h)
			}
			var bodies []string
			for _, r := range s.Requests() {
				if r.Path == "/v1/messages" && strings.Contains(string(r.Body), "paint it") {
					bodies = append(bodies, messagesOf(r.Body))
				}
			}
			if len(bodies) != 2 || strings.Contains(bodies[0], "use blue") || !strings.Contains(bodies[1], "use blue") {
				t.Errorf("the model's requests of the turn (%d): the second must carry the steered message first: %.3000q", len(bodies), bodies)
			}
			if err := b.Steer(backend.Message{Text: "too late"}); err != backend.ErrNoTurn {
				t.Errorf("Steer after the turn = %v, want ErrNoTurn", err)
			}
		})
	}
}

// betweenRec hears what claude does between turns, and says when a turn
// of claude's own ended.
type betweenRec struct {
	recorder
	ends chan *itemmap.TurnEnd
}

func (b *betweenRec) End(end *itemmap.TurnEnd) { b.ends <- end }

// TestE2ESteerInterrupted: a message steered into a turn that is then
// interrupted before claude took it is not lost: claude runs it right
// after, and the message shows, as a user item and in the history, in
// what claude does between turns.
func TestE2ESteerInterrupted(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	b, _, _ := realClaude(t, Options{}, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "first answer"}}, Hold: hold}, reply("steered answer"))
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	rec.onItem = func(archive.Item) {
		once.Do(func() {
			if err := b.Steer(backend.Message{Text: "use blue"}); err != nil {
				t.Errorf("Steer = %v", err)
			}
			cancel()
		})
	}
	bt := &betweenRec{ends: make(chan *itemmap.TurnEnd, 1)}
	b.Watch(bt)
	if end := b.Turn(ctx, backend.Message{Text: "paint it"}, rec); end.Status != itemmap.TurnInterrupted {
		t.Fatalf("turn = %v", end.Status)
	}
	end := <-bt.ends
	if got, want := bt.texts(), []string{"user: use blue", "assistant: steered answer"}; !slices.Equal(got, want) {
		t.Errorf("between turns: %q, want %q", got, want)
	}
	if h := historyText(end.History); !slices.Equal(h, []string{"user:use blue", "assistant:steered answer"}) {
		t.Errorf("history of claude's own turn %q", h)
	}
}
