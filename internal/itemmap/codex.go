package itemmap

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
)

// Codex maps the JSON lines of one `codex exec --json` process (or `codex
// exec resume --json`) onto items. Feed it every stdout line in order with
// Line; when the stream ends without turn.completed or turn.failed (the
// process was interrupted, crashed or stopped: codex exec writes nothing
// more after a SIGINT), call Finish. Codex item ids (item_0, item_1, …)
// restart in every process, so each item gets a fresh id from newID and the
// codex ids are only used to match the events of one turn. A Codex is not
// safe for concurrent use.
//
// Use one Codex for every process of one thread (`codex exec`, then each
// `codex exec resume <thread>`): codex reports the thread's token total so
// far at each turn's end, and the mapper reports a turn's own usage as the
// difference from the total it saw last for that thread. A Codex that first
// sees a thread at a resume reports the thread's whole total as that
// turn's usage.
//
// How codex items show:
//   - agent_message: an assistant item; reasoning: a thinking item.
//   - command_execution: a tool item named "shell" (codex's own name for its
//     command tool, and the name the history uses), summary the command
//     without the shell wrapper codex adds (`/bin/bash -lc '…'`), statusText
//     "exit N", detail the output.
//   - file_change: a tool item named "apply_patch", summary the changed
//     paths, statusText "N files", detail each change.
//   - mcp_tool_call: a tool item named "server.tool".
//   - web_search: a webSearch item; todo_list: a directions item, one
//     "[x] step" or "[ ] step" line a step; an error item: a failure
//     item, though codex goes on and the turn may still complete.
//   - A top-level error event is a notice at once: codex also sends one for
//     a retry that then succeeds. When turn.failed follows with the same
//     message, the notice is replaced by the turn's one failure item.
//
// The history holds the assistant's text and, for each tool, a toolCall
// and its toolResult. When the stream carries the model's own tool calls
// (the app-server's raw response items, see CodexApp), a call is kept as
// the model produced it: the model's tool name, its call_id as the id, its
// arguments (or a freeform tool's input) byte for byte, and as the result
// the output codex sent back to the model, an error when the tool item
// failed (or, without one, when the output reports a non-zero exit code).
// On codex exec, whose stream does not carry them, ExecHistory rebuilds a
// turn's history so from codex's own log of the thread. Otherwise (a call
// neither covers) a call is in a neutral form: named as in the panel ("mcp__server__tool" for MCP tools),
// its id the tool item's id (unique, unlike codex's); a command's call has
// the arguments {"command": …} (the unwrapped command) and its result the
// output, an error when the exit code is not 0; a file change's call has
// {"changes": […]} as codex reported them. A tool still running when the
// turn ends gets an error result with its output so far, so that no call is
// left without a result. Reasoning, web searches (run on the model API's
// side, without results) and todo lists are not in it.
type Codex struct {
	newID       IDFunc
	thread      string
	cwd         string // the thread's working folder, "" when not reported
	turn        *codexTurn
	total       codexTokens // the last usage codex reported: the thread's total
	totalThread string      // the thread total belongs to
	// last is the turn that ended last, kept for ExecHistory until the
	// next turn starts.
	last *codexTurn
	// preLog are the lines of codex's log of the exec thread given to
	// ExecLog before the turn started.
	preLog     [][]byte
	preLogSize int
}

// NewCodex returns a mapper that names new items with newID (nil: random
// UUIDs).
func NewCodex(newID IDFunc) *Codex {
	if newID == nil {
		newID = archive.NewID
	}
	return &Codex{newID: newID}
}

// Codex item types.
const (
	codexMessage   = "agent_message"
	codexReasoning = "reasoning"
	codexCommand   = "command_execution"
	codexFiles     = "file_change"
	codexMCP       = "mcp_tool_call"
	codexSearch    = "web_search"
	codexTodo      = "todo_list"
	codexError     = "error"
	// codexImage is the app-server's imageView item (view_image) in the
	// exec form CodexApp gives it; codex exec reports none.
	codexImage = "image_view"
)

