package itemmap

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/jsonline"
)

// CodexApp maps what a `codex app-server` writes (JSON-RPC notifications
// and requests, one a line) onto items. It turns the server's notifications
// into the events of `codex exec --json` and hands them to a Codex mapper,
// so both transports show, record and count the same way; the app-server's
// own extras (text deltas, approval requests) are handled here. On a
// thread started with experimentalRawEvents the server also sends each
// Responses API item (rawResponseItem/completed): its tool calls and their
// outputs make the history keep the model's own bytes (see Codex); the
// items shown stay those of the item notifications. Responses
// to the client's requests are the caller's: Line ignores them. It is not
// safe for concurrent use.
type CodexApp struct {
	m *Codex

	parts     map[string]int             // reasoning summary parts begun, by item id
	total     json.RawMessage            // the thread's usage so far, as exec reports it
	last      json.RawMessage            // the turn's last API request's usage, in exec's fields
	window    int64                      // the model's context window as last reported, 0 when not
	approvals map[string]string          // request id → codex item id
	questions map[string]*codexQuestions // requestUserInput requests not yet answered, by request id
	// elicitations are the MCP tool approvals (mcpServer/elicitation/request)
	// not yet answered, by request id.
	elicitations map[string]bool

	doc, itemDoc jsonline.Doc // the line being read, and a commandExecution item
}

// TakeElicitation reports whether request requestID is an MCP tool's
// approval that codex asked as an MCP elicitation: its answer is
// {"action": "accept"|"decline", "content": null}, with
// "_meta": {"persist": "session"} for the rest of the session, not a
// decision. It forgets the request.
func (a *CodexApp) TakeElicitation(requestID string) bool {
	ok := a.elicitations[requestID]
	delete(a.elicitations, requestID)
	return ok
}

// QuestionsTool is the tool name of an Approval that asks the user to
// choose (Claude Code's AskUserQuestion; Codex's requestUserInput is
// presented the same way). Its Input is {"questions": [{question, header,
// options: [{label, description}], multiSelect, isOther}]}: isOther false
// says the question takes no answer of the user's own words (Codex's
// question without it, an MCP server's form); absent, it does (Claude
// Code's always do). An answer allows it with "answers" added to the
// input: an object of each question's text to the label chosen, or the
// user's own words, or a multi-select's labels joined as Claude Code joins
// them; and "annotations", an object of a question's text to {"notes"}
// where the user added a note to the label chosen (session.Replied).
const QuestionsTool = "AskUserQuestion"

// codexQuestions is a request that asks the user to choose (requestUserInput,
// or an MCP server's form): its questions item and each question.
type codexQuestions struct {
	item archive.Item
	qs   []askedQuestion
	form bool // an MCP elicitation: answered with an action and content
}

// askedQuestion is one question of a request: its id (requestUserInput's,
// or the form's field), text, header and options, the value each option's
// label stands for in a form's content, and whether a form needs it.
type askedQuestion struct {
	id, text, header string
	labels           []string
	descriptions     []string
	values           []any
	required         bool
	other            bool // takes an answer in the user's own words
}

// NewCodexApp returns a mapper that names new items with newID (nil: random
// UUIDs). Use one for every process of one thread.
func NewCodexApp(newID IDFunc) *CodexApp {
	return &CodexApp{m: NewCodex(newID), parts: make(map[string]int), approvals: make(map[string]string),
		questions: make(map[string]*codexQuestions), elicitations: make(map[string]bool)}
}

// InTurn reports whether a turn has started and not ended.
func (a *CodexApp) InTurn() bool { return a.m.InTurn() }

// UserMessage adds msg, a message the user sent into the running turn
// (steering), to the turn's history where codex took it.
func (a *CodexApp) UserMessage(msg archive.Message) { a.m.UserMessage(msg) }

// Finish ends a turn that stopped without turn/completed (the server died)
// or was interrupted: the message that was streaming is kept as it stood,
// running tools are cancelled.
func (a *CodexApp) Finish(interrupted bool, text, detail string) Result {
	clear(a.parts)
	return a.m.Finish(interrupted, text, detail)
}

// Answered records how the host answered an approval request. A declined
// command or patch shows as denied when codex reports it declined.
func (a *CodexApp) Answered(requestID string, allowed bool) {
	delete(a.approvals, requestID)
}

