package acp

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// acpHost turns a session's item changes into ACP session/update
// notifications and _spbridge/item notifications, and its permission
// requests into session/request_permission requests to the client. It is
// one turn's: it also keeps the session's copy of the items as they stand
// (for a save during the turn), and a panic in it ends the session once
// the turn ends.
type acpHost struct {
	ss   *acpSession
	turn bool // false for what happens between turns (betweenHost)

	// batched is set once the backend called Idle: the turn's messages
	// are then buffered until the next Idle (see send).
	batched atomic.Bool

	mu       sync.Mutex
	sent     map[string]int          // item id → bytes of its text sent as chunks
	out      map[string]*wire.Output // tool item id → its command output as shown
	edited   bool                    // _spbridge/edited went out for this turn
	failure  string                  // the text of the turn's last failure item
	panicked string                  // a panic in a callback, "" when none

	compacts wire.Compactions // the CLI's compactions the client was told of
}

// recovered is called by the callbacks with what they recovered from a
// panic: it is logged, kept for the turn's end, and the turn is cancelled.
func (h *acpHost) recovered(where string, r any) {
	why := h.ss.srv.recovered(where+" of session "+h.ss.id, r)
	h.mu.Lock()
	if h.panicked == "" {
		h.panicked = why
	}
	h.mu.Unlock()
	if h.turn {
		h.ss.conv.Cancel()
	}
}

// panic returns the text of a panic in a callback, or "".
func (h *acpHost) panic() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.panicked
}

// failureText is the text of the turn's last failure item.
func (h *acpHost) failureText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failure
}

// Change is called on the turn's goroutine right after the change was
// applied to the conversation.
func (h *acpHost) Change(c itemmap.Change) {
	defer func() {
		if r := recover(); r != nil {
			h.recovered("an item change", r)
		}
	}()
	ss := h.ss
	it := c.Item
	if c.OutputDelta != "" && c.Tool != nil {
		// Only a running command's output grew: the item is as it was.
		h.output(it, c.Tool, c.OutputDelta)
		return
	}
	if ss.srv.items.Load() {
		h.itemChange(c)
	}
	if c.Op == itemmap.OpRemove {
		return
	}
	switch it.Type() {
	case archive.TypeUser:
		// The client sent it: ACP does not echo the prompt.
		return
	case archive.TypeFailure:
		h.mu.Lock()
		h.failure = it.String("text")
		h.mu.Unlock()
	default:
		// The CLI is at work: the conversation changed. (A failure alone
		// may be a turn that never started, which changes nothing.)
		h.mu.Lock()
		first := !h.edited
		h.edited = true
		h.mu.Unlock()
		if first && ss.conv.Keep() {
			ss.send.edited()
		}
	}
	switch it.Type() {
	case archive.TypeAssistant, archive.TypeThinking:
		kind := wire.AgentMessageChunk
		if it.Type() == archive.TypeThinking {
			kind = wire.AgentThoughtChunk
		}
		if chunk := h.newText(it, c.Delta); chunk != "" {
			h.chunk(kind, it.ID(), chunk)
		}
	case archive.TypeDirections:
		switch {
		case c.Tool != nil:
			// The plan the agent proposes before it leaves planning.
			h.sendTool(wire.ToolOf("tool_call", it, c.Tool, ss.set.cwd))
		case c.Plan == nil:
			// A todo list without its plan: one entry a line.
			h.plan(wire.PlanEntries(it))
		}
	case archive.TypeTool, archive.TypeWebSearch:
		if c.Op == itemmap.OpAdd {
			h.tool("tool_call", it, c.Tool)
		} else {
			h.tool("tool_call_update", it, c.Tool)
		}
	case archive.TypeFailure, archive.TypeQuestions:
		if c.Op == itemmap.OpAdd {
			h.chunk(wire.AgentMessageChunk, it.ID(), wire.PlainText(it))
		}
	case archive.TypeNotice:
		switch {
		case c.Op != itemmap.OpAdd:
		case it.String(archive.ContextReset) != "":
			// A reset of the CLI's context is a boundary in the panel,
			// for every client, as its replay shows it.
			h.chunk(wire.AgentMessageChunk, it.ID(), it.String("text"))
		case !h.compactionNotice(c.Compaction):
			h.notice(it.String("text"))
		}
	}
	if c.Plan != nil {
		h.plan(c.Plan)
	}
}