// codexItemTypes are the item types the mapper shows.
var codexItemTypes = map[string]bool{
	codexMessage: true, codexReasoning: true, codexCommand: true, codexFiles: true,
	codexMCP: true, codexSearch: true, codexTodo: true, codexError: true, codexImage: true,
}

// codexEntry is one codex item of the turn and the panel item it shows as.
type codexEntry struct {
	id       string           // the codex item id (an app-server tool's is the model's call_id)
	kind     string           // the codex item type
	item     archive.Item     // zero until shown
	raw      string           // the codex item as last reported
	text     string           // an agent_message's or reasoning's text so far
	buf      *strings.Builder // text grown by deltas (app-server), text's bytes
	tool     string           // a tool's name in the history ("" when none)
	args     string           // the tool call's arguments in the history
	output   string           // the tool's result in the history (exact bytes)
	isErr    bool             // the tool's result is an error
	finished bool             // the tool ended (or the message completed)
	logged   bool             // the result (or the text) is in the history log
	view     *ToolView        // the tool's presentation as last handed out
	stream   *strings.Builder // a command's output as streamed so far (app-server)
	plan     []PlanEntry      // a todo list's plan as last handed out
	images   []Image          // the images the tool returned, once known (view_image)
	rc       *rawCall         // the model's own call of an exec tool item (ExecHistory)
	execCall string           // the call_id ExecCall gave an exec tool item
}

// Steps of the history log.
const (
	stepText = iota
	stepCall
	stepResult
	stepRawCall
	stepRawResult
	stepUser
)

// codexStep is one history block, in the order the CLI reported it; the
// blocks are built from the entries' final state when the turn ends. A
// raw step's block is the model's own call or its output (rc).
type codexStep struct {
	e    *codexEntry
	rc   *rawCall
	user *archive.Message // stepUser: a message the user steered into the turn
	kind int
}

// rawCall is a tool call as the model produced it, and the output codex
// sent back for it, from the app-server's raw response items.
type rawCall struct {
	id, name, args string
	output         string
	images         []Image // the images in the output (an input_image's data URL)
	hasCall        bool    // the call itself was seen (not only its output)
	hasOutput      bool
	callPut        bool // in the history being built
	resultPut      bool
	entry          *codexEntry // the exec tool item that ran it (ExecHistory)
	namespace      string      // the call's namespace (an MCP tool's), not kept
}

type codexTurn struct {
	byID    map[string]*codexEntry // this turn's entries by codex item id
	entries []*codexEntry          // every entry, in order of first sight
	raw     map[string]*rawCall    // the model's own tool calls by call_id
	log     []codexStep
	failure *archive.Item
	errItem archive.Item // the notice of the last top-level error
	errMsg  string       // the last top-level error's message
	// fileViews are the changes of exec file_change items (by codex item
	// id) as ExecFileChanges gave them, in the form changeView reads.
	fileViews map[string]string
	// execCalls are the call_ids ExecCall gave exec items not seen yet.
	execCalls map[string]string
	// logged are the model's calls of this turn in codex's log of the exec
	// thread, by call_id, as ExecLog read them.
	logged map[string]*loggedCall
	// logWaiting are lines of the log that wait for codex exec to print
	// the assistant message the first of them is (see ExecLog); shownMsgs
	// counts the messages codex exec printed in the turn, logMsgs those of
	// the log read.
	logWaiting  [][]byte
	logWaitSize int
	shownMsgs   int
	logMsgs     int
	end         *TurnEnd // the turn's end, once it ended
}

// UserMessage adds msg, a message the user sent into the running turn
// (steering), to the turn's history where codex took it.
func (m *Codex) UserMessage(msg archive.Message) {
	t := m.ensureTurn()
	t.log = append(t.log, codexStep{user: &msg, kind: stepUser})
}

func (m *Codex) ensureTurn() *codexTurn {
	if m.turn == nil {
		m.last = nil
		m.turn = &codexTurn{byID: make(map[string]*codexEntry), raw: make(map[string]*rawCall)}
	}
	return m.turn
}