// exec feeds one exec-mode event to the Codex mapper.
func (a *CodexApp) exec(ev map[string]any) Result {
	data, err := json.Marshal(ev)
	if err != nil {
		return Result{Skipped: true}
	}
	// Valid JSON, made of a line that was checked: no second check, whose
	// depth limit the wrapping could cross. The bytes are this call's
	// alone: what is read of them may share them.
	return a.m.event(ownedJSON(data))
}

// Unwrap reads a line of a recorded app-server conversation (Recorded):
// a record {"dir": …, "msg": …} holds the message the server wrote
// ("out") or the client ("in", false); a line that is no record is
// itself.
func (a *CodexApp) Unwrap(line []byte) ([]byte, bool) {
	rec := gjson.ParseBytes(line)
	if !rec.Get("dir").Exists() {
		return line, true
	}
	if rec.Get("dir").String() != "out" {
		return nil, false
	}
	return []byte(rec.Get("msg").Raw), true
}

// Line maps one line from the server. A line nested deeper than MaxDepth,
// or one that starts as an object but is not valid JSON, is skipped with a
// notice that says so.
func (a *CodexApp) Line(line []byte) Result {
	if uint64(len(line)) >= 1<<31 {
		// Longer than a Doc lays out: read as the line it is.
		r, ok := readLine(a.m.newID, "codex", line)
		if !ok {
			return r
		}
		msg := gjson.ParseBytes(line)
		return a.message(msg.Get("method").String(), msg.Get("id"), msg.Get("params"))
	}
	// One pass validates the line and finds its fields; the params are
	// copied, as what is read of them may be kept.
	if !a.doc.Parse(line) {
		return badLine(a.m.newID, "codex", line)
	}
	var f [3]jsonline.Value
	a.doc.Root().ReadFields(messageFields, f[:])
	method, id, params := f[0].String(), f[1].Result(), f[2].Result()
	a.doc.Reset()
	return a.message(method, id, params)
}

// LineOwned is Line for a line the caller hands over: one it never changes
// afterwards (a line it made for this call alone), so that what is read of
// it shares its bytes rather than a copy.
func (a *CodexApp) LineOwned(line []byte) Result {
	if uint64(len(line)) >= 1<<31 {
		return a.Line(line)
	}
	if !a.doc.Parse(line) {
		return badLine(a.m.newID, "codex", line)
	}
	var f [3]jsonline.Value
	a.doc.Root().ReadFields(messageFields, f[:])
	method := f[0].String()
	var id, params gjson.Result
	if f[1].Exists() {
		id = gjson.Parse(f[1].RawView())
	}
	if f[2].Exists() {
		params = gjson.Parse(f[2].RawView())
	}
	a.doc.Reset()
	return a.message(method, id, params)
}

// messageFields are the fields of a JSON-RPC message Line reads.
var messageFields = []string{"method", "id", "params"}