// outputOf is the output state of tool item id.
func (h *acpHost) outputOf(id string) *wire.Output {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.out == nil {
		h.out = make(map[string]*wire.Output)
	}
	st := h.out[id]
	if st == nil {
		st = &wire.Output{}
		h.out[id] = st
	}
	return st
}

// output shows a running command's output grown by delta: to a client
// with terminals, the new bytes alone; to others, the output so far as
// the call's text content, until it passes the cap (wire.Output.Grown).
func (h *acpHost) output(it archive.Item, v *itemmap.ToolView, delta string) {
	ss := h.ss
	data, u := h.outputOf(it.ID()).Grown(it, v, delta, ss.set.cwd, ss.srv.terminal.Load())
	if data != "" {
		h.terminalOutput(it.ID(), data)
	}
	if u != nil {
		h.sendTool(*u)
	}
}

// tool sends a tool_call or tool_call_update for a tool or webSearch item
// with its view. A command's call, to a client with terminals, opens one,
// and when it ends, writes what of its output the terminal lacks, then
// closes it (wire.Output.Terminal).
func (h *acpHost) tool(update string, it archive.Item, v *itemmap.ToolView) {
	ss := h.ss
	if v == nil || !v.Terminal || !ss.srv.terminal.Load() {
		h.sendTool(wire.ToolOf(update, it, v, ss.set.cwd))
		return
	}
	open, data, end := h.outputOf(it.ID()).Terminal(update, it, v, ss.set.cwd)
	if open != nil {
		h.sendTool(*open)
	}
	if data != "" {
		h.terminalOutput(it.ID(), data)
	}
	if end != nil {
		h.sendTool(*end)
	}
}

// itemChange sends one change as _spbridge/item. Text that grew by
// streaming travels as what was appended ({op: "append", id, field: "text",
// text}); every other change carries the whole item (add, update, remove):
// an update of a running item is rare (a tool's input arrived, a text was
// replaced rather than grown), and the one that ends it (a tool's status)
// is the item as kept. So item traffic stays linear in the reply.
func (h *acpHost) itemChange(c itemmap.Change) {
	sid := h.ss.id
	if c.Op == itemmap.OpUpdate && c.Delta != "" {
		id, delta := c.Item.ID(), c.Delta
		h.send(func(b []byte) []byte { return wire.AppendItemText(b, sid, id, delta) })
		return
	}
	op, item := c.Op.String(), c.Item.Map()
	h.send(func(b []byte) []byte { return wire.AppendItem(b, sid, op, item, nil) })
}

// send writes one of the turn's messages: at once until the backend first
// says it has handed over every line the CLI wrote so far (Idle), then
// into the writer's buffer, which the next Idle (or any message sent at
// once, such as the prompt's answer) flushes. So a burst of lines goes out
// in few writes, and nothing waits once the CLI does.
func (h *acpHost) send(enc func([]byte) []byte) {
	if h.batched.Load() {
		h.ss.srv.w.Buffer(enc)
		return
	}
	h.ss.srv.w.Write(enc)
}

// Idle is called by the backend when it has handled every line the CLI
// wrote so far: what the turn sent since is flushed.
func (h *acpHost) Idle() {
	h.batched.Store(true)
	h.ss.srv.w.Flush()
}

// chunk sends a text chunk of kind of the message messageID (its item's
// id).
func (h *acpHost) chunk(kind, messageID, text string) {
	sid := h.ss.id
	h.send(func(b []byte) []byte { return wire.AppendChunk(b, sid, kind, messageID, text) })
}

// sendTool sends a tool_call or tool_call_update.
func (h *acpHost) sendTool(u wire.Tool) {
	sid := h.ss.id
	h.send(func(b []byte) []byte { return wire.AppendTool(b, sid, u) })
}

// plan sends a plan with these entries.
func (h *acpHost) plan(entries []itemmap.PlanEntry) {
	sid := h.ss.id
	h.send(func(b []byte) []byte { return wire.AppendPlan(b, sid, entries) })
}

// terminalOutput writes data to the client's terminal of tool call id.
func (h *acpHost) terminalOutput(id, data string) {
	sid := h.ss.id
	h.send(func(b []byte) []byte { return wire.AppendTerminalOutput(b, sid, id, data) })
}

// newText returns the part of a streaming item's text not sent yet; delta
// is what the change appended ("" when it did not say).
func (h *acpHost) newText(it archive.Item, delta string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sent == nil {
		h.sent = make(map[string]int)
	}
	text := it.String("text")
	done := h.sent[it.ID()]
	if done > len(text) {
		return "" // the text was replaced, not grown: _spbridge/item has it
	}
	h.sent[it.ID()] = len(text)
	if delta != "" && done+len(delta) == len(text) {
		return delta // the same bytes, without slicing the text so far
	}
	return text[done:]
}