// CodexFileChange is one file's change as codex's own log of an exec
// thread tells it (codex exec --json reports only the file and its kind).
type CodexFileChange struct {
	// Path is the file's absolute path, as the file_change item names it.
	Path string `json:"path"`
	// Kind is add, delete or update.
	Kind string `json:"kind"`
	// MovePath is an update's new path when the file moved, else "".
	MovePath string `json:"move_path,omitempty"`
	// Diff is an added file's text, a deleted file's old text ("" when not
	// known), or an update's hunks as a unified diff ("@@ -a,b +c,d @@"
	// and " ", "-", "+" lines; a bare "@@" when the hunk's place in the
	// file is not known).
	Diff string `json:"diff,omitempty"`
}

// ExecFileChanges gives the exec file_change item id (its codex item id in
// this turn) the changes it made, for its view only: the next event of
// that item shows them as diffs and locations as the app-server's changes
// show (see changeView). The item itself, its detail and the history stay
// as codex exec reported them, and nothing of it is saved.
func (m *Codex) ExecFileChanges(id string, changes []CodexFileChange) {
	if id == "" || len(changes) == 0 {
		return
	}
	b, err := json.Marshal(changes)
	if err != nil {
		return
	}
	t := m.ensureTurn()
	if t.fileViews == nil {
		t.fileViews = make(map[string]string)
	}
	t.fileViews[id] = string(b)
}

// ExecFileChangesLate gives a file_change item that already completed the
// changes it made, as ExecFileChanges does, and returns the update of its
// view; nothing when the item is not a completed file_change of this turn
// or its view does not change.
func (m *Codex) ExecFileChangesLate(id string, changes []CodexFileChange) Result {
	var r Result
	t := m.turn
	if t == nil {
		return r
	}
	e := t.byID[id]
	if e == nil || e.kind != codexFiles || !e.finished || e.item.IsZero() {
		return r
	}
	m.ExecFileChanges(id, changes)
	if fv, ok := t.fileViews[id]; ok {
		m.showTool(e, archive.TypeTool, &r, m.changeView(gjson.Parse(fv)))
	}
	return r
}

// InTurn reports whether a turn has started and not ended.
func (m *Codex) InTurn() bool { return m.turn != nil }

// Line maps one stdout line. A line that is not a JSON object, an event the
// mapper does not know, or an item of a type it does not know gives a
// Result with Skipped set; a line nested deeper than MaxDepth, or one that
// starts as an object but is not valid JSON, also gives a notice that says
// so.
func (m *Codex) Line(line []byte) Result {
	r, ok := readLine(m.newID, "codex", line)
	if !ok {
		return r
	}
	return m.event(gjson.ParseBytes(line))
}

// event maps one event, parsed from valid JSON.
func (m *Codex) event(ev gjson.Result) Result {
	var r Result
	if !ev.IsObject() {
		r.Skipped = true
		return r
	}
	switch ev.Get("type").String() {
	case "thread.started":
		m.thread = ev.Get("thread_id").String()
		if cwd := ev.Get("cwd").String(); cwd != "" {
			m.cwd = cwd
		}
		r.Session = &Session{ID: m.thread}
		if m.turn != nil {
			// A new process whose item ids restart, though the last one's
			// turn never ended: keep the turn, forget its codex ids.
			clear(m.turn.byID)
		}
	case "turn.started":
		t := m.ensureTurn()
		clear(t.byID)
		clear(t.fileViews)
		m.drainLog(false, &r)
	case "item.started", "item.updated":
		m.item(ev.Get("item"), false, &r)
	case "item.completed":
		m.item(ev.Get("item"), true, &r)
	case "error":
		m.topError(ev, &r)
	case "turn.completed":
		m.ensureTurn()
		r.End = m.endTurn(TurnCompleted, &r)
		r.End.Usage = m.turnUsage(ev.Get("usage"))
		r.End.LastRound = r.End.Usage
	case "turn.failed":
		m.turnFailed(ev, &r)
	default:
		r.Skipped = true
	}
	return r
}

