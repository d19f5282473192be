package itemmap

import (
	"encoding/json"
	"fmt"
	"slices"
	"spbridge/internal/jsonline"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
)

// Claude maps the stream-json output of one Claude Code process (`claude -p
// --output-format stream-json --verbose --include-partial-messages`) onto
// items. Feed it every stdout line in order with Line; when the stream ends
// without the turn's result (the process exited, crashed or was stopped),
// call Finish. One Claude serves every turn of one process. It is not safe
// for concurrent use.
type Claude struct {
	newID IDFunc

	session   string
	model     string
	cwd       string // the CLI's working folder, to shorten paths in titles
	lastTotal string // total_cost_usd of the previous result: the CLI reports it per process
	turn      *claudeTurn
	agents    map[string]string // Task/Agent call id → its item id, kept across turns for the subagent's lines
	bgCalls   map[string]bgCall // a background subagent's calls waiting for their results
	ev        claudeEvent       // the line being mapped, reused
	cur       ClaudeLine        // the line being mapped, read once
	line      *ClaudeLine       // the line being mapped: cur or one read ahead
	nodes     []jsonline.Node   // cur's values
	stack     []int32           // for reading cur
	scratch   []byte            // an unescaped delta
	slab      []Change          // changes not yet handed out, one to a Result (update)
	noFast    bool              // every line the general way (tests)

	// folderMoved: the session may have moved to another folder (a
	// claudeFolderTools call was seen), so a command's folder is not
	// known from here on.
	folderMoved bool
}

// NewClaude returns a mapper that names new items with newID (nil: random
// UUIDs).
func NewClaude(newID IDFunc) *Claude {
	if newID == nil {
		newID = archive.NewID
	}
	return &Claude{newID: newID}
}

// blockKey names one content block of one API message.
type blockKey struct {
	msg   string
	index int
}

// claudeBlock is a content block of the assistant's reply as it streams.
type claudeBlock struct {
	key      blockKey
	kind     string // text, thinking, tool_use
	item     archive.Item
	hasItem  bool
	text     strings.Builder // text or thinking so far
	input    strings.Builder // a tool's input JSON so far, as the model produced it
	toolID   string
	complete bool // the CLI's complete assistant line for the block arrived
	stopped  bool // content_block_stop arrived
}

type claudeTool struct {
	id      string
	name    string
	input   string // the exact JSON of the input
	item    archive.Item
	special string // the item type when the tool is shown as another item
	done    bool
	view    *ToolView // its presentation as it stands; replaced, never changed
	child   bool      // a subagent's call: not in this conversation's history
}

// bgCall is a call of a subagent that runs in the background: its lines
// come after its Task/Agent call returned, and often after the turn's
// result, so it is shown once its result is in, in the turn then running.
type bgCall struct {
	name, input, parent string // parent: the Task/Agent call's item id
}

type claudeTurn struct {
	blocks    []*claudeBlock
	tools     map[string]*claudeTool
	order     []string // tool ids in order
	history   []archive.Message
	msgIndex  map[string]int // API message id → index in history
	failure   *archive.Item
	aborted   bool // the CLI reported the turn cut off by an interrupt
	denyIDs   map[string]bool
	allowIDs  map[string]bool   // tool_use ids the host allowed
	rejected  []*claudeTool     // calls refused by the rejection text alone
	approvals map[string]string // request id → tool_use id
	lastRound archive.Usage
	rounds    archive.Usage // the model requests before lastRound's since the last result folded in
	counted   bool          // lastRound's request is in a result folded in
	lastMsg   string
	bgTurns   int           // turns claude ran on its own meanwhile (background reports)
	bgUsage   archive.Usage // what they used
	bgCost    json.Number
}

func (m *Claude) ensureTurn() *claudeTurn {
	if m.turn == nil {
		m.turn = &claudeTurn{
			tools:     make(map[string]*claudeTool),
			msgIndex:  make(map[string]int),
			denyIDs:   make(map[string]bool),
			allowIDs:  make(map[string]bool),
			approvals: make(map[string]string),
		}
	}
	return m.turn
}

// UserMessage adds msg, a message the user sent into the running turn
// (steering), to the turn's history where the CLI took it.
func (m *Claude) UserMessage(msg archive.Message) {
	t := m.ensureTurn()
	t.history = append(t.history, msg)
}

// InTurn reports whether a turn has started and not ended.
func (m *Claude) InTurn() bool { return m.turn != nil }

// Answered tells the mapper how the host answered approval requestID, so
// that the tool's failed result reads as denied rather than failed.
func (m *Claude) Answered(requestID string, allowed bool) {
	if m.turn == nil {
		return
	}
	if id, ok := m.turn.approvals[requestID]; ok {
		if allowed {
			m.turn.allowIDs[id] = true
		} else {
			m.turn.denyIDs[id] = true
		}
	}
}