// Approval card states, as approvalCards keeps them by the toolApproval
// item's id: {"state": …}.
const (
	CardAllowed        = "allowed"        // allowed once
	CardAllowedAlways  = "allowedAlways"  // allowed, and what its grant covers from now on in this session
	CardRejected       = "rejected"       // rejected once
	CardRejectedAlways = "rejectedAlways" // rejected, and what its grant covers from now on in this session
	CardCancelled      = "cancelled"      // the editor cancelled the request
)

// Ask asks the client about a permission request no "always" answer of
// the session covers (the session decides by its grants first:
// session.Grants.Decide), as session/request_permission, and returns what
// it said: allowed once or always (what the question's grant covers from
// now on in this session: a command by its prefix or as exactly itself, in
// its folder, outside the sandbox only when granted there; an edit by its
// tool and file, or every edit inside the session's folders; any other
// tool by its name), rejected once or always. A request with nothing to
// scope a grant by offers no "always". Each answer is recorded as the
// approval's card.
func (h *acpHost) Ask(ctx context.Context, q session.Question) (ans session.Answer) {
	defer func() {
		if r := recover(); r != nil {
			h.recovered("a permission request", r)
			ans = session.Answer{Message: "spbridge could not ask the editor."}
		}
	}()
	ss := h.ss
	a := q.Approval
	if qs := questionsOf(a); qs != nil {
		if ss.srv.forms.Load() {
			return h.askForm(ctx, a, qs)
		}
		return h.ask(ctx, a, qs)
	}
	id := callID(a)
	what := q.Always.Describe(ss.set.cwd) // a command with its folder
	params := map[string]any{
		"sessionId": ss.id,
		"toolCall":  wire.PermissionToolCall(id, a, ss.set.cwd),
		"options":   wire.PermissionOptions(what, q.CanAlways, q.CanEdits),
	}
	m, err := ss.srv.w.Call(ctx, "session/request_permission", params)
	if err != nil {
		return session.Answer{Message: "The request was not answered: " + err.Error()}
	}
	optionID, ok := selected(m)
	if !ok {
		h.card(a.ItemID, CardCancelled)
		return session.Answer{Message: "The user cancelled the request."}
	}
	switch {
	case optionID == "allow_once":
		h.card(a.ItemID, CardAllowed)
		return session.Answer{Allow: true}
	case optionID == "allow_always" && q.CanAlways:
		h.card(a.ItemID, CardAllowedAlways)
		return session.Answer{Allow: true, Always: true}
	case optionID == "allow_all_edits" && q.CanEdits:
		h.card(a.ItemID, CardAllowedAlways)
		return session.Answer{Allow: true, Edits: true}
	case optionID == "reject_always" && q.CanAlways:
		h.card(a.ItemID, CardRejectedAlways)
		return session.Answer{Always: true, Message: session.RejectedForSession}
	}
	h.card(a.ItemID, CardRejected)
	return session.Answer{Message: "The user rejected this from the editor."}
}

// Granted records the card of a request an "always" answer of the
// session answered without asking.
func (h *acpHost) Granted(a itemmap.Approval, allowed bool) {
	defer func() {
		if r := recover(); r != nil {
			h.recovered("a permission request", r)
		}
	}()
	if allowed {
		h.card(a.ItemID, CardAllowed)
	} else {
		h.card(a.ItemID, CardRejected)
	}
}

// selected is the option a session/request_permission answer selected;
// false when the request was cancelled or the answer is not understood.
func selected(m *jsonrpc.Message) (string, bool) {
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if json.Unmarshal(m.Result, &r) != nil || r.Outcome.Outcome != "selected" {
		return "", false
	}
	return r.Outcome.OptionID, true
}

// card records how a toolApproval was answered in the conversation's
// approvalCards, tells the client (the item again, with its card) and marks
// the conversation edited.
func (h *acpHost) card(itemID, state string) {
	if itemID == "" {
		return
	}
	ss := h.ss
	card := map[string]any{"state": state}
	ss.conv.AnswerCard(itemID, card)
	itemMap := ss.conv.ItemMap(itemID)
	keep := ss.conv.Keep()
	if itemMap != nil && ss.srv.items.Load() {
		ss.send.item("update", itemMap, card)
	}
	if keep {
		ss.send.edited()
	}
}