func (m *Codex) newItem(typ string) archive.Item {
	return archive.ItemFromMap(map[string]any{"id": m.newID(), "type": typ})
}

func (m *Codex) add(r *Result, it archive.Item) {
	r.Changes = append(r.Changes, Change{Op: OpAdd, Item: it})
}

func (m *Codex) update(r *Result, it archive.Item, delta string) {
	r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: it, Delta: delta})
}

// show sets fields (key, value pairs) on the entry's item: it adds the item
// of type typ the first time, and reports an update when a field changed.
func (m *Codex) show(e *codexEntry, typ string, r *Result, fields ...any) {
	if e.item.IsZero() {
		e.item = m.newItem(typ)
		for i := 0; i+1 < len(fields); i += 2 {
			e.item.Set(fields[i].(string), fields[i+1])
		}
		m.add(r, e.item)
		return
	}
	changed := false
	for i := 0; i+1 < len(fields); i += 2 {
		k, v := fields[i].(string), fields[i+1]
		if !reflect.DeepEqual(e.item.Get(k), v) {
			e.item.Set(k, v)
			changed = true
		}
	}
	if changed {
		m.update(r, e.item, "")
	}
}

// item maps an item.started, item.updated or item.completed event.
func (m *Codex) item(it gjson.Result, completed bool, r *Result) {
	t := m.ensureTurn()
	id, kind := it.Get("id").String(), it.Get("type").String()
	e := t.byID[id]
	if e == nil || e.kind != kind {
		if !codexItemTypes[kind] {
			r.Skipped = true
			return
		}
		e = &codexEntry{id: id, kind: kind}
		t.byID[id] = e
		t.entries = append(t.entries, e)
	}
	if e.finished && (!completed || it.Raw == e.raw) {
		return // a repeated completion, or an event that came late
	}
	e.raw = it.Raw
	switch kind {
	case codexMessage:
		m.setText(e, archive.TypeAssistant, it.Get("text").String(), r)
		if completed {
			e.finished = true
			if !e.logged {
				e.logged = true
				t.log = append(t.log, codexStep{e: e, kind: stepText})
				// The log's lines that followed this message.
				t.shownMsgs++
				m.drainLog(false, r)
			}
		}
	case codexReasoning:
		m.setText(e, archive.TypeThinking, it.Get("text").String(), r)
		e.finished = completed
	case codexCommand:
		m.command(e, it, completed, r)
	case codexFiles:
		m.fileChange(e, it, completed, r)
	case codexMCP:
		m.mcpCall(e, it, completed, r)
	case codexSearch:
		m.webSearch(e, it, completed, r)
	case codexTodo:
		m.todoList(e, it.Get("items"), r)
		e.finished = completed
	case codexImage:
		m.imageView(e, it, completed, r)
	case codexError:
		// An error item is shown as a failure, though it is not fatal:
		// codex goes on with the turn, which may still complete.
		m.show(e, archive.TypeFailure, r, "text", it.Get("message").String())
		e.finished = completed
	}
}

// setText shows a message's or reasoning's text. Codex exec gives the text
// whole; a later event whose text extends the old one reports the appended
// part as the change's Delta.
func (m *Codex) setText(e *codexEntry, typ, text string, r *Result) {
	if e.item.IsZero() {
		if text == "" {
			return
		}
		e.text = text
		e.item = m.newItem(typ)
		e.item.Set("text", text)
		m.add(r, e.item)
		return
	}
	if text == e.text {
		return
	}
	delta := ""
	if strings.HasPrefix(text, e.text) {
		delta = text[len(e.text):]
	}
	e.text, e.buf = text, nil
	e.item.Set("text", text)
	m.update(r, e.item, delta)
}

