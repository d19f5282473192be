package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Steering on Claude Code. A stream-json user message written to claude's
// input while a turn runs is taken into it: claude 2.1.328 hands it to the
// model with the next request of the turn (after the running tool's
// result, as "The user sent a new message while you were working"), or,
// when the model's answer ends the turn first, runs it right after that
// turn's result as a turn of its own
// (testdata/claude/steer_midturn.stdout.jsonl shows both). claude is started
// with --replay-user-messages, so it echoes each user message as it takes
// it (`"isReplay": true`): the echo is where the steered message goes in
// the conversation, and a turn with a steered message not echoed yet does
// not end at claude's result but goes on through the turn claude runs for
// the message, the two ends folded into one. So a message Steer accepted
// is taken within the spbridge turn that accepted it, unless that turn is
// interrupted first: claude then runs the message as a turn of its own
// right after (with "[Request interrupted by user]" before it), which
// spbridge shows as what claude does between turns, the message's user item
// where its echo comes.

// steering is the running turn's: the process the turn's messages go to
// (nil while no turn may take one) and the steered messages claude has not
// echoed yet, in the order they were written.
type steering struct {
	mu      sync.Mutex
	p       *cliproc.Proc
	pending []backend.Message
	// late are messages a turn that ended (interrupted) left unechoed:
	// claude takes them after it, between turns or before the next
	// turn's message.
	late []backend.Message
}

// Steer writes msg into the running turn (backend.Steerer): the turn does
// not end before claude took it. ErrNoTurn when no turn runs, or the
// running one already ended.
func (b *Backend) Steer(msg backend.Message) error {
	data, err := json.Marshal(userMessage(backend.Message{Text: msg.Text, Images: msg.Images}))
	if err != nil {
		return fmt.Errorf("the message could not be encoded: %w", err)
	}
	st := &b.steer
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.p == nil {
		return backend.ErrNoTurn
	}
	st.pending = append(st.pending, msg)
	// Send only queues the line (written in order by the process's
	// writer): no I/O under the lock, and the order of pending is the
	// order of the writes.
	st.p.Send(append(data, '\n'))
	return nil
}

// Untaken: claude keeps every message it was given, also after an
// interrupt (it runs it next): none is handed back.
func (b *Backend) Untaken() []backend.Message { return nil }

// openSteering lets the turn on p take steered messages.
func (b *Backend) openSteering(p *cliproc.Proc) {
	b.steer.mu.Lock()
	b.steer.p, b.steer.pending = p, nil
	b.steer.mu.Unlock()
}

// closeSteering ends the taking of steered messages; it returns how many
// were written that claude never echoed in the turn.
func (b *Backend) closeSteering() int {
	b.steer.mu.Lock()
	defer b.steer.mu.Unlock()
	n := len(b.steer.pending)
	b.steer.late = append(b.steer.late, b.steer.pending...)
	b.steer.p, b.steer.pending = nil, nil
	return n
}

// endable reports whether the turn may end at claude's result: no steered
// message waits for claude. When it may, the turn takes no more.
func (b *Backend) endable() bool {
	b.steer.mu.Lock()
	defer b.steer.mu.Unlock()
	if len(b.steer.pending) > 0 {
		return false
	}
	b.steer.p = nil
	return true
}

// echoed takes the steered message whose echo data is, if it is one: a
// replayed user message whose text is a pending message's. The turn's own
// message is echoed too; own says whether it was already, and is set by
// its echo.
func (b *Backend) echoed(data []byte, own *bool, ownText string) (backend.Message, bool) {
	if !bytes.Contains(data, []byte(`"isReplay"`)) {
		return backend.Message{}, false
	}
	var ev struct {
		Type     string `json:"type"`
		IsReplay bool   `json:"isReplay"`
		Message  struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Type != "user" || !ev.IsReplay {
		return backend.Message{}, false
	}
	text := echoText(ev.Message.Content)
	if !*own && text == ownText {
		*own = true
		return backend.Message{}, false
	}
	st := &b.steer
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, list := range []*[]backend.Message{&st.pending, &st.late} {
		for i, m := range *list {
			if m.Text == text {
				*list = append((*list)[:i:i], (*list)[i+1:]...)
				return m, true
			}
		}
	}
	return backend.Message{}, false
}

// echoText is the text of an echoed user message's content: a string, or
// its first text block.
func echoText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(content, &blocks)
	for _, bl := range blocks {
		if bl.Type == "text" {
			return bl.Text
		}
	}
	return ""
}

// steered reports msg, which claude took, where it took it: a user item
// for the host, and a user message in the turn's history.
func (b *Backend) steered(msg backend.Message, h backend.Host) {
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: backend.SteeredItem(b.Opts.NewID, msg)})
	b.mapper.UserMessage(backend.SteeredMessage(msg))
}
