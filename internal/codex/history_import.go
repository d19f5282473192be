package codex

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
	"spbridge/internal/restore"
)

// codexImport maps a Codex rollout. Its lines are what the app-server
// tells a client, in another dress: the items completed (event_msg
// item_completed), the model's own response items (response_item: its
// tool calls and their outputs byte for byte), the token counts and the
// turns' starts and ends. Each is given the app-server's form and goes
// through the same mapper as a live app-server turn, so an imported
// conversation shows, keeps and counts exactly as one run in spbridge.
type codexImport struct {
	newID  itemmap.IDFunc
	rep    *history.Report
	m      *itemmap.CodexApp
	conv   *archive.Conversation
	turn   history.Turn
	images []archive.Block // the images of the user's last response item, for their message
	// marks are where each of the user's turns began (its items, its
	// history), for a rollback to cut at.
	marks []turnMark
	model string
	// legacy: the rollout is of the legacy history mode (or older than
	// the mode), whose answers are event_msg agent_message lines, not
	// completed items.
	legacy bool
	// doc is the line being read: its values borrow the line's bytes,
	// what is kept is copied (String), what is passed on is sent as it
	// is (RawView).
	doc jsonline.Doc
}

func newCodexImport(newID itemmap.IDFunc, rep *history.Report) *codexImport {
	return &codexImport{newID: newID, rep: rep, m: itemmap.NewCodexApp(newID), conv: &archive.Conversation{}}
}

// codexQuiet are the kinds of rollout lines that show nothing.
var codexQuiet = map[string]bool{"world_state": true, "token_usage_record": true}

func (ci *codexImport) Line(line []byte) bool {
	if len(line) == 0 || line[0] != '{' || !ci.doc.Parse(line) {
		return false
	}
	v := ci.doc.Root()
	p := v.Get("payload")
	switch v.Get("type").String() {
	case "session_meta":
		if ci.rep.ID == "" {
			ci.rep.ID = p.Get("id").String()
			ci.rep.Cwd = p.Get("cwd").String()
			ci.legacy = p.Get("history_mode").String() != "paginated"
			ci.send("thread/started", map[string]any{"thread": map[string]any{"id": ci.rep.ID, "cwd": ci.rep.Cwd}})
		} else if id := p.Get("id").String(); id != "" {
			// A later file of the thread (after a revert), or a fork's
			// own after its parent's turns: the thread is the last's.
			ci.rep.ID = id
			if cwd := p.Get("cwd").String(); cwd != "" {
				ci.rep.Cwd = cwd
			}
		}
	case "turn_context":
		if m := p.Get("model").String(); m != "" {
			ci.model = m
		}
	case "response_item":
		ci.responseItem(p)
	case "event_msg":
		ci.event(p)
	case "compacted":
		ci.notice("Codex compacted the conversation.")
	default:
		return codexQuiet[v.Get("type").String()]
	}
	return true
}

// send feeds the mapper one app-server notification.
func (ci *codexImport) send(method string, params map[string]any) {
	line, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		return
	}
	ci.sendLine(line)
}

// sendLine feeds the mapper one app-server notification, as JSON made
// for it alone.
func (ci *codexImport) sendLine(line []byte) {
	r := ci.m.LineOwned(line)
	history.ApplyResult(ci.conv, r)
	if r.End != nil {
		ci.turn.Model = ci.model
		history.EndTurn(ci.conv, &ci.turn, r.End, Provider)
	}
}

func (ci *codexImport) notice(text string) {
	ci.conv.Items = append(ci.conv.Items, archive.ItemFromMap(map[string]any{"id": ci.newID(), "type": archive.TypeNotice, "text": text}))
}

func (ci *codexImport) responseItem(p jsonline.Value) {
	switch p.Get("type").String() {
	case "message":
		if p.Get("role").String() != "user" {
			return
		}
		// The images of the user's message travel here, as data URLs;
		// the UserMessage item that follows names only their files.
		ci.images = nil
		for _, c := range p.Get("content").Array() {
			if c.Get("type").String() != "input_image" {
				continue
			}
			if b, ok := dataURLImage(c.Get("image_url").String()); ok {
				ci.images = append(ci.images, b)
			}
		}
	case "function_call":
		if p.Get("name").String() == "update_plan" {
			ci.plan(p.Get("arguments").String())
		}
		ci.raw(p)
	case "custom_tool_call", "local_shell_call", "function_call_output", "custom_tool_call_output":
		ci.raw(p)
	}
}