// appendText grows the text of item id (of codex kind, shown as typ) by
// delta, as the app-server streams it: each change costs the delta, not the
// text so far.
func (m *Codex) appendText(id, kind, typ, delta string, r *Result) {
	t := m.ensureTurn()
	e := t.byID[id]
	if e == nil || e.kind != kind {
		e = &codexEntry{id: id, kind: kind}
		t.byID[id] = e
		t.entries = append(t.entries, e)
	}
	if e.finished || delta == "" {
		return
	}
	if e.buf == nil {
		e.buf = &strings.Builder{}
		e.buf.WriteString(e.text)
	}
	e.buf.WriteString(delta)
	e.text = e.buf.String()
	if e.item.IsZero() {
		e.item = m.newItem(typ)
		e.item.Set("text", e.text)
		m.add(r, e.item)
		return
	}
	e.item.Set("text", e.text)
	m.update(r, e.item, delta)
}

// startTool puts a tool's call in the history log the first time the tool
// is seen; its arguments are read when the turn ends.
func (m *Codex) startTool(e *codexEntry, name string) {
	if e.tool != "" {
		return
	}
	e.tool = name
	m.turn.log = append(m.turn.log, codexStep{e: e, kind: stepCall})
}

// endTool records a tool's result in the history log once.
func (m *Codex) endTool(e *codexEntry, output string, isErr bool) {
	e.finished = true
	e.output, e.isErr = output, isErr
	if e.tool != "" && !e.logged {
		e.logged = true
		m.turn.log = append(m.turn.log, codexStep{e: e, kind: stepResult})
	}
}

// topError shows a top-level error event as a notice. It does not end the
// turn: codex sends one for a retry that then succeeds, and turn.failed
// when it gives up.
func (m *Codex) topError(ev gjson.Result, r *Result) {
	t := m.ensureTurn()
	msg := ev.Get("message").String()
	if msg == "" {
		msg = "Codex reported an error."
	}
	it := m.newItem(archive.TypeNotice)
	it.Set("text", msg)
	m.add(r, it)
	t.errItem, t.errMsg = it, msg
}

// turnFailed ends the turn as failed with one failure item. The message
// codex sent just before as a top-level error is not shown twice: its
// notice is replaced by the failure.
// CodexNotLoggedIn is the failure of a turn the Codex CLI could not run
// because it is not logged in (the API answered 401).
const CodexNotLoggedIn = "The Codex CLI is not logged in (the API answered 401). Log in with `spbridge login --backend codex`."

// codexKeyUnset begins the failure of a turn the Codex CLI could not run
// because the variable its model provider takes the key from is not set.
const codexKeyUnset = "The Codex CLI has no API key: "

// CodexKeyUnset is the failure of a turn the Codex CLI refused because the
// environment variable name (its model provider's env_key) is not set.
func CodexKeyUnset(name string) string {
	return codexKeyUnset + "the environment variable `" + name + "` (its model provider's env_key) is not set. " +
		"Set it where the editor starts spbridge, or log in with `spbridge login --backend codex`."
}

// CodexLoginFailure reports whether text is the failure of a Codex turn
// refused for want of credentials: CodexNotLoggedIn or CodexKeyUnset.
func CodexLoginFailure(text string) bool {
	return text == CodexNotLoggedIn || strings.HasPrefix(text, codexKeyUnset)
}

// missingEnvVar is the variable codex says is missing ("Missing environment
// variable: `NAME`."), false when msg says nothing of the kind.
func missingEnvVar(msg string) (string, bool) {
	_, rest, ok := strings.Cut(msg, "Missing environment variable: `")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "`")
	return name, ok && name != ""
}