// message maps one message: a notification, or a request when it has an
// id.
func (a *CodexApp) message(method string, id, p gjson.Result) Result {
	if method == "" {
		return Result{} // a response to one of the client's requests
	}
	if id.Exists() {
		return a.request(id.Raw, method, p)
	}
	switch method {
	case "thread/started":
		return a.exec(map[string]any{"type": "thread.started", "thread_id": p.Get("thread.id").String(),
			"cwd": p.Get("thread.cwd").String()})
	case "turn/started":
		a.last = nil
		return a.exec(map[string]any{"type": "turn.started"})
	case "item/started", "item/completed":
		return a.item(p.Get("item"), method == "item/completed")
	case "item/agentMessage/delta":
		var r Result
		a.m.appendText(p.Get("itemId").String(), codexMessage, archive.TypeAssistant, p.Get("delta").String(), &r)
		return r
	case "item/reasoning/summaryPartAdded":
		id := p.Get("itemId").String()
		var r Result
		if a.parts[id] > 0 {
			a.m.appendText(id, codexReasoning, archive.TypeThinking, "\n", &r)
		}
		a.parts[id]++
		return r
	case "item/reasoning/summaryTextDelta":
		var r Result
		a.m.appendText(p.Get("itemId").String(), codexReasoning, archive.TypeThinking, p.Get("delta").String(), &r)
		return r
	case "thread/tokenUsage/updated":
		a.total = execTokens(p.Get("tokenUsage.total"))
		a.last = execTokens(p.Get("tokenUsage.last"))
		if w := p.Get("tokenUsage.modelContextWindow").Int(); w > 0 {
			a.window = w
		}
		return Result{}
	case "item/commandExecution/outputDelta":
		var r Result
		a.m.commandOutput(p.Get("itemId").String(), p.Get("delta").String(), &r)
		return r
	case "turn/plan/updated":
		// The whole plan each time, and no item for it: the turn's todo
		// list, as exec shows it, with each step's status.
		var steps []any
		for _, s := range p.Get("plan").Array() {
			status := s.Get("status").String()
			steps = append(steps, map[string]any{"text": s.Get("step").String(),
				"completed": status == PlanCompleted, "status": status})
		}
		return a.exec(map[string]any{"type": "item.updated", "item": map[string]any{
			"id": codexPlanID, "type": codexTodo, "items": orEmptyList(steps)}})
	case "error":
		msg := p.Get("error.message").String()
		if p.Get("willRetry").Bool() {
			return a.exec(map[string]any{"type": "error", "message": msg})
		}
		return Result{}
	case "turn/completed":
		return a.turnCompleted(p.Get("turn"))
	case "rawResponseItem/completed":
		return a.rawItem(p.Get("item"))
	}
	// Status changes, diffs, rate limits, warnings: nothing to show.
	return Result{}
}

func joinParts(parts []string) string {
	var kept []string
	for _, s := range parts {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, "\n")
}

// rawItem records a raw response item (sent on a thread started with
// experimentalRawEvents): a tool call as the model produced it, or the
// output codex sent back to the model for one. Messages, reasoning and the
// rest are shown from the item notifications, not from these; the images
// in an output (view_image's) are shown on the call's item.
func (a *CodexApp) rawItem(it gjson.Result) Result {
	var r Result
	if a.m.turn == nil {
		return r // outside a turn: nothing to add it to
	}
	callID := it.Get("call_id").String()
	if callID == "" {
		return r
	}
	switch it.Get("type").String() {
	case "function_call":
		a.m.rawToolCall(callID, it.Get("name").String(), it.Get("arguments").String())
	case "custom_tool_call":
		a.m.rawToolCall(callID, it.Get("name").String(), it.Get("input").String())
	case "local_shell_call":
		// The model's action object is its call.
		a.m.rawToolCall(callID, "local_shell", it.Get("action").Raw)
	case "function_call_output", "custom_tool_call_output":
		out := it.Get("output")
		text := out.Raw // content items: as codex sent them
		if out.Type == gjson.String {
			text = out.String()
		}
		var images []Image
		if out.IsArray() {
			if t, ims, ok := outputImages(out); ok {
				text, images = t, ims
			}
		}
		a.m.rawToolOutput(callID, text, images)
		if len(images) > 0 {
			a.m.toolImages(callID, images, &r)
		}
	}
	return r
}

// outputImages is a tool output's content items as their text (the
// input_text items joined by newlines) and their images (input_image data
// URLs), ok when it holds an image format 1 keeps; an item of another kind,
// or an image it cannot keep, leaves the output as codex sent it.
func outputImages(out gjson.Result) (string, []Image, bool) {
	var parts []string
	var images []Image
	for _, c := range out.Array() {
		switch c.Get("type").String() {
		case "input_text":
			parts = append(parts, c.Get("text").String())
		case "input_image":
			im, ok := decodeDataURL(c.Get("image_url").String())
			if !ok {
				return "", nil, false
			}
			images = append(images, im)
		default:
			return "", nil, false
		}
	}
	return strings.Join(parts, "\n"), images, len(images) > 0
}

// ViewedImage gives the mapper the image a view_image call (its item id,
// the model's call_id) looked at, as the caller read it from the file the
// imageView item named: the mapper itself reads no file. It is kept when
// codex did not send the image itself (the output in the raw response
// items, which wins): the history holds it after the call's result, the
// item and its view show it.
func (a *CodexApp) ViewedImage(itemID string, im Image) Result {
	var r Result
	t := a.m.turn
	if t == nil {
		return r
	}
	if rc := t.raw[itemID]; rc != nil && len(rc.images) > 0 {
		return r
	}
	a.m.toolImages(itemID, []Image{im}, &r)
	return r
}