// Line maps one stdout line. A line that is not a JSON object, or an event
// the mapper does not know, gives a Result with Skipped set; a line nested
// deeper than MaxDepth, or one that starts as an object but is not valid
// JSON, also gives a notice that says so.
//
// The mapper only borrows line: what it returns or keeps has memory of its
// own, so the caller may reuse line's bytes once Line returns.
func (m *Claude) Line(line []byte) Result {
	m.nodes, m.stack = m.cur.read(line, !m.noFast, m.nodes[:0], m.stack)
	return m.mapLine(&m.cur)
}

// mapLine maps a line read with read.
func (m *Claude) mapLine(l *ClaudeLine) Result {
	m.line = l
	defer func() { m.line = nil }()
	var r Result
	if l.fast.kind != 0 {
		m.applyFast(&l.fast, &r)
		return r
	}
	if !l.valid {
		return badLine(m.newID, "Claude Code", l.line)
	}
	raw := l.doc.Root()
	if !raw.IsObject() {
		r.Skipped = true
		return r
	}
	ev := &m.ev
	ev.read(raw)
	if p := ev.Get("parent_tool_use_id"); p.Exists() && !p.IsNull() {
		m.subagent(ev, p.String(), &r)
		return r
	}
	switch ev.Get("type").View() {
	case "system":
		m.system(ev, &r)
	case "stream_event":
		m.streamEvent(ev, &r)
	case "assistant":
		m.assistant(ev, &r)
	case "user":
		m.user(ev, &r)
	case "control_request":
		m.controlRequest(ev, &r)
	case "control_response":
		if id := ev.Get("response.request_id").String(); id != "" {
			r.ControlResponses = append(r.ControlResponses, id)
		}
	case "result":
		m.result(ev, &r)
	case "conversation_reset":
		m.reset(ev, &r)
	default:
		r.Skipped = true
	}
	return r
}

// ClaudeResetText is the notice of a reset of Claude Code's context (its
// /clear): the session it goes on with knows nothing of what came before.
const ClaudeResetText = "Context cleared: Claude Code starts afresh from here. What is above stays here to read; Claude Code no longer knows it."

// reset maps Claude Code's conversation_reset (its /clear, trigger
// "clear"): a notice that marks the boundary (archive.ContextReset). The
// new session's id comes with the system/init after it.
func (m *Claude) reset(ev *claudeEvent, r *Result) {
	m.ensureTurn()
	trigger := ev.Get("trigger").String()
	if trigger == "" {
		trigger = "reset"
	}
	it := m.newItem(archive.TypeNotice)
	it.Set("text", ClaudeResetText)
	it.Set(archive.ContextReset, trigger)
	m.add(r, it)
}

func (m *Claude) add(r *Result, it archive.Item) {
	r.Changes = append(r.Changes, Change{Op: OpAdd, Item: it})
}

func (m *Claude) update(r *Result, it archive.Item, delta string) {
	if r.Changes == nil {
		// A streamed delta, most of the stream's lines: its one change
		// comes from a slab of them rather than an allocation of its own.
		if len(m.slab) == 0 {
			m.slab = make([]Change, 256)
		}
		r.Changes, m.slab = m.slab[:1:1], m.slab[1:]
		r.Changes[0] = Change{Op: OpUpdate, Item: it, Delta: delta}
		return
	}
	r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: it, Delta: delta})
}

func (m *Claude) system(ev *claudeEvent, r *Result) {
	switch ev.Get("subtype").View() {
	case "init":
		m.ensureTurn()
		m.session = ev.Get("session_id").String()
		if cwd := ev.Get("cwd").String(); cwd != "" {
			m.cwd = cwd
		}
		if model := ev.Get("model").String(); model != "" {
			m.model = model
		}
		r.Session = &Session{ID: m.session, Model: m.model}
	case "api_retry":
		m.ensureTurn()
		it := m.newItem(archive.TypeNotice)
		msg := "API error"
		if st := ev.Get("error_status"); st.Exists() && !st.IsNull() {
			msg += " " + st.Raw()
		}
		if e := ev.Get("error").String(); e != "" {
			msg += " (" + e + ")"
		}
		msg += fmt.Sprintf("; retrying, attempt %d of %d", ev.Get("attempt").Int(), ev.Get("max_retries").Int())
		it.Set("text", msg)
		m.add(r, it)
	case "task_notification":
		delete(m.agents, ev.Get("tool_use_id").String())
	case "permission_denied":
		t := m.ensureTurn()
		id := ev.Get("tool_use_id").String()
		t.denyIDs[id] = true
		if tool, ok := t.tools[id]; ok && !tool.done {
			m.finishTool(tool, archive.StatusDenied, "denied", ev.Get("message").String(), r)
		}
	default:
		// status, thinking_tokens, hooks and the like change nothing shown.
	}
}