func (m *Codex) turnFailed(ev gjson.Result, r *Result) {
	t := m.ensureTurn()
	m.drainLog(true, r)
	e := ev.Get("error")
	msg := e.Get("message").String()
	if msg == "" && e.Type == gjson.String {
		msg = e.String()
	}
	if msg == "" {
		msg = t.errMsg
	}
	text, detail := codexErrorText(msg)
	if text == "" {
		text = "Codex reported that the turn failed."
	}
	if strings.Contains(msg, "401 Unauthorized") {
		// Exec mode reports the refused key only in the message's words.
		detail = joinNonEmpty("\n", text, detail)
		text = CodexNotLoggedIn
	} else if name, ok := missingEnvVar(msg); ok {
		// Refused before any request: the provider's key variable is unset.
		detail = joinNonEmpty("\n", text, detail)
		text = CodexKeyUnset(name)
	}
	if e.IsObject() {
		// Whatever the error carries besides its message, as codex wrote it.
		var extra []string
		e.ForEach(func(k, v gjson.Result) bool {
			if k.String() != "message" {
				extra = append(extra, k.Raw+":"+v.Raw)
			}
			return true
		})
		if len(extra) > 0 {
			detail = joinNonEmpty("\n", detail, prettyJSON("{"+strings.Join(extra, ",")+"}"))
		}
	}
	if !t.errItem.IsZero() && t.errMsg == msg && t.failure == nil {
		r.Changes = append(r.Changes, Change{Op: OpRemove, Item: t.errItem})
		t.errItem = archive.Item{}
	}
	m.fail(t, text, detail, r)
	r.End = m.endTurn(TurnFailed, r)
}