func (ci *codexImport) raw(p jsonline.Value) {
	switch typ := p.Get("type").String(); {
	case typ == "function_call" || typ == "custom_tool_call",
		(typ == "function_call_output" || typ == "custom_tool_call_output") && p.Get("output").Type() == gjson.String:
		// The mapper keeps these items' strings, never their bytes: the
		// item goes as the line had it.
		raw := p.RawView()
		b := make([]byte, 0, len(raw)+64)
		b = append(b, `{"method":"rawResponseItem/completed","params":{"item":`...)
		b = append(b, raw...)
		ci.sendLine(append(b, "}}"...))
	default:
		// A local shell call's action and an output of content items are
		// kept as JSON: as encoding/json writes them.
		ci.send("rawResponseItem/completed", map[string]any{"item": json.RawMessage(p.RawView())})
	}
}

// plan shows an update_plan call's plan, as the app-server's
// turn/plan/updated does.
func (ci *codexImport) plan(args string) {
	a := gjson.Parse(args)
	var steps []any
	for _, s := range a.Get("plan").Array() {
		steps = append(steps, map[string]any{"step": s.Get("step").String(), "status": camel(s.Get("status").String())})
	}
	if steps != nil {
		ci.send("turn/plan/updated", map[string]any{"plan": steps})
	}
}

func (ci *codexImport) event(p jsonline.Value) {
	switch p.Get("type").String() {
	case "task_started", "turn_started":
		ci.startTurn()
	case "user_message":
		if ci.turn.User == nil {
			ci.userMessage(p.Get("message").String())
		}
	case "item_completed":
		ci.item(p.Get("item"))
	case "token_count":
		info := p.Get("info")
		if !info.IsObject() {
			return
		}
		params := map[string]any{"tokenUsage": map[string]any{
			"total": camelTokens(info.Get("total_token_usage")), "last": camelTokens(info.Get("last_token_usage")),
			"modelContextWindow": info.Get("model_context_window").Int()}}
		ci.send("thread/tokenUsage/updated", params)
	case "task_complete", "turn_complete":
		if ci.m.InTurn() || ci.turn.User != nil {
			ci.send("turn/completed", map[string]any{"turn": map[string]any{"status": "completed"}})
		}
	case "turn_aborted":
		if ci.m.InTurn() || ci.turn.User != nil {
			ci.send("turn/completed", map[string]any{"turn": map[string]any{"status": "interrupted"}})
		}
	case "error":
		if ci.m.InTurn() || ci.turn.User != nil {
			ci.send("turn/completed", map[string]any{"turn": map[string]any{"status": "failed",
				"error": map[string]any{"message": p.Get("message").String()}}})
		}
	case "agent_message", "agent_reasoning":
		if !ci.legacy {
			return // a completed item says it
		}
		if !ci.m.InTurn() {
			ci.startTurn()
		}
		id := ci.newID()
		if p.Get("type").String() == "agent_message" {
			ci.send("item/completed", map[string]any{"item": map[string]any{"id": id, "type": "agentMessage", "text": p.Get("message").String()}})
		} else {
			ci.send("item/completed", map[string]any{"item": map[string]any{"id": id, "type": "reasoning", "summary": []any{p.Get("text").String()}}})
		}
	case "thread_rolled_back":
		// An older rollout's mark of the user's taking back turns: the
		// thread goes on without them.
		ci.rollback(int(p.Get("num_turns").Int()))
	case "thread_settings_applied":
		if m := p.Get("thread_settings.model").String(); m != "" {
			ci.model = m
		}
	}
}

// startTurn begins a turn, ending one the file left open (as
// interrupted: codex stopped before it recorded the turn's end).
func (ci *codexImport) startTurn() {
	if ci.m.InTurn() || ci.turn.User != nil {
		ci.send("turn/completed", map[string]any{"turn": map[string]any{"status": "interrupted"}})
		if ci.turn.User != nil {
			history.EndTurn(ci.conv, &ci.turn, &itemmap.TurnEnd{Status: itemmap.TurnInterrupted}, Provider)
		}
	}
	ci.turn = history.Turn{First: len(ci.conv.Items)}
	ci.send("turn/started", map[string]any{})
}

// userMessage begins the turn's user message: its item and its history
// message, with the images its response item carried.
func (ci *codexImport) userMessage(text string) {
	// A thread spbridge began after a reopen: codex was told the
	// conversation so far before the user's words, which alone are kept.
	text, _ = restore.Split(text)
	if !ci.m.InTurn() {
		ci.startTurn()
	}
	ci.rep.Turns++
	ci.marks = append(ci.marks, turnMark{items: min(ci.turn.First, len(ci.conv.Items)), history: len(ci.conv.History)})
	msg := archive.Message{Role: "user", Content: append([]archive.Block{archive.NewTextBlock(text)}, ci.images...)}
	it := archive.ItemFromMap(map[string]any{"id": ci.newID(), "type": archive.TypeUser, "text": text})
	if len(ci.images) > 0 {
		it.Set("hasImage", true)
	}
	ci.images = nil
	ci.conv.Items = append(ci.conv.Items, it)
	ci.turn.User = &msg
	ci.turn.First = len(ci.conv.Items)
}