// codexPlanID is the codex item id the mapper gives a turn's plan (the
// app-server's plan updates have no item of their own).
const codexPlanID = "turn-plan"

func orEmptyList(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// execTokens converts app-server token counts to exec's usage fields.
func execTokens(t gjson.Result) json.RawMessage {
	u := map[string]any{}
	for from, to := range map[string]string{"inputTokens": "input_tokens", "cachedInputTokens": "cached_input_tokens",
		"cacheWriteInputTokens": "cache_write_input_tokens", "outputTokens": "output_tokens", "reasoningOutputTokens": "reasoning_output_tokens"} {
		if v := t.Get(from); v.Type == gjson.Number {
			u[to] = json.Number(v.Raw)
		}
	}
	data, _ := json.Marshal(u)
	return data
}

// appStatus converts an app-server item status to exec's.
func appStatus(s string) string {
	if s == "inProgress" {
		return "in_progress"
	}
	return s
}

// item converts an app-server item to exec's form.
func (a *CodexApp) item(it gjson.Result, completed bool) Result {
	id := it.Get("id").String()
	ev := map[string]any{"id": id}
	switch it.Get("type").String() {
	case "agentMessage":
		if !completed {
			return Result{} // its text comes as deltas
		}
		return a.execItem(completed, id, codexMessage, "text", it.Get("text"))
	case "reasoning":
		ev["type"] = codexReasoning
		if !completed {
			return Result{}
		}
		var parts []string
		for _, s := range it.Get("summary").Array() {
			parts = append(parts, s.String())
		}
		if len(parts) == 0 {
			return Result{} // only raw content, which exec does not show either
		}
		ev["text"] = joinParts(parts)
		delete(a.parts, id)
	case "commandExecution":
		return a.command(it, id, completed)
	case "fileChange":
		ev["type"] = codexFiles
		var changes []any
		for _, c := range it.Get("changes").Array() {
			ch := map[string]any{"path": c.Get("path").String(), "kind": c.Get("kind.type").String()}
			if mv := c.Get("kind.move_path").String(); mv != "" {
				ch["move_path"] = mv
			}
			if d := c.Get("diff").String(); d != "" {
				ch["diff"] = d
			}
			changes = append(changes, ch)
		}
		ev["changes"] = changes
		ev["status"] = appStatus(it.Get("status").String())
	case "mcpToolCall":
		ev["type"] = codexMCP
		ev["server"] = it.Get("server").String()
		ev["tool"] = it.Get("tool").String()
		if v := it.Get("arguments"); v.Exists() {
			ev["arguments"] = json.RawMessage(v.Raw)
		}
		if v := it.Get("result"); v.Exists() {
			ev["result"] = json.RawMessage(v.Raw)
		}
		if v := it.Get("error"); v.Exists() {
			ev["error"] = json.RawMessage(v.Raw)
		}
		ev["status"] = appStatus(it.Get("status").String())
	case "webSearch":
		ev["type"] = codexSearch
		ev["query"] = it.Get("query").String()
	case "imageView":
		ev["type"] = codexImage
		ev["path"] = it.Get("path").String()
	case "enteredReviewMode":
		// /review (review/start): its findings follow as an agentMessage,
		// the same text as exitedReviewMode's, which is not shown twice.
		if !completed {
			return Result{}
		}
		text := "Codex is reviewing the changes."
		if what := it.Get("review").String(); what != "" {
			text = "Codex is reviewing: " + what
		}
		return a.notice(text)
	case "contextCompaction":
		// /compact (thread/compact/start), or codex's own when the context
		// filled up: in progress from its start, its notice once it
		// completed (codex keeps no summary a user may read).
		id := it.Get("id").String()
		if !completed {
			return Result{Compactions: []Compaction{{ID: id, Status: CompactionInProgress}}}
		}
		r := a.notice("Codex compacted the conversation.")
		r.Changes[len(r.Changes)-1].Compaction = &Compaction{ID: id}
		r.Compactions = []Compaction{{ID: id, Status: CompactionCompleted}}
		return r
	default:
		return Result{} // the user's own message, and kinds not shown
	}
	typ := "item.started"
	if completed {
		typ = "item.completed"
	}
	return a.exec(map[string]any{"type": typ, "item": ev})
}

// execItem maps an exec item event of the item id of kind typ whose
// only field besides is key, the string value (an app-server item's field
// of long text, copied as it was sent rather than decoded and encoded
// again).
func (a *CodexApp) execItem(completed bool, id, typ, key string, value gjson.Result) Result {
	b := a.execHead(completed, id, typ, nil)
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = appendStringValue(b, value)
	b = append(b, "}}"...)
	// Valid JSON, made of a line that was checked (see exec).
	return a.m.event(ownedJSON(b))
}

// execHead begins an exec item event of the item id of kind typ, with
// fields (each "key":value), its item left open.
func (a *CodexApp) execHead(completed bool, id, typ string, fields [][]byte) []byte {
	head := `{"type":"item.started","item":{"id":`
	if completed {
		head = `{"type":"item.completed","item":{"id":`
	}
	b := make([]byte, 0, 256)
	b = append(b, head...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"type":`...)
	b = canonjson.AppendString(b, typ)
	for _, f := range fields {
		b = append(b, ',')
		b = append(b, f...)
	}
	return b
}

// ownedJSON parses JSON bytes made for this call alone, never changed
// afterwards: the values read share them.
func ownedJSON(b []byte) gjson.Result {
	return gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
}

// appendStringValue appends v's string (gjson's String) as a JSON string:
// a string as it was sent, escaped as it was, anything else encoded.
func appendStringValue(b []byte, v gjson.Result) []byte {
	if v.Type == gjson.String {
		return append(b, v.Raw...)
	}
	return canonjson.AppendString(b, v.String())
}

// command maps a commandExecution item, its output as it was sent. Its
// fields are read in one pass (the output, however long, is skipped in
// one step and never decoded here); the exec event has exit_code and
// command_actions (null when the item has none) before the output, so
// that the Codex mapper finds them without going past it.
func (a *CodexApp) command(it gjson.Result, id string, completed bool) Result {
	var f [5]jsonline.Value
	if a.itemDoc.Parse(unsafe.Slice(unsafe.StringData(it.Raw), len(it.Raw))) {
		a.itemDoc.Root().ReadFields(commandFields, f[:])
	}
	defer a.itemDoc.Reset()
	cmd, out, exit, status, acts := f[0], f[1], f[2], f[3], f[4]
	var fields [][]byte
	field := func(key string, value []byte) {
		fields = append(fields, append([]byte(`"`+key+`":`), value...))
	}
	field("command", appendValueString(nil, cmd))
	if exit.Type() == gjson.Number {
		field("exit_code", []byte(exit.RawView()))
	} else {
		field("exit_code", []byte("null"))
	}
	field("status", canonjson.AppendString(nil, appStatus(status.String())))
	var buf bytes.Buffer
	if acts.IsArray() && json.Compact(&buf, []byte(acts.RawView())) == nil {
		field("command_actions", buf.Bytes())
	} else {
		field("command_actions", []byte("null"))
	}
	b := a.execHead(completed, id, codexCommand, fields)
	b = append(b, `,"aggregated_output":`...)
	b = appendValueString(b, out)
	return a.m.event(ownedJSON(append(b, "}}"...)))
}

// commandFields are the fields of a commandExecution item read.
var commandFields = []string{"command", "aggregatedOutput", "exitCode", "status", "commandActions"}

// appendValueString is appendStringValue for a jsonline value.
func appendValueString(b []byte, v jsonline.Value) []byte {
	if v.Type() == gjson.String {
		return append(b, v.RawView()...)
	}
	return canonjson.AppendString(b, v.String())
}

// notice shows text as a notice of the turn.
func (a *CodexApp) notice(text string) Result {
	var r Result
	a.m.ensureTurn()
	it := a.m.newItem(archive.TypeNotice)
	it.Set("text", text)
	a.m.add(&r, it)
	return r
}

// turnCompleted ends the turn as the server reports it.
func (a *CodexApp) turnCompleted(turn gjson.Result) Result {
	switch turn.Get("status").String() {
	case "interrupted":
		return a.Finish(true, "", "")
	case "failed":
		msg := turn.Get("error.message").String()
		if msg == "" {
			msg = "Codex reported that the turn failed."
		}
		clear(a.parts)
		return a.exec(map[string]any{"type": "turn.failed", "error": map[string]any{"message": msg}})
	}
	clear(a.parts)
	usage := a.total
	if usage == nil {
		usage = json.RawMessage("{}")
	}
	r := a.exec(map[string]any{"type": "turn.completed", "usage": usage})
	if r.End != nil && a.last != nil {
		// The last request's own usage, which exec mode does not report.
		r.End.LastRound = readCodexTokens(gjson.ParseBytes(a.last)).usage()
	}
	if r.End != nil {
		r.End.ContextWindow = a.window
	}
	a.last = nil
	return r
}

// request maps a request from the server: an approval becomes a
// toolApproval item and an Approval for the host; any other request is
// handed to the caller to refuse.
func (a *CodexApp) request(id, method string, p gjson.Result) Result {
	var r Result
	itemID := p.Get("itemId").String()
	if itemID == "" {
		itemID = p.Get("callId").String()
	}
	var name, summary string
	input := map[string]any{}
	switch method {
	case "item/commandExecution/requestApproval", "execCommandApproval":
		name = codexShellTool
		cmd := p.Get("command")
		full := cmd.String()
		if cmd.IsArray() {
			var argv []string
			for _, s := range cmd.Array() {
				argv = append(argv, s.String())
			}
			full = strings.Join(argv, " ")
		}
		summary = firstLine(unwrapCommand(full))
		input["command"] = unwrapCommand(full)
		if cwd := p.Get("cwd").String(); cwd != "" {
			input["cwd"] = cwd
		}
	case "item/fileChange/requestApproval", "applyPatchApproval":
		name = codexPatchTool
		if t := a.m.turn; t != nil {
			if e := t.byID[itemID]; e != nil && !e.item.IsZero() {
				summary = e.item.String("summary")
			}
		}
		if g := p.Get("grantRoot").String(); g != "" {
			input["grantRoot"] = g
		}
	case "item/tool/requestUserInput":
		return a.askUser(id, itemID, p)
	case "mcpServer/elicitation/request":
		if p.Get("_meta.codex_approval_kind").String() != "mcp_tool_call" {
			// An MCP server's own form: its choices are questions; one
			// that needs typed input (or a URL to visit) is refused.
			if qs, ok := formQuestions(p); ok {
				return a.ask(id, "", "elicitation", qs)
			}
			r.ControlRequests = append(r.ControlRequests, ControlRequest{RequestID: id, Subtype: method})
			return r
		}
		// Codex asks whether an MCP tool may run; the call it is about
		// started just before (it has no item id: the running call of
		// that server's tool).
		name = joinNonEmpty(".", p.Get("serverName").String(), p.Get("_meta.tool_name").String())
		if t := a.m.turn; t != nil {
			for _, e := range t.byID {
				if e.kind == codexMCP && !e.finished && !e.item.IsZero() && e.item.String("name") == name {
					itemID = e.id
				}
			}
		}
		params := p.Get("_meta.tool_params")
		if params.IsObject() {
			json.Unmarshal([]byte(params.Raw), &input)
		}
		summary = toolSummary("", params)
		if summary == "" && params.IsObject() && params.Raw != "{}" {
			summary = firstLine(compactJSON(params.Raw))
		}
		a.elicitations[id] = true
	default:
		r.ControlRequests = append(r.ControlRequests, ControlRequest{RequestID: id, Subtype: method})
		return r
	}
	reason := p.Get("reason").String()
	if reason == "" {
		reason = p.Get("message").String() // an elicitation's question
	}
	if reason != "" {
		input["reason"] = reason
	}
	it := a.m.newItem(archive.TypeToolApproval)
	it.Set("name", name)
	it.Set("summary", summary)
	if reason != "" {
		it.Set("detail", reason)
	}
	a.m.add(&r, it)
	raw, _ := json.Marshal(input)
	ap := Approval{RequestID: id, ToolUseID: itemID, ToolName: name, Input: raw, ItemID: it.ID(), Reason: p.Get("reason").String()}
	if t := a.m.turn; t != nil {
		if e := t.byID[itemID]; e != nil && !e.item.IsZero() {
			ap.ToolItemID = e.item.ID()
			// The call as it shows: an edit's diffs, to review before
			// they are written.
			ap.Tool = e.view
		}
	}
	if ap.Tool == nil && name == codexShellTool {
		ap.Tool = commandView(input["command"].(string), "")
	}
	if name == codexShellTool {
		ap.Cwd = p.Get("cwd").String()
		ap.Escalated = a.escalated(itemID, p)
	}
	a.approvals[id] = itemID
	r.Approvals = append(r.Approvals, ap)
	return r
}

// escalated reports whether the command of an approval request (its call
// callID) may run outside the sandbox. The request does not say: codex
// asks both about a command the model wants to run outside it and about
// one its policy finds dangerous, which then runs inside. The model's own
// call does (the raw response item, sent before the request on a thread
// started with experimentalRawEvents): its sandbox_permissions (or the
// older with_escalated_permissions, additional_permissions). A call not
// seen (a resumed thread), or of a tool not known, may; so does a request
// for more than the sandbox gives (additionalPermissions, or network
// access: networkApprovalContext).
func (a *CodexApp) escalated(callID string, p gjson.Result) bool {
	for _, more := range []string{"additionalPermissions", "networkApprovalContext"} {
		if v := p.Get(more); v.Exists() && v.Type != gjson.Null {
			return true // more than the sandbox gives: files, or the network
		}
	}
	if k := p.Get("kind").String(); k != "" && k != "command" {
		return true
	}
	t := a.m.turn
	if t == nil {
		return true
	}
	rc := t.raw[callID]
	if rc == nil || !rc.hasCall {
		return true
	}
	switch rc.name {
	case "exec_command", "shell", "shell_command", "local_shell":
	default:
		return true
	}
	args := gjson.Parse(rc.args)
	if !args.IsObject() {
		return true
	}
	sp := args.Get("sandbox_permissions").String()
	extra := args.Get("additional_permissions")
	return (sp != "" && sp != "use_default") || args.Get("with_escalated_permissions").Bool() ||
		(extra.Exists() && extra.Type != gjson.Null)
}

// askUser maps a requestUserInput request (the model's request_user_input
// call, callID).
func (a *CodexApp) askUser(id, callID string, p gjson.Result) Result {
	var qs []askedQuestion
	for _, qu := range p.Get("questions").Array() {
		q := askedQuestion{id: qu.Get("id").String(), text: qu.Get("question").String(), header: qu.Get("header").String(),
			other: qu.Get("isOther").Bool()}
		for _, o := range qu.Get("options").Array() {
			q.labels = append(q.labels, o.Get("label").String())
			q.descriptions = append(q.descriptions, o.Get("description").String())
		}
		qs = append(qs, q)
	}
	return a.ask(id, callID, "request_user_input", qs)
}

// formQuestions reads an MCP elicitation's form (requestedSchema) as
// questions, one a field: a field of choices (enum, with enumNames as
// their labels, or oneOf consts and titles) or a yes or no (boolean). A
// field of another kind (typed input) is left out when the form does
// without it; ok is false when the form requires one, has no question, or
// the request is no form.
func formQuestions(p gjson.Result) (qs []askedQuestion, ok bool) {
	if m := p.Get("mode").String(); m != "" && m != "form" {
		return nil, false
	}
	required := map[string]bool{}
	for _, k := range p.Get("requestedSchema.required").Array() {
		required[k.String()] = true
	}
	header := firstLine(p.Get("message").String())
	ok = true
	p.Get("requestedSchema.properties").ForEach(func(k, f gjson.Result) bool {
		q := askedQuestion{id: k.String(), header: header, required: required[k.String()]}
		q.text = f.Get("title").String()
		if q.text == "" {
			q.text = f.Get("description").String()
		}
		if q.text == "" {
			q.text = k.String()
		}
		switch {
		case f.Get("enum").IsArray():
			names := f.Get("enumNames").Array()
			for i, v := range f.Get("enum").Array() {
				label := v.String()
				if i < len(names) && names[i].String() != "" {
					label = names[i].String()
				}
				q.labels, q.values = append(q.labels, label), append(q.values, v.Value())
			}
		case f.Get("oneOf").IsArray():
			for _, o := range f.Get("oneOf").Array() {
				label := o.Get("title").String()
				if label == "" {
					label = o.Get("const").String()
				}
				q.labels, q.values = append(q.labels, label), append(q.values, o.Get("const").Value())
			}
		case f.Get("type").String() == "boolean":
			q.labels, q.values = []string{"Yes", "No"}, []any{true, false}
		default:
			if q.required {
				ok = false
				return false
			}
			return true
		}
		q.descriptions = make([]string, len(q.labels))
		qs = append(qs, q)
		return true
	})
	return qs, ok && len(qs) > 0
}

// ask shows a request's questions (a questions item and a toolApproval
// named name) and hands the host an Approval of QuestionsTool;
// AnswerQuestions gives its answer.
func (a *CodexApp) ask(id, callID, name string, qs []askedQuestion) Result {
	var r Result
	a.m.ensureTurn()
	q := &codexQuestions{qs: qs, form: name == "elicitation"}
	shown, asked := []any{}, []any{}
	for _, qu := range qs {
		labels, opts := []any{}, []any{}
		for i, l := range qu.labels {
			labels = append(labels, l)
			opts = append(opts, map[string]any{"label": l, "description": qu.descriptions[i]})
		}
		shown = append(shown, map[string]any{"question": qu.text, "options": labels})
		asked = append(asked, map[string]any{"question": qu.text, "header": qu.header, "options": opts, "multiSelect": false,
			"isOther": qu.other})
	}
	q.item = a.m.newItem(archive.TypeQuestions)
	q.item.Set("questions", shown)
	a.m.add(&r, q.item)
	it := a.m.newItem(archive.TypeToolApproval)
	it.Set("name", name)
	if len(qs) > 0 {
		it.Set("summary", firstLine(qs[0].text))
	}
	a.m.add(&r, it)
	raw, _ := json.Marshal(map[string]any{"questions": asked})
	a.questions[id] = q
	r.Approvals = append(r.Approvals, Approval{RequestID: id, ToolUseID: callID, ToolName: QuestionsTool, Input: raw,
		ItemID: it.ID(), ToolItemID: q.item.ID()})
	return r
}

// AnswerQuestions gives a questions request (requestUserInput, or an MCP
// server's form) its answers (each question's text to the label chosen, or
// the user's own words; none when the user did not answer) and the notes
// the user added to an answer (by question text): the questions item
// keeps the answers, and result is the response codex takes: {"answers":
// {question id: {"answers": [label, "user_note: " + note]}}} (the note as
// codex's own terminal adds it, when there is one), or for a form
// {"action": "accept", "content": {field: value}} ("decline" when a field
// it requires, or every field, has no answer). ok is false when requestID
// is no such request.
func (a *CodexApp) AnswerQuestions(requestID string, answers, notes map[string]string) (result map[string]any, r Result, ok bool) {
	q := a.questions[requestID]
	if q == nil {
		return nil, r, false
	}
	delete(a.questions, requestID)
	delete(a.approvals, requestID)
	out := map[string]any{}
	byText := map[string]string{}
	declined := false
	for _, qu := range q.qs {
		ans, found := answers[qu.text]
		i := slices.Index(qu.labels, ans)
		switch {
		case found && !q.form:
			list := []any{ans}
			if note := notes[qu.text]; note != "" {
				list = append(list, "user_note: "+note)
			}
			out[qu.id] = map[string]any{"answers": list}
		case found && i >= 0:
			out[qu.id] = qu.values[i]
		case qu.required:
			declined = true
		}
		if found {
			byText[qu.text] = ans
		}
	}
	if len(byText) > 0 {
		data, _ := json.Marshal(map[string]any{"answers": byText})
		if withAnswers(q.item, gjson.ParseBytes(data), "") {
			r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: q.item})
		}
	}
	if !q.form {
		return map[string]any{"answers": out}, r, true
	}
	if declined || len(out) == 0 {
		return map[string]any{"action": "decline", "content": nil}, r, true
	}
	return map[string]any{"action": "accept", "content": out}, r, true
}