func (m *Claude) newItem(typ string) archive.Item {
	return archive.ItemFromMap(map[string]any{"id": m.newID(), "type": typ})
}

func (m *Claude) findBlock(key blockKey) *claudeBlock {
	t := m.turn
	for i := len(t.blocks) - 1; i >= 0; i-- {
		if t.blocks[i].key == key {
			return t.blocks[i]
		}
	}
	return nil
}

func (m *Claude) streamEvent(ev *claudeEvent, r *Result) {
	t := m.ensureTurn()
	var e [len(eventFields)]jsonline.Value
	ev.Get("event").ReadFields(eventFields[:], e[:])
	msg := ev.Get("api_message_id").View() // kept only as a copy
	switch e[0].View() {
	case "message_start":
		if id := e[3].Get("id").String(); id != "" {
			msg = id
		} else {
			msg = strings.Clone(msg)
		}
		if t.lastMsg != "" && !t.counted {
			t.rounds = t.rounds.Add(t.lastRound)
		}
		t.counted = false
		t.lastMsg = msg
		t.lastRound = usageFromAPI(e[3].Get("usage"))
	case "content_block_start":
		cb := e[4]
		b := &claudeBlock{key: blockKey{strings.Clone(msg), int(e[1].Int())}, kind: cb.Get("type").String()}
		t.blocks = append(t.blocks, b)
		switch b.kind {
		case "text":
			b.text.WriteString(cb.Get("text").String())
		case "thinking":
			b.text.WriteString(cb.Get("thinking").String())
		case "tool_use":
			b.toolID = cb.Get("id").String()
			tool := m.startTool(b.toolID, cb.Get("name").String(), "", r)
			b.item, b.hasItem = tool.item, true
		}
		if b.text.Len() > 0 {
			m.blockItem(b, r, "")
		}
	case "content_block_delta":
		b := m.findBlock(blockKey{msg, int(e[1].Int())})
		if b == nil || b.complete {
			return
		}
		var d [len(deltaFields)]jsonline.Value
		e[2].ReadFields(deltaFields[:], d[:])
		switch d[0].View() {
		case "text_delta":
			m.blockDelta(b, r, d[1].View())
		case "thinking_delta":
			m.blockDelta(b, r, d[2].View())
		case "input_json_delta":
			b.input.WriteString(d[3].View())
		}
	case "content_block_stop":
		b := m.findBlock(blockKey{msg, int(e[1].Int())})
		if b == nil {
			return
		}
		b.stopped = true
		if b.kind == "tool_use" && !b.complete {
			if tool, ok := t.tools[b.toolID]; ok && b.input.Len() > 0 {
				m.setToolInput(tool, b.input.String(), r)
			}
		}
	case "message_delta":
		t.lastRound = mergeUsage(t.lastRound, usageFromAPI(e[5]))
	case "message_stop":
		if ab := ev.Get("abandoned_blocks"); ab.Exists() {
			m.abandon(ab.Get("api_message_id").String(), int(ab.Get("from_block_index").Int()), r)
		}
	}
}

// eventFields are the fields streamEvent reads of a stream event, and
// deltaFields those of a content_block_delta's delta, in the order
// ReadFields gives them.
var (
	eventFields = [...]string{"type", "index", "delta", "message", "content_block", "usage"}
	deltaFields = [...]string{"type", "text", "thinking", "partial_json"}
)

// blockDelta appends delta (the line's bytes) to a streaming block and
// updates its item; the change's Delta is the block's own copy.
func (m *Claude) blockDelta(b *claudeBlock, r *Result, delta string) {
	b.text.WriteString(delta)
	text := b.text.String()
	m.blockItem(b, r, text[len(text)-len(delta):])
}

// blockItem creates or updates the item of a streaming text or thinking
// block; delta is what was appended.
func (m *Claude) blockItem(b *claudeBlock, r *Result, delta string) {
	if b.kind != "text" && b.kind != "thinking" {
		return
	}
	if !b.hasItem {
		typ := archive.TypeAssistant
		if b.kind == "thinking" {
			typ = archive.TypeThinking
		}
		b.item, b.hasItem = m.newItem(typ), true
		b.item.Set("text", b.text.String())
		m.add(r, b.item)
		return
	}
	b.item.Set("text", b.text.String())
	m.update(r, b.item, delta)
}

// abandon drops the blocks of message msg from index from on: the CLI
// discarded them (an interrupt, or a stream that broke and was retried).
func (m *Claude) abandon(msg string, from int, r *Result) {
	t := m.turn
	kept := t.blocks[:0]
	for _, b := range t.blocks {
		if b.key.msg != msg || b.key.index < from {
			kept = append(kept, b)
			continue
		}
		if b.hasItem {
			r.Changes = append(r.Changes, Change{Op: OpRemove, Item: b.item})
		}
		if b.kind == "tool_use" {
			delete(t.tools, b.toolID)
		}
		if b.complete {
			m.dropHistoryBlock(msg, b)
		}
	}
	t.blocks = kept
}