// codexErrorText makes an error message readable: a message that is an API
// error's JSON body shows its inner message, with the body as the detail.
func codexErrorText(msg string) (text, detail string) {
	s := strings.TrimSpace(msg)
	if strings.HasPrefix(s, "{") && validJSON(s) {
		body := gjson.Parse(s)
		for _, path := range []string{"error.message", "message", "detail"} {
			if inner := body.Get(path); inner.Type == gjson.String && inner.String() != "" {
				return inner.String(), prettyJSON(s)
			}
		}
	}
	return msg, ""
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// fail adds the turn's failure item, or fills in its detail when there is
// one already.
func (m *Codex) fail(t *codexTurn, text, detail string, r *Result) {
	setFailure(m.newID, &t.failure, text, detail, r)
}

// Finish ends a turn whose stream stopped without turn.completed or
// turn.failed: interrupted when interrupted is set (the host asked for the
// interrupt; codex exec writes nothing after a SIGINT), failed otherwise
// with text and detail as its failure (the last top-level error codex sent,
// if any, is added to the detail). It returns nothing when no turn is
// running.
func (m *Codex) Finish(interrupted bool, text, detail string) Result {
	var r Result
	if m.turn == nil {
		return r
	}
	t := m.turn
	m.drainLog(true, &r)
	status := TurnInterrupted
	if !interrupted {
		status = TurnFailed
		if t.errMsg != "" {
			detail = joinNonEmpty("\n", detail, "last error: "+t.errMsg)
		}
		m.fail(t, text, detail, &r)
	}
	r.End = m.endTurn(status, &r)
	return r
}

// endTurn closes the turn: running tools are cancelled, an interrupted turn
// gets its notice, and the history is built.
func (m *Codex) endTurn(status string, r *Result) *TurnEnd {
	m.drainLog(true, r)
	t := m.turn
	for _, e := range t.entries {
		if e.finished || e.item.IsZero() {
			continue
		}
		switch e.kind {
		case codexCommand, codexFiles, codexMCP, codexImage:
			m.showTool(e, archive.TypeTool, r, e.view, "status", archive.StatusCancelled, "statusText", "cancelled")
			m.endTool(e, e.output, true)
		case codexSearch:
			m.showTool(e, archive.TypeWebSearch, r, e.view, "status", archive.StatusCancelled)
			e.finished = true
		}
	}
	if status == TurnInterrupted {
		it := m.newItem(archive.TypeNotice)
		it.Set("text", "Interrupted.")
		m.add(r, it)
	}
	end := &TurnEnd{Status: status, SessionID: m.thread, History: t.history()}
	t.end = end
	m.turn, m.last = nil, t
	return end
}

// rawToolCall records a tool call as the model produced it (callID, the
// tool's name, its arguments or input exactly), in the history's order. A
// call_id seen before is kept as first seen.
func (m *Codex) rawToolCall(callID, name, args string) {
	t := m.ensureTurn()
	rc := t.raw[callID]
	if rc == nil {
		rc = &rawCall{id: callID}
		t.raw[callID] = rc
	}
	if rc.hasCall {
		return
	}
	rc.hasCall, rc.name, rc.args = true, name, args
	t.log = append(t.log, codexStep{rc: rc, kind: stepRawCall})
}

// rawToolOutput records the output codex sent back to the model for
// callID: exactly, or, when it held images, its text and the images.
func (m *Codex) rawToolOutput(callID, output string, images []Image) {
	t := m.ensureTurn()
	rc := t.raw[callID]
	if rc == nil {
		rc = &rawCall{id: callID}
		t.raw[callID] = rc
	}
	if rc.hasOutput {
		return
	}
	rc.hasOutput, rc.output, rc.images = true, output, images
	t.log = append(t.log, codexStep{rc: rc, kind: stepRawResult})
}

// history builds the turn's history messages in the neutral form: the
// assistant's text and tool calls, then the tools' results, in the order
// codex reported them. A tool whose call the model's own items cover is
// put as the model produced it (see Codex).
func (t *codexTurn) history() []archive.Message {
	var h []archive.Message
	put := func(role string, b archive.Block) {
		if n := len(h); n > 0 && h[n-1].Role == role {
			h[n-1].Content = append(h[n-1].Content, b)
			return
		}
		h = append(h, archive.Message{Role: role, Content: []archive.Block{b}})
	}
	// The tool items by the call they ran (an app-server tool item's id is
	// the model's call_id).
	tools := make(map[string]*codexEntry)
	for _, e := range t.entries {
		if e.tool != "" {
			tools[e.id] = e
		}
	}
	raw := func(e *codexEntry) *rawCall {
		if e.rc != nil {
			return e.rc
		}
		if rc := t.raw[e.id]; rc != nil && rc.hasCall {
			return rc
		}
		return nil
	}
	// A tool's images follow its result.
	putImages := func(images []Image) {
		for _, b := range imageBlocks(images) {
			put("tool", b)
		}
	}
	putCall := func(rc *rawCall) {
		if !rc.callPut {
			rc.callPut = true
			put("assistant", archive.NewToolCallBlock(rc.id, rc.name, rc.args))
		}
	}
	putResult := func(rc *rawCall) {
		if rc.resultPut || !rc.callPut {
			return
		}
		rc.resultPut = true
		e := tools[rc.id]
		if rc.entry != nil {
			e = rc.entry
		}
		switch {
		case rc.hasOutput:
			isErr := rawOutputFailed(rc.output)
			if e != nil && e.finished {
				isErr = e.isErr
			}
			put("tool", archive.NewToolResultBlock(rc.id, rc.name, rc.output, isErr))
			images := rc.images
			if len(images) == 0 && e != nil {
				images = e.images
			}
			putImages(images)
		case e != nil && e.finished:
			// No output went back to the model (the turn ended first):
			// what the tool item reported.
			put("tool", archive.NewToolResultBlock(rc.id, rc.name, e.output, e.isErr))
			putImages(e.images)
		default:
			put("tool", archive.NewToolResultBlock(rc.id, rc.name, "", true))
		}
	}
	for _, s := range t.log {
		e := s.e
		switch s.kind {
		case stepText:
			if e.text != "" {
				put("assistant", archive.NewTextBlock(e.text))
			}
		case stepCall:
			if rc := raw(e); rc != nil {
				putCall(rc)
				continue
			}
			put("assistant", archive.NewToolCallBlock(e.item.ID(), e.tool, e.args))
		case stepResult:
			if rc := raw(e); rc != nil {
				putResult(rc)
				continue
			}
			put("tool", archive.NewToolResultBlock(e.item.ID(), e.tool, e.output, e.isErr))
			putImages(e.images)
		case stepRawCall:
			putCall(s.rc)
		case stepRawResult:
			putResult(s.rc)
		case stepUser:
			for _, b := range s.user.Content {
				put("user", b)
			}
		}
	}
	// A call whose output never came (the turn ended first) still gets a
	// result.
	for _, s := range t.log {
		switch {
		case s.kind == stepRawCall:
			putResult(s.rc)
		case s.kind == stepCall && s.e.rc != nil:
			putResult(s.e.rc)
		}
	}
	return h
}

// rawOutputFailed reports whether a tool's output, as codex sent it to the
// model, says the tool failed: a refusal (CodexRefusal), a command's
// "Process exited with code N" or a patch's "Exit code: N" with N not 0, or
// a JSON output whose metadata.exit_code is not 0.
func rawOutputFailed(out string) bool {
	if _, refused := CodexRefusal(out); refused {
		return true
	}
	if strings.HasPrefix(out, "{") {
		if c := gjson.Get(out, "metadata.exit_code"); c.Type == gjson.Number {
			return c.Int() != 0
		}
		return false
	}
	for n, line := range strings.SplitN(out, "\n", 8) {
		if n == 7 {
			break
		}
		for _, p := range []string{"Process exited with code ", "Exit code: "} {
			if code, ok := strings.CutPrefix(line, p); ok {
				return strings.TrimSpace(code) != "0"
			}
		}
		if line == "Output:" {
			break // what follows is the tool's own output
		}
	}
	return false
}

// codexTokens is a usage as codex reports it. Codex counts cached input
// and cache writes inside input (OpenAI's convention), and reasoning inside
// output.
type codexTokens struct {
	input, cached, written, output             int64
	hasInput, hasCached, hasWritten, hasOutput bool
}

// readCodexTokens reads turn.completed's usage.
func readCodexTokens(v gjson.Result) codexTokens {
	var c codexTokens
	field := func(key string, n *int64, has *bool) {
		if f := v.Get(key); f.Type == gjson.Number {
			*n, *has = f.Int(), true
		}
	}
	if v.IsObject() {
		field("input_tokens", &c.input, &c.hasInput)
		field("cached_input_tokens", &c.cached, &c.hasCached)
		field("cache_write_input_tokens", &c.written, &c.hasWritten)
		field("output_tokens", &c.output, &c.hasOutput)
	}
	return c
}

// since returns c less an earlier total of the same thread; false when a
// count went down (the totals are not comparable).
func (c codexTokens) since(prev codexTokens) (codexTokens, bool) {
	d := c
	d.input -= prev.input
	d.cached -= prev.cached
	d.written -= prev.written
	d.output -= prev.output
	return d, d.input >= 0 && d.cached >= 0 && d.written >= 0 && d.output >= 0
}

// usage converts to format 1, which counts cache reads and writes apart
// from input (as the claude backend does): input is what is left of
// codex's input. Reasoning stays inside output, not added again.
func (c codexTokens) usage() archive.Usage {
	var u archive.Usage
	n := func(v int64, has bool) json.Number {
		if !has {
			return ""
		}
		return json.Number(strconv.FormatInt(v, 10))
	}
	u.Input = n(max(c.input-c.cached-c.written, 0), c.hasInput)
	u.Output = n(c.output, c.hasOutput)
	u.CacheRead = n(c.cached, c.hasCached)
	u.CacheWrite = n(c.written, c.hasWritten)
	return u
}

// turnUsage is a turn's usage. Codex exec reports the thread's total so far
// (a resumed thread's includes the turns of the earlier processes), so the
// turn's share is the difference from the last total this mapper saw for
// the thread.
func (m *Codex) turnUsage(v gjson.Result) archive.Usage {
	total := readCodexTokens(v)
	turn := total
	if m.thread != "" && m.totalThread == m.thread {
		if d, ok := total.since(m.total); ok {
			turn = d
		}
	}
	m.total, m.totalThread = total, m.thread
	return turn.usage()
}

// CodexTokens reads a usage object in codex's fields (input_tokens,
// cached_input_tokens, cache_write_input_tokens, output_tokens), as exec's
// turn.completed and codex's own session log report it.
func CodexTokens(usage []byte) archive.Usage {
	return readCodexTokens(gjson.ParseBytes(usage)).usage()
}