// turnMark is where a turn of the user's began.
type turnMark struct{ items, history int }

// rollback drops the user's last n turns (all there are when fewer): their
// items and history.
func (ci *codexImport) rollback(n int) {
	if n <= 0 {
		return
	}
	if ci.m.InTurn() || ci.turn.User != nil {
		ci.send("turn/completed", map[string]any{"turn": map[string]any{"status": "interrupted"}})
		if ci.turn.User != nil {
			history.EndTurn(ci.conv, &ci.turn, &itemmap.TurnEnd{Status: itemmap.TurnInterrupted}, Provider)
		}
	}
	n = min(n, len(ci.marks))
	if n == 0 {
		return
	}
	m := ci.marks[len(ci.marks)-n]
	ci.conv.Items = ci.conv.Items[:min(m.items, len(ci.conv.Items))]
	ci.conv.History = ci.conv.History[:min(m.history, len(ci.conv.History))]
	ci.marks = ci.marks[:len(ci.marks)-n]
	ci.rep.Turns -= n
	ci.turn = history.Turn{First: len(ci.conv.Items)}
}

// item gives a completed rollout item the app-server's form.
func (ci *codexImport) item(it jsonline.Value) {
	id := it.Get("id").String()
	ev := map[string]any{"id": id}
	var b []byte // the item as JSON, for the kinds with long strings
	switch it.Get("type").String() {
	case "UserMessage":
		if ci.turn.User != nil {
			return
		}
		var parts []string
		for _, c := range it.Get("content").Array() {
			if c.Get("type").String() == "text" {
				parts = append(parts, c.Get("text").String())
			}
		}
		ci.userMessage(strings.Join(parts, "\n"))
		return
	case "AgentMessage":
		b = itemHead(b, id, "agentMessage")
		b = append(b, `,"text":`...)
		if parts := it.Get("content").Array(); len(parts) == 1 {
			b = appendString(b, parts[0].Get("text"))
		} else {
			var sb strings.Builder
			for _, c := range parts {
				sb.WriteString(c.Get("text").String())
			}
			b = canonjson.AppendString(b, sb.String())
		}
	case "Reasoning":
		b = itemHead(b, id, "reasoning")
		b = append(b, `,"summary":[`...)
		for i, s := range it.Get("summary_text").Array() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	case "CommandExecution":
		// Its fields in one pass: the output is long, and comes before
		// some of them.
		var f [5]jsonline.Value
		it.ReadFields(commandFields, f[:])
		cmd, out, exit, status, parsed := f[0], f[1], f[2], f[3], f[4]
		b = itemHead(b, id, "commandExecution")
		b = append(b, `,"command":`...)
		b = canonjson.AppendString(b, shellJoin(cmd))
		if exit.Type() == gjson.Number {
			b = append(b, `,"exitCode":`...)
			b = append(b, exit.RawView()...)
		}
		b = append(b, `,"status":`...)
		b = canonjson.AppendString(b, camel(status.String()))
		if acts := parsed.Array(); len(acts) > 0 {
			b = append(b, `,"commandActions":[`...)
			for i, a := range acts {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"type":`...)
				b = canonjson.AppendString(b, a.Get("type").String())
				b = append(b, `,"command":`...)
				b = appendString(b, a.Get("cmd"))
				for _, k := range []string{"name", "path", "query"} {
					if s := a.Get(k); s.Type() == gjson.String {
						b = append(b, `,"`+k+`":`...)
						b = append(b, s.RawView()...)
					}
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, `,"aggregatedOutput":`...)
		b = appendString(b, out)
	case "FileChange":
		b = itemHead(b, id, "fileChange")
		b = append(b, `,"status":`...)
		b = canonjson.AppendString(b, camel(it.Get("status").String()))
		b = append(b, `,"changes":[`...)
		n := 0
		changes := it.Get("changes")
		changes.ForEach(func(path, c jsonline.Value) bool {
			if n++; n > 1 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			if changes.IsArray() {
				b = canonjson.AppendString(b, strconv.Itoa(n-1)) // as gjson names an element
			} else {
				b = appendString(b, path)
			}
			b = append(b, `,"kind":{"type":`...)
			b = canonjson.AppendString(b, c.Get("type").String())
			if mv := c.Get("move_path"); mv.String() != "" {
				b = append(b, `,"move_path":`...)
				b = appendString(b, mv)
			}
			b = append(b, `},"diff":`...)
			if diff := c.Get("unified_diff"); !emptyString(diff) {
				b = appendString(b, diff)
			} else {
				b = appendString(b, c.Get("content"))
			}
			b = append(b, '}')
			return true
		})
		b = append(b, ']')
	case "McpToolCall":
		b = itemHead(b, id, "mcpToolCall")
		for _, k := range []string{"server", "tool", "status"} {
			b = append(b, `,"`+k+`":`...)
			if k == "status" {
				b = canonjson.AppendString(b, camel(it.Get(k).String()))
			} else {
				b = appendString(b, it.Get(k))
			}
		}
		for _, k := range []string{"arguments", "result", "error"} {
			if x := it.Get(k); x.Exists() {
				b = append(b, `,"`+k+`":`...)
				b = append(b, x.RawView()...)
			}
		}
	case "WebSearch":
		ev["type"], ev["query"] = "webSearch", it.Get("query").String()
	case "ImageView":
		ev["type"], ev["path"] = "imageView", it.Get("path").String()
	case "ContextCompaction":
		ev["type"] = "contextCompaction"
	default:
		return // plans come from update_plan's call; other kinds show nothing
	}
	if !ci.m.InTurn() {
		ci.startTurn()
	}
	if b == nil {
		ci.send("item/completed", map[string]any{"item": ev})
		return
	}
	ci.sendLine(append(b, "}}}"...))
}

// commandFields are the fields of a CommandExecution item read.
var commandFields = []string{"command", "aggregated_output", "exit_code", "status", "parsed_cmd"}

// itemHead begins the item/completed notification of the item id of kind
// typ, its object left open.
func itemHead(b []byte, id, typ string) []byte {
	b = append(b, `{"method":"item/completed","params":{"item":{"id":`...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"type":`...)
	return canonjson.AppendString(b, typ)
}

// appendString appends v's string (gjson's String) as a JSON string: a
// string as the line had it, escaped as it was, anything else encoded.
func appendString(b []byte, v jsonline.Value) []byte {
	if v.Type() == gjson.String {
		return append(b, v.RawView()...)
	}
	return canonjson.AppendString(b, v.String())
}

// emptyString reports whether v's string (gjson's String) is "", without
// decoding a long one.
func emptyString(v jsonline.Value) bool {
	if v.Type() == gjson.String {
		return len(v.RawView()) <= 2
	}
	return v.String() == ""
}

func (ci *codexImport) Finish() *archive.Conversation {
	if ci.m.InTurn() || ci.turn.User != nil {
		// The file ends inside a turn: codex stopped (or is still
		// writing) before it recorded the turn's end.
		ci.send("turn/completed", map[string]any{"turn": map[string]any{"status": "interrupted"}})
		if ci.turn.User != nil {
			history.EndTurn(ci.conv, &ci.turn, &itemmap.TurnEnd{Status: itemmap.TurnInterrupted}, Provider)
		}
	}
	return ci.conv
}

// camel is a rollout's snake_case status in the app-server's camelCase
// ("in_progress" → "inProgress").
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// camelTokens is a rollout's token usage in the app-server's fields.
func camelTokens(u jsonline.Value) map[string]any {
	out := map[string]any{}
	u.ForEach(func(k, v jsonline.Value) bool {
		if v.Type() == gjson.Number {
			out[camel(k.String())] = json.Number(v.Raw())
		}
		return true
	})
	return out
}

// shellJoin is a command recorded as its arguments, as one shell line
// (each argument quoted when it needs it); a command recorded as a string
// is that string.
func shellJoin(cmd jsonline.Value) string {
	if !cmd.IsArray() {
		return cmd.String()
	}
	var words []string
	for _, a := range cmd.Array() {
		s := a.String()
		if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			words = append(words, s)
			continue
		}
		words = append(words, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
	}
	return strings.Join(words, " ")
}

// dataURLImage is the image block of a data: URL, false when it is not an
// image format 1 keeps.
func dataURLImage(url string) (archive.Block, bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return archive.Block{}, false
	}
	meta, data, ok := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isB64 {
		return archive.Block{}, false
	}
	b, err := decodeBase64(data)
	if err != nil {
		return archive.Block{}, false
	}
	ib, err := archive.NewImageBlock(strings.ToLower(mime), b)
	return ib, err == nil
}

// decodeBase64 decodes standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}