// dropHistoryBlock removes an abandoned block's history entry.
func (m *Claude) dropHistoryBlock(msg string, b *claudeBlock) {
	t := m.turn
	i, ok := t.msgIndex[msg]
	if !ok {
		return
	}
	content := t.history[i].Content
	for j := len(content) - 1; j >= 0; j-- {
		c := content[j]
		match := (b.kind == "text" && c.Type() == archive.BlockText && c.String("text") == b.text.String()) ||
			(b.kind == "tool_use" && c.Type() == archive.BlockToolCall && c.String("id") == b.toolID)
		if match {
			t.history[i].Content = append(content[:j:j], content[j+1:]...)
			return
		}
	}
}

func (m *Claude) assistant(ev *claudeEvent, r *Result) {
	t := m.ensureTurn()
	msg := ev.Get("message")
	if ev.Get("aborted").Bool() {
		t.aborted = true
	}
	if msg.Get("model").String() == "<synthetic>" || ev.Get("is_api_error_message").Bool() {
		m.apiError(ev, msg, r)
		return
	}
	msgID := msg.Get("id").String()
	for _, c := range msg.Get("content").Array() {
		kind := c.Get("type").String()
		switch kind {
		case "text", "thinking":
			text := c.Get("text").String()
			if kind == "thinking" {
				text = c.Get("thinking").String()
			}
			b := m.openBlock(msgID, kind)
			if b == nil {
				b = &claudeBlock{key: blockKey{msgID, -1 - len(t.blocks)}, kind: kind}
				t.blocks = append(t.blocks, b)
			}
			b.complete = true
			if b.text.String() != text {
				b.text.Reset()
				b.text.WriteString(text)
				if text != "" || b.hasItem {
					m.blockItem(b, r, "")
				}
			} else if !b.hasItem && text != "" {
				m.blockItem(b, r, "")
			}
			if kind == "text" && text != "" {
				m.appendHistory(msgID, archive.NewTextBlock(text))
			}
		case "tool_use":
			id := c.Get("id").String()
			b := m.openBlock(msgID, kind)
			input := c.Get("input").Raw()
			if b != nil && b.input.Len() > 0 {
				input = b.input.String() // the exact bytes the model produced
			}
			if b == nil {
				b = &claudeBlock{key: blockKey{msgID, -1 - len(t.blocks)}, kind: kind, toolID: id}
				t.blocks = append(t.blocks, b)
			}
			b.complete = true
			tool, ok := t.tools[id]
			if !ok {
				tool = m.startTool(id, c.Get("name").String(), "", r)
				b.item, b.hasItem = tool.item, true
			}
			m.setToolInput(tool, input, r)
			if input == "" {
				input = "{}"
			}
			m.appendHistory(msgID, archive.NewToolCallBlock(id, tool.name, input))
		}
	}
}

// openBlock returns the streamed block of message msg and kind whose complete
// line has not arrived yet: the CLI writes a block's complete line before
// that block's content_block_stop.
func (m *Claude) openBlock(msg, kind string) *claudeBlock {
	for _, b := range m.turn.blocks {
		if b.key.msg == msg && b.kind == kind && !b.complete {
			return b
		}
	}
	return nil
}

func (m *Claude) appendHistory(msgID string, b archive.Block) {
	t := m.turn
	i, ok := t.msgIndex[msgID]
	if !ok || i != len(t.history)-1 {
		t.history = append(t.history, archive.Message{Role: "assistant"})
		i = len(t.history) - 1
		t.msgIndex[msgID] = i
	}
	t.history[i].Content = append(t.history[i].Content, b)
}

func (m *Claude) apiError(ev *claudeEvent, msg jsonline.Value, r *Result) {
	t := m.turn
	text := ""
	for _, c := range msg.Get("content").Array() {
		if c.Get("type").String() == "text" {
			text += c.Get("text").String()
		}
	}
	if text == "" {
		text = "API error"
	}
	var detail []string
	if st := ev.Get("api_error_status"); st.Exists() && !st.IsNull() {
		detail = append(detail, "status: "+st.Raw())
	}
	if s := ev.Get("api_error_type").String(); s != "" {
		detail = append(detail, "type: "+s)
	}
	if s := ev.Get("error").String(); s != "" {
		detail = append(detail, "error: "+s)
	}
	if notLoggedIn(ev) {
		detail = append([]string{text}, detail...)
		text = ClaudeNotLoggedIn
	}
	m.fail(t, text, strings.Join(detail, "\n"), r)
}

// ClaudeNotLoggedIn is the failure of a turn Claude Code could not run
// because it is not logged in (or its key is refused).
const ClaudeNotLoggedIn = "Claude Code is not logged in (authentication failed). Log in with `spbridge login --backend claude`."

