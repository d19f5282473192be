package codex

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Steering on Codex. The app-server takes a message into its running turn
// through turn/steer ({threadId, expectedTurnId, input}): codex 0.169.0
// answers {turnId} at once, drops the model's answer that is streaming (its
// item stays as far as it came; the model never sees it) and asks the
// model again, in the same turn, with the message, a userMessage item
// (item/started, item/completed) where it took it
// (testdata/codex/app-server/steer.jsonl); with no turn
// running it answers "no active turn to steer", and a review turn "cannot
// steer a review turn" (codexErrorInfo.activeTurnNotSteerable). codex exec
// reads its prompt once, and spbridge does not steer a review or a
// compaction: there Steer fails with backend.ErrCannotSteer.

// steering is the running app-server turn's: whether it takes steered
// messages, its process, thread, id and kind, the turn/steer requests not
// answered yet (by id, as its JSON says it), and the messages codex
// accepted whose userMessage item has not come yet, in order.
type steering struct {
	mu      sync.Mutex
	open    bool
	proc    *cliproc.Proc
	thread  string
	turnID  string
	kind    string // "" for a turn of the user's; "a review", "a compaction"
	nextID  int
	calls   map[string]*steerCall
	pending []backend.Message
	// untaken are the messages codex accepted that the turn ended without
	// taking (an interrupt drops them), until Untaken hands them back.
	untaken []backend.Message
}

// steerCall is a turn/steer request waiting for codex's answer.
type steerCall struct {
	msg  backend.Message
	done chan error
	seen bool // its item came before codex's answer was read
}

// Steer hands msg to the running turn through turn/steer and returns once
// codex answered (backend.Steerer). codex exec, a review and a compaction
// take none (ErrCannotSteer); with no turn running, or one codex says is
// not running, it fails with ErrNoTurn.
func (b *Backend) Steer(msg backend.Message) error {
	if b.transport != TransportAppServer {
		return fmt.Errorf("%w: codex exec reads its message once; use the app-server transport to steer", backend.ErrCannotSteer)
	}
	st := &b.steer
	st.mu.Lock()
	switch {
	case !st.open || st.turnID == "":
		st.mu.Unlock()
		return backend.ErrNoTurn
	case st.kind != "":
		kind := st.kind
		st.mu.Unlock()
		return fmt.Errorf("%w: codex takes no message into %s", backend.ErrCannotSteer, kind)
	}
	st.nextID++
	id := "spbridge-steer-" + strconv.Itoa(st.nextID)
	call := &steerCall{msg: msg, done: make(chan error, 1)}
	if st.calls == nil {
		st.calls = make(map[string]*steerCall)
	}
	st.calls[strconv.Quote(id)] = call
	// Post only queues the line: no I/O under the lock.
	backend.Post(st.proc, map[string]any{"jsonrpc": "2.0", "id": id, "method": "turn/steer", "params": map[string]any{
		"threadId": st.thread, "expectedTurnId": st.turnID, "input": input(backend.Message{Text: msg.Text, Images: msg.Images})}})
	st.mu.Unlock()
	return <-call.done
}

// openSteering lets the turn about to run on p take steered messages;
// kind is "" for a turn of the user's.
func (b *Backend) openSteering(p *cliproc.Proc, thread, kind string) {
	st := &b.steer
	st.mu.Lock()
	st.open, st.proc, st.thread, st.kind, st.turnID, st.pending = true, p, thread, kind, "", nil
	st.mu.Unlock()
}

// closeSteering ends the turn's taking of steered messages: a request
// still unanswered fails with ErrNoTurn.
func (b *Backend) closeSteering() {
	st := &b.steer
	st.mu.Lock()
	calls := st.calls
	st.untaken = append(st.untaken, st.pending...)
	st.open, st.proc, st.calls, st.pending, st.turnID = false, nil, nil, nil, ""
	st.mu.Unlock()
	for _, c := range calls {
		c.done <- backend.ErrNoTurn
	}
}

// Untaken hands back the messages codex accepted that the last turn never
// took: codex 0.169.0 drops a steered message an interrupt comes before.
func (b *Backend) Untaken() []backend.Message {
	b.steer.mu.Lock()
	defer b.steer.mu.Unlock()
	u := b.steer.untaken
	b.steer.untaken = nil
	return u
}

// setTurnID records the running turn's id, for turn/steer's
// expectedTurnId.
func (b *Backend) setTurnID(id string) {
	b.app.turnID = id
	b.ranTurn(id)
	b.steer.mu.Lock()
	b.steer.turnID = id
	b.steer.mu.Unlock()
}

// steerAnswer takes codex's answer to a turn/steer request, when data is
// one: the request's Steer returns (nil when codex took the message, which
// is then pending until its item comes).
func (b *Backend) steerAnswer(data []byte) bool {
	if !bytes.Contains(data, []byte(`"spbridge-steer-`)) {
		return false
	}
	msg := gjson.ParseBytes(data)
	if msg.Get("method").Exists() {
		return false
	}
	st := &b.steer
	st.mu.Lock()
	call := st.calls[msg.Get("id").Raw]
	delete(st.calls, msg.Get("id").Raw)
	var err error
	if e := msg.Get("error"); e.Exists() {
		text := e.Get("message").String()
		if e.Get("data.codexErrorInfo.activeTurnNotSteerable").Exists() {
			err = fmt.Errorf("%w: codex: %s", backend.ErrCannotSteer, text)
		} else {
			err = fmt.Errorf("%w: codex: %s", backend.ErrNoTurn, text)
		}
	} else if call != nil && !call.seen {
		st.pending = append(st.pending, call.msg)
	}
	st.mu.Unlock()
	if call == nil {
		return false
	}
	call.done <- err
	return true
}

// steering reports whether a turn/steer request waits for codex's answer:
// the turn does not end before it came.
func (b *Backend) steering() bool {
	b.steer.mu.Lock()
	defer b.steer.mu.Unlock()
	return len(b.steer.calls) > 0
}

// steeredItem reports a steered message codex took, when data is its
// userMessage item's completion: a user item for the host, and a user
// message in the turn's history.
func (b *Backend) steeredItem(data []byte, m *itemmap.CodexApp, h backend.Host) {
	if !bytes.Contains(data, []byte(`"userMessage"`)) {
		return
	}
	v := gjson.ParseBytes(data)
	if v.Get("method").String() != "item/completed" || v.Get("params.item.type").String() != "userMessage" {
		return
	}
	text := ""
	for _, c := range v.Get("params.item.content").Array() {
		if c.Get("type").String() == "text" {
			text = c.Get("text").String()
			break
		}
	}
	st := &b.steer
	st.mu.Lock()
	var msg backend.Message
	found := false
	for i, p := range st.pending {
		if p.Text == text {
			msg, found = p, true
			st.pending = append(st.pending[:i:i], st.pending[i+1:]...)
			break
		}
	}
	if !found {
		// The item may come before codex's answer is read.
		for _, c := range st.calls {
			if !c.seen && c.msg.Text == text {
				msg, found, c.seen = c.msg, true, true
				break
			}
		}
	}
	st.mu.Unlock()
	if !found {
		return
	}
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: backend.SteeredItem(b.Opts.NewID, msg)})
	m.UserMessage(backend.SteeredMessage(msg))
}