// notLoggedIn reports whether an API error event or result says the
// credentials were refused: HTTP 401, or the CLI's authentication_failed.
func notLoggedIn(ev *claudeEvent) bool {
	return ev.Get("api_error_status").Int() == 401 || ev.Get("error").String() == "authentication_failed" ||
		ev.Get("api_error_type").String() == "authentication_error"
}

// fail adds the turn's failure item, or updates it when there is one.
func (m *Claude) fail(t *claudeTurn, text, detail string, r *Result) {
	setFailure(m.newID, &t.failure, text, detail, r)
}

func (m *Claude) user(ev *claudeEvent, r *Result) {
	t := m.ensureTurn()
	content := ev.Get("message.content")
	if !content.IsArray() {
		return // an echo of the user's own message
	}
	var results []archive.Block
	toolResult := ev.Get("tool_use_result")
	var f [len(userBlockFields)]jsonline.Value
	content.ForEach(func(_, c jsonline.Value) bool {
		c.ReadFields(userBlockFields[:], f[:])
		switch f[0].View() {
		case "text":
			if strings.HasPrefix(f[1].View(), "[Request interrupted by user") {
				t.aborted = true
				m.interruptedRejections(r)
			}
		case "tool_result":
			id := f[2].String()
			out, images := m.toolResultContent(f[3])
			isErr := f[4].Bool()
			tool, ok := t.tools[id]
			name := ""
			if ok {
				name = tool.name
				if !tool.done {
					m.toolResult(tool, out, images, isErr, toolResult, r)
				}
			}
			// The images follow their result: a tool message may answer
			// several calls, each result with its own images after it.
			results = append(results, archive.NewToolResultBlock(id, name, out, isErr))
			results = append(results, imageBlocks(images)...)
		}
		return true
	})
	if len(results) > 0 {
		// The results of parallel tool calls arrive one line each, in the
		// order the tools finish; they answer one assistant message together.
		if n := len(t.history); n > 0 && t.history[n-1].Role == "tool" {
			t.history[n-1].Content = append(t.history[n-1].Content, results...)
		} else {
			t.history = append(t.history, archive.Message{Role: "tool", Content: results})
		}
	}
}

// userBlockFields are the fields user reads of a content block, in the
// order ReadFields gives them.
var userBlockFields = [...]string{"type", "text", "tool_use_id", "content", "is_error"}

// toolResultText is a tool_result's content as text: a string as it is, a
// list of blocks as their text joined by newlines (an image as [image]).
func toolResultText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.String()
	}
	if !c.IsArray() {
		if c.Exists() && c.Type != gjson.Null {
			return c.Raw
		}
		return ""
	}
	var parts []string
	for _, b := range c.Array() {
		switch b.Get("type").String() {
		case "text":
			parts = append(parts, b.Get("text").String())
		case "image":
			parts = append(parts, "[image]")
		default:
			parts = append(parts, b.Raw)
		}
	}
	return strings.Join(parts, "\n")
}

// toolResultContent is a tool_result's content as its text and its images:
// a string as it is, a list of blocks as their text joined by newlines and
// the images in it (base64, as Claude Code sends a Read of a picture). An
// image format 1 cannot keep stays in the text as [image].
func toolResultContent(c jsonline.Value) (string, []Image) {
	if c.Type() == gjson.String {
		return c.String(), nil
	}
	if !c.IsArray() {
		if c.Exists() && !c.IsNull() {
			return c.Raw(), nil
		}
		return "", nil
	}
	var parts []string
	var images []Image
	for _, b := range c.Array() {
		switch b.Get("type").String() {
		case "text":
			parts = append(parts, b.Get("text").String())
		case "image":
			if b.Get("source.type").String() == "base64" {
				if im, ok := decodeImage(b.Get("source.media_type").String(), b.Get("source.data").String()); ok {
					images = append(images, im)
					continue
				}
			}
			parts = append(parts, "[image]")
		default:
			parts = append(parts, b.Raw())
		}
	}
	return strings.Join(parts, "\n"), images
}

func (m *Claude) controlRequest(ev *claudeEvent, r *Result) {
	t := m.ensureTurn()
	req := ev.Get("request")
	id := ev.Get("request_id").String()
	if req.Get("subtype").String() != "can_use_tool" {
		r.ControlRequests = append(r.ControlRequests, ControlRequest{RequestID: id, Subtype: req.Get("subtype").String()})
		return
	}
	name := req.Get("tool_name").String()
	input := req.Get("input").Result()
	it := m.newItem(archive.TypeToolApproval)
	it.Set("name", name)
	it.Set("summary", toolSummary(name, input))
	var detail []string
	if d := req.Get("description").String(); d != "" {
		detail = append(detail, d)
	}
	if p := req.Get("blocked_path").String(); p != "" {
		detail = append(detail, "path: "+p)
	}
	if input.Exists() {
		detail = append(detail, "arguments:\n"+truncate(prettyJSON(input.Raw), maxDetailArgs))
	}
	it.Set("detail", strings.Join(detail, "\n"))
	m.add(r, it)
	toolUseID := req.Get("tool_use_id").String()
	t.approvals[id] = toolUseID
	raw := json.RawMessage(input.Raw)
	if !input.Exists() {
		raw = json.RawMessage("{}")
	}
	a := Approval{RequestID: id, ToolUseID: toolUseID, ToolName: name, Input: raw, ItemID: it.ID()}
	if slices.Contains(claudeShellTools, name) {
		a.Cwd = m.commandFolder(req)
		a.Escalated = input.Get("dangerouslyDisableSandbox").Bool()
	}
	tool, known := t.tools[toolUseID]
	if known && !tool.item.IsZero() {
		a.ToolItemID = tool.item.ID()
	}
	switch {
	case known && (!input.IsObject() || len(input.Map()) == 0):
		a.Tool = tool.view // the request repeats no input (ExitPlanMode)
	case known:
		a.Tool = m.inputView(name, input, tool.view.ParentID)
	default:
		a.Tool = m.inputView(name, input, "")
	}
	r.Approvals = append(r.Approvals, a)
}

// claudeShellTools run a command in Claude Code's shell: Bash, Monitor
// (a command whose output lines come as events) and PowerShell.
var claudeShellTools = []string{"Bash", "Monitor", "PowerShell"}

// claudeFolderTools move Claude Code's session to another folder (a git
// worktree), where its commands then start.
var claudeFolderTools = []string{"EnterWorktree", "ExitWorktree"}

// commandFolder is the folder the command of a shell tool's permission
// request req runs in: the folder the process started in (its init's cwd), which
// is where every Bash command of the main session starts when Claude Code
// runs with CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR (the claude backend
// sees to that: a `cd` does not carry over to the next command). "" when
// it is not known: before the init, after a call that moved the session
// to another folder (ForgetFolder), or for a subagent's command (agent_id:
// a subagent may run in a folder of its own, its `cwd` or a worktree).
func (m *Claude) commandFolder(req jsonline.Value) string {
	if m.folderMoved || req.Get("agent_id").String() != "" {
		return ""
	}
	return m.cwd
}

// FolderMoved reports whether the session may have moved to another
// folder: its commands' folder is no longer known.
func (m *Claude) FolderMoved() bool { return m.folderMoved }

// ForgetFolder makes the folder of every later command unknown: the
// session moved (FolderMoved of the mapper of an earlier process of the
// same session).
func (m *Claude) ForgetFolder() { m.folderMoved = true }

func (m *Claude) result(ev *claudeEvent, r *Result) {
	t := m.ensureTurn()
	if ev.Get("origin.kind").String() == "task-notification" {
		// The end of a turn claude ran on its own to pass on a background
		// subagent's report, not of the one asked for: what it showed stays
		// in the turn, which goes on to the next result.
		u, cost := m.turnUsage(ev)
		t.bgTurns++
		t.bgUsage = t.bgUsage.Add(u)
		t.rounds, t.counted = archive.Usage{}, true
		if cost != "" {
			t.bgCost = archive.AddNumbers(t.bgCost, cost)
		}
		return
	}
	reason := ev.Get("terminal_reason").String()
	interrupted := t.aborted || reason == "aborted_streaming" || reason == "aborted_tools"
	status := TurnCompleted
	switch {
	case interrupted:
		status = TurnInterrupted
	case ev.Get("is_error").Bool() || ev.Get("subtype").String() != "success":
		status = TurnFailed
		text := ev.Get("result").String()
		var errs []string
		for _, e := range ev.Get("errors").Array() {
			errs = append(errs, e.String())
		}
		if text == "" && len(errs) > 0 {
			text, errs = errs[0], errs[1:]
		}
		if text == "" {
			text = "Claude Code reported an error (" + ev.Get("subtype").String() + ")"
		}
		var detail []string
		if st := ev.Get("api_error_status"); st.Exists() && !st.IsNull() {
			detail = append(detail, "status: "+st.Raw())
		}
		if s := ev.Get("api_error_type").String(); s != "" {
			detail = append(detail, "type: "+s)
		}
		if reason != "" {
			detail = append(detail, "reason: "+reason)
		}
		detail = append(detail, errs...)
		if notLoggedIn(ev) {
			detail = append([]string{text}, detail...)
			text = ClaudeNotLoggedIn
		}
		m.fail(t, text, strings.Join(detail, "\n"), r)
	}
	bgTurns, bgUsage, bgCost := t.bgTurns, t.bgUsage, t.bgCost
	end := m.endTurn(status, r)
	end.Usage, end.CostUSD = m.turnUsage(ev)
	if bgTurns > 0 {
		end.Usage = bgUsage.Add(end.Usage)
	}
	if bgCost != "" {
		end.CostUSD = archive.AddNumbers(bgCost, end.CostUSD)
	}
	end.ContextWindow = contextWindow(ev, m.model)
	if sid := ev.Get("session_id").String(); sid != "" {
		end.SessionID = sid
	}
	r.End = end
}

// Finish ends a turn whose stream stopped without a result: interrupted
// when the CLI reported it cut off or interrupted is set (the host asked for
// the interrupt), failed otherwise with text and detail as its failure. It
// returns nothing when no turn is running.
func (m *Claude) Finish(interrupted bool, text, detail string) Result {
	var r Result
	if m.turn == nil {
		return r
	}
	t := m.turn
	status := TurnInterrupted
	if !interrupted && !t.aborted {
		status = TurnFailed
		m.fail(t, text, detail, &r)
	}
	// No result says what the turn used (Claude Code 2.1.332 ends on a
	// SIGINT during a tool call with none): it used what its model
	// requests streamed, and what the turns claude ran on its own
	// meanwhile reported.
	usage := t.rounds
	if !t.counted {
		usage = usage.Add(t.lastRound)
	}
	usage, cost := t.bgUsage.Add(usage), t.bgCost
	r.End = m.endTurn(status, &r)
	r.End.Usage, r.End.CostUSD = usage, cost
	return r
}

// Settle ends what Claude Code showed on its own since the last turn it
// was asked for ended (a background subagent's calls, the turn it ran to
// pass on the subagent's report), when no turn of the host's runs: the
// Result's End holds its history and the usage and cost of the turns
// claude ran on its own, as a completed turn. It returns nothing when no
// turn is open. Call it between turns only, after a result: a turn still
// streaming would lose what is in flight.
func (m *Claude) Settle() Result {
	var r Result
	t := m.turn
	if t == nil {
		return r
	}
	usage, cost := t.bgUsage, t.bgCost
	r.End = m.endTurn(TurnCompleted, &r)
	r.End.Usage, r.End.CostUSD = usage, cost
	return r
}

// endTurn closes the turn: running tools are cancelled, an interrupted turn
// gets its notice, and the history and last request's usage are handed over.
func (m *Claude) endTurn(status string, r *Result) *TurnEnd {
	t := m.turn
	for _, id := range t.order {
		tool, ok := t.tools[id]
		if !ok || tool.done {
			continue
		}
		m.finishTool(tool, archive.StatusCancelled, "cancelled", "", r)
	}
	if status == TurnInterrupted {
		it := m.newItem(archive.TypeNotice)
		it.Set("text", "Interrupted.")
		m.add(r, it)
	}
	end := &TurnEnd{
		Status:    status,
		LastRound: t.lastRound,
		Model:     m.model,
		SessionID: m.session,
	}
	for _, msg := range t.history {
		if len(msg.Content) > 0 {
			end.History = append(end.History, msg)
		}
	}
	m.turn = nil
	return end
}

// turnUsage reads a result's usage and cost for this turn. The CLI reports
// total_cost_usd and modelUsage for the whole process, and
// model_usage_since_last_result for this turn.
func (m *Claude) turnUsage(ev *claudeEvent) (archive.Usage, json.Number) {
	var u archive.Usage
	var cost json.Number
	since := ev.Get("model_usage_since_last_result")
	if since.IsObject() {
		since.ForEach(func(_, mu jsonline.Value) bool {
			u.Input = archive.AddNumbers(u.Input, num(mu.Get("inputTokens")))
			u.Output = archive.AddNumbers(u.Output, num(mu.Get("outputTokens")))
			u.CacheRead = archive.AddNumbers(u.CacheRead, num(mu.Get("cacheReadInputTokens")))
			u.CacheWrite = archive.AddNumbers(u.CacheWrite, num(mu.Get("cacheCreationInputTokens")))
			u.WebSearchRequests = archive.AddNumbers(u.WebSearchRequests, num(mu.Get("webSearchRequests")))
			if h := mu.Get("cacheCreationEphemeral1hInputTokens"); h.Exists() {
				u.CacheWrite1h = archive.AddNumbers(u.CacheWrite1h, num(h))
			}
			if c := mu.Get("costUSD"); c.Exists() {
				cost = archive.AddNumbers(cost, num(c))
			}
			return true
		})
	} else {
		u = usageFromAPI(ev.Get("usage"))
	}
	total := ev.Get("total_cost_usd")
	if cost == "" && total.Exists() && total.Type() == gjson.Number {
		cost = num(total)
		if m.lastTotal != "" {
			prev, _ := strconv.ParseFloat(m.lastTotal, 64)
			if diff := total.Float() - prev; diff >= 0 {
				cost = archive.AddNumbers(num(total), json.Number("-"+m.lastTotal))
			}
		}
	}
	if total.Exists() && total.Type() == gjson.Number {
		m.lastTotal = total.Raw()
	}
	if cost != "" {
		u.ReportedCost = cost
	}
	return u, cost
}

// usageFromAPI reads an Anthropic API usage object.
func usageFromAPI(v jsonline.Value) archive.Usage {
	var u archive.Usage
	if !v.IsObject() {
		return u
	}
	u.Input = num(v.Get("input_tokens"))
	u.Output = num(v.Get("output_tokens"))
	u.CacheRead = num(v.Get("cache_read_input_tokens"))
	u.CacheWrite = num(v.Get("cache_creation_input_tokens"))
	u.WebSearchRequests = num(v.Get("server_tool_use.web_search_requests"))
	if h := v.Get("cache_creation.ephemeral_1h_input_tokens"); h.Exists() {
		u.CacheWrite1h = num(h)
	}
	return u
}

// mergeUsage overlays the fields later reports.
func mergeUsage(u, later archive.Usage) archive.Usage {
	set := func(dst *json.Number, v json.Number) {
		if v != "" {
			*dst = v
		}
	}
	set(&u.Input, later.Input)
	set(&u.Output, later.Output)
	set(&u.CacheRead, later.CacheRead)
	set(&u.CacheWrite, later.CacheWrite)
	set(&u.WebSearchRequests, later.WebSearchRequests)
	set(&u.CacheWrite1h, later.CacheWrite1h)
	return u
}

// num returns a JSON number's text, or "" when v is not a number.
func num(v jsonline.Value) json.Number {
	if v.Type() != gjson.Number {
		return ""
	}
	return json.Number(v.Raw())
}

// claudeFields are the top-level fields of a stream-json line the mapper
// reads. claudeEvent.read finds them all in one pass over the line, so a
// large line (a tool result, a whole assistant message) is walked once at
// the top level, whatever the handler asks for.
var claudeFields = [...]string{
	"type", "subtype", "parent_tool_use_id", "session_id", "model", "message", "event",
	"api_message_id", "abandoned_blocks", "aborted", "is_api_error_message", "api_error_status",
	"api_error_type", "error", "error_status", "attempt", "max_retries", "tool_use_id",
	"tool_use_result", "request", "request_id", "response", "terminal_reason", "is_error",
	"result", "errors", "model_usage_since_last_result", "usage", "total_cost_usd",
	"cwd", "modelUsage", "origin",
}

// claudeFieldIndex is a field's index in claudeFields, or -1.
func claudeFieldIndex(key string) int {
	switch key {
	case "type":
		return 0
	case "subtype":
		return 1
	case "parent_tool_use_id":
		return 2
	case "session_id":
		return 3
	case "model":
		return 4
	case "message":
		return 5
	case "event":
		return 6
	case "api_message_id":
		return 7
	case "abandoned_blocks":
		return 8
	case "aborted":
		return 9
	case "is_api_error_message":
		return 10
	case "api_error_status":
		return 11
	case "api_error_type":
		return 12
	case "error":
		return 13
	case "error_status":
		return 14
	case "attempt":
		return 15
	case "max_retries":
		return 16
	case "tool_use_id":
		return 17
	case "tool_use_result":
		return 18
	case "request":
		return 19
	case "request_id":
		return 20
	case "response":
		return 21
	case "terminal_reason":
		return 22
	case "is_error":
		return 23
	case "result":
		return 24
	case "errors":
		return 25
	case "model_usage_since_last_result":
		return 26
	case "usage":
		return 27
	case "total_cost_usd":
		return 28
	case "cwd":
		return 29
	case "modelUsage":
		return 30
	case "origin":
		return 31
	}
	return -1
}

// claudeEvent is one stream-json line: its top-level fields as read.
type claudeEvent struct {
	raw jsonline.Value
	f   [len(claudeFields)]jsonline.Value
}

// read reads the fields of object raw in one pass; of a key given twice
// the first counts, as gjson's Get reads it.
func (ev *claudeEvent) read(raw jsonline.Value) {
	*ev = claudeEvent{raw: raw}
	for m := raw.Members(); m.Next(); {
		if i := claudeFieldIndex(m.Key()); i >= 0 && !ev.f[i].Exists() {
			ev.f[i] = m.Value()
		}
	}
}

// Get reads path ("field" or "field.sub.path") from the fields read; a
// field not among claudeFields is looked up in the line.
func (ev *claudeEvent) Get(path string) jsonline.Value {
	key, rest, nested := strings.Cut(path, ".")
	i := claudeFieldIndex(key)
	if i < 0 {
		return ev.raw.Get(path)
	}
	if !nested {
		return ev.f[i]
	}
	return ev.f[i].Get(rest)
}
