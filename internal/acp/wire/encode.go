// Package wire is ACP's shapes at spbridge's edge, both ways. Out: what
// spbridge's conversation items look like over ACP, the session/update
// payloads a turn, a replayed conversation and a permission request carry
// (text chunks, tool calls, plans, notices, a command's output in the
// client's terminal) and the _spbridge/item lines, made from archive
// items and their itemmap views and encoded as whole JSON-RPC lines. In:
// what a client's requests say, read into spbridge's values (a prompt's
// content, an open's MCP servers and folders, the client's capabilities).
// It is pure translation: it holds no session and sends nothing
// (internal/acp does).
package wire

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
)

// The notifications a turn streams are few and fixed in shape, and there
// are many of them (one per text delta): they are appended to the writer's
// reused buffer by the functions below, not built as maps for
// encoding/json. Each appends one whole line, its newline included.
// Strings go through canonjson.AppendString: `"`, `\` and control
// characters escaped, invalid UTF-8 as U+FFFD, like encoding/json.

const (
	updatePrefix = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`
	itemPrefix   = `{"jsonrpc":"2.0","method":"_spbridge/item","params":{"sessionId":`
)

// Session update kinds with a text content block.
const (
	AgentMessageChunk = "agent_message_chunk"
	AgentThoughtChunk = "agent_thought_chunk"
	UserMessageChunk  = "user_message_chunk"
)

// AppendChunk appends the session/update of a text chunk of kind (one of
// the chunk kinds above) of the message messageID (the id of the item
// that holds it: the same live and replayed; "" for none): one, or
// several of at most about MaxText each.
func AppendChunk(b []byte, sid, kind, messageID, text string) []byte {
	splitText(text, MaxText, func(part string) {
		b = append(b, updatePrefix...)
		b = canonjson.AppendString(b, sid)
		b = append(b, `,"update":{"sessionUpdate":"`...)
		b = append(b, kind...)
		b = append(b, '"')
		if messageID != "" {
			b = append(b, `,"messageId":`...)
			b = canonjson.AppendString(b, messageID)
		}
		b = append(b, `,"content":{"type":"text","text":`...)
		b = canonjson.AppendString(b, part)
		b = append(b, "}}}}\n"...)
	})
	return b
}

// Tool is a tool_call or tool_call_update as ACP shows a tool item.
type Tool struct {
	update  string // tool_call or tool_call_update
	id      string
	title   string
	name    string // the CLI's own name of the tool ("" for none)
	desc    string // what the call is for, one text block before the diffs ("" for none)
	kind    string
	status  string
	diffs   []itemmap.Diff // diff content blocks, paths absolute
	content string         // shown as one text content block (after the diffs) when hasContent
	// fence, when set, makes content a Markdown code block: content is
	// then what goes between the fences, and more how much of the output
	// was left out after it.
	fence      string
	more       int
	images     []itemmap.Image    // image content blocks, after the text: what the call returned
	locations  []itemmap.Location // paths absolute
	parent     string             // the tool call it runs under, "" when none
	hasContent bool
	// terminal shows the call's output in the client's own terminal
	// (named by the call's id), as the first content block; the text
	// content, if any, follows it.
	terminal bool
	// termCwd, when termInfo is set, is the folder the command runs in
	// (_meta.terminal_info, on the tool_call that opens the terminal).
	termInfo bool
	termCwd  string
	// termExit, when set, closes the terminal (_meta.terminal_exit) with
	// exitCode (nil: unknown).
	termExit bool
	exitCode *int
}

// ToolOf is what ACP shows of a tool, webSearch or directions item,
// with its view when the turn gave one (nil for a restored item); cwd is
// the session's working folder, for paths the CLI gave relative.
func ToolOf(update string, it archive.Item, view *itemmap.ToolView, cwd string) Tool {
	if it.Type() == archive.TypeDirections {
		// The plan the agent proposes before it leaves planning: its
		// markdown whole, under the call that asks to go on (the
		// permission request names this id).
		return Tool{update: update, id: it.ID(), title: "Ready to code?", kind: itemmap.KindSwitchMode,
			status: "completed", content: it.String("text"), hasContent: true}
	}
	name := it.String("name")
	kind := toolKind(name)
	if it.Type() == archive.TypeWebSearch {
		kind = itemmap.KindFetch
	}
	status := it.String("status")
	u := Tool{update: update, id: it.ID(), title: toolTitle(it), name: name, kind: kind, status: toolStatus(status)}
	done := status != archive.StatusRunning
	if d := it.String("detail"); d != "" && done {
		u.detail(d)
	}
	if results, ok := it.Get("results").([]any); ok && len(results) > 0 {
		var lines []string
		for _, r := range results {
			m, _ := r.(map[string]any)
			title, _ := m["title"].(string)
			url, _ := m["url"].(string)
			lines = append(lines, "- ["+title+"]("+url+")")
		}
		u.content, u.hasContent = strings.Join(lines, "\n"), true
	}
	if view == nil {
		// Restored: what the live view said, as far as the item keeps it.
		u.desc = itemmap.DetailDescription(name, it.String("detail"))
		if clis.SummaryFile(name) {
			if p := it.String("summary"); p != "" {
				u.locations = []itemmap.Location{{Path: absPath(p, cwd)}}
			}
		}
		return u
	}
	if view.Title != "" {
		u.title = view.Title
	}
	if view.Kind != "" {
		u.kind = view.Kind
	}
	u.desc = view.Description
	u.parent = view.ParentID
	u.locations, u.diffs = viewFiles(view, cwd)
	u.images = view.Images
	switch {
	case view.Output != "":
		// Whole once the command ended; while it runs, what it printed so
		// far.
		u.content, u.fence, u.more = fence(view.Output, maxOutput)
		u.hasContent = true
	case len(u.diffs) > 0 && (status == archive.StatusSucceeded || status == archive.StatusRunning):
		u.hasContent = false // the diffs say it
	}
	return u
}

// detail shows what a tool item's detail d says the call returned (its
// output fenced, like a view's) as the call's text, never the call's
// input, which the title and diffs say.
func (u *Tool) detail(d string) {
	text, output := itemmap.DetailOutput(d)
	switch {
	case output:
		u.content, u.fence, u.more = fence(text, maxOutput)
		u.hasContent = true
	case text != "":
		u.content, u.fence, u.hasContent = text, "", true
	}
}

// viewFiles are a view's locations and diffs with absolute paths.
func viewFiles(view *itemmap.ToolView, cwd string) ([]itemmap.Location, []itemmap.Diff) {
	var locs []itemmap.Location
	for _, l := range view.Locations {
		locs = append(locs, itemmap.Location{Path: absPath(l.Path, cwd), Line: l.Line})
	}
	var diffs []itemmap.Diff
	for _, d := range view.Diffs {
		d.Path = absPath(d.Path, cwd)
		diffs = append(diffs, d)
	}
	return locs, diffs
}

// absPath is p resolved against the session's working folder cwd when the
// CLI gave it relative: ACP wants absolute paths.
func absPath(p, cwd string) string {
	if p == "" || cwd == "" || strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(cwd, p)
}

// maxOutput caps a command's output as a tool call shows it.
const maxOutput = 16 << 10

// fence is a command's output as a Markdown code block, in parts made
// without copying the output: what goes between the fences (the output cut
// to cost at most n bytes as JSON writes it, between grapheme clusters:
// capText), the fence (longer than any run of backticks in the output),
// and how many bytes were left out after the block (see moreText).
func fence(out string, n int) (body, fence string, more int) {
	out, more = capText(out, n)
	fence = "```"
	for strings.Contains(out, fence) {
		fence += "`"
	}
	return strings.TrimSuffix(out, "\n"), fence, more
}

// moreText says after a fenced block how much was left out of it.
func moreText(more int) string {
	if more == 0 {
		return ""
	}
	return "\n… " + strconv.Itoa(more) + " bytes more"
}

// AppendTool appends a session/update carrying u.
func AppendTool(b []byte, sid string, u Tool) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"`...)
	b = append(b, u.update...)
	b = append(b, `","toolCallId":`...)
	b = canonjson.AppendString(b, u.id)
	b = append(b, `,"title":`...)
	b = canonjson.AppendString(b, u.title)
	if u.name != "" {
		b = append(b, `,"name":`...)
		b = canonjson.AppendString(b, u.name)
	}
	b = append(b, `,"kind":`...)
	b = canonjson.AppendString(b, u.kind)
	b = append(b, `,"status":"`...)
	b = append(b, u.status...)
	b = append(b, '"')
	if len(u.diffs) > 0 || u.hasContent || u.terminal || len(u.images) > 0 || u.desc != "" {
		// The blocks in order: the terminal, what the call is for, the
		// diffs, the text, the images.
		b = append(b, `,"content":[`...)
		n := 0
		if u.terminal {
			b = append(b, `{"type":"terminal","terminalId":`...)
			b = canonjson.AppendString(b, u.id)
			b = append(b, '}')
			n++
		}
		if u.desc != "" {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"content","content":{"type":"text","text":`...)
			b = canonjson.AppendString(b, u.desc)
			b = append(b, "}}"...)
		}
		for _, d := range u.diffs {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"diff","path":`...)
			b = canonjson.AppendString(b, d.Path)
			b = append(b, `,"oldText":`...)
			if d.OldText == nil {
				b = append(b, "null"...)
			} else {
				b = canonjson.AppendString(b, *d.OldText)
			}
			b = append(b, `,"newText":`...)
			b = canonjson.AppendString(b, d.NewText)
			b = append(b, '}')
		}
		if u.hasContent {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"content","content":{"type":"text","text":`...)
			if u.fence != "" {
				b = canonjson.AppendStringParts(b, u.fence, "\n", u.content, "\n", u.fence, moreText(u.more))
			} else if u.kind == itemmap.KindSwitchMode {
				b = canonjson.AppendString(b, u.content) // the plan to approve: whole
			} else {
				text, more := capText(u.content, MaxText)
				b = canonjson.AppendStringParts(b, text, moreText(more))
			}
			b = append(b, "}}"...)
		}
		for _, im := range u.images {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"content","content":{"type":"image","mimeType":`...)
			b = canonjson.AppendString(b, im.MimeType)
			b = append(b, `,"data":"`...)
			b = base64.StdEncoding.AppendEncode(b, im.Data)
			b = append(b, `"}}`...)
		}
		b = append(b, ']')
	}
	if len(u.locations) > 0 {
		b = append(b, `,"locations":[`...)
		for i, l := range u.locations {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = canonjson.AppendString(b, l.Path)
			if l.Line > 0 {
				b = append(b, `,"line":`...)
				b = strconv.AppendInt(b, int64(l.Line), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if u.parent != "" || u.termInfo || u.termExit {
		b = append(b, `,"_meta":{`...)
		comma := false
		if u.parent != "" {
			b = append(b, `"spbridge":{"parentToolCallId":`...)
			b = canonjson.AppendString(b, u.parent)
			b = append(b, '}')
			comma = true
		}
		if u.termInfo {
			if comma {
				b = append(b, ',')
			}
			b = append(b, `"terminal_info":{"terminal_id":`...)
			b = canonjson.AppendString(b, u.id)
			if u.termCwd != "" {
				b = append(b, `,"cwd":`...)
				b = canonjson.AppendString(b, u.termCwd)
			}
			b = append(b, '}')
			comma = true
		}
		if u.termExit {
			if comma {
				b = append(b, ',')
			}
			b = append(b, `"terminal_exit":{"terminal_id":`...)
			b = canonjson.AppendString(b, u.id)
			b = append(b, `,"exit_code":`...)
			if u.exitCode != nil {
				b = strconv.AppendInt(b, int64(*u.exitCode), 10)
			} else {
				b = append(b, "null"...)
			}
			b = append(b, `,"signal":null}`...)
		}
		b = append(b, '}')
	}
	return append(b, "}}}\n"...)
}

// AppendTerminalOutput appends the tool_call_update that writes data, what
// a command printed, to the client's terminal of tool call id
// (_meta.terminal_output), and nothing else: each update carries only the
// new bytes, at most about MaxText of them (more take several).
func AppendTerminalOutput(b []byte, sid, id, data string) []byte {
	splitText(data, MaxText, func(part string) {
		b = append(b, updatePrefix...)
		b = canonjson.AppendString(b, sid)
		b = append(b, `,"update":{"sessionUpdate":"tool_call_update","toolCallId":`...)
		b = canonjson.AppendString(b, id)
		b = append(b, `,"_meta":{"terminal_output":{"terminal_id":`...)
		b = canonjson.AppendString(b, id)
		b = append(b, `,"data":`...)
		b = canonjson.AppendString(b, part)
		b = append(b, "}}}}}\n"...)
	})
	return b
}

// AppendPlan appends a session/update with a plan of these entries.
func AppendPlan(b []byte, sid string, entries []itemmap.PlanEntry) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"plan","entries":[`...)
	// ACP sends the whole plan each time: entries that pass MaxText
	// together (each with its frame, `{"content":"",…}`) are each cut to
	// their share of it ("…" ends what was cut).
	const frame = 60
	share, total := 0, 0
	for _, e := range entries {
		total += frame + jsonCost(e.Content)
	}
	if total > MaxText {
		share = max(MaxText/len(entries)-frame, 64)
	}
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"content":`...)
		text, more := e.Content, 0
		if share > 0 {
			text, more = capText(e.Content, share-len("…"))
		}
		if more > 0 {
			b = canonjson.AppendStringParts(b, text, "…")
		} else {
			b = canonjson.AppendString(b, e.Content)
		}
		b = append(b, `,"priority":`...)
		b = canonjson.AppendString(b, planPriority(e.Priority))
		b = append(b, `,"status":`...)
		b = canonjson.AppendString(b, planStatus(e.Status))
		b = append(b, '}')
	}
	return append(b, "]}}}\n"...)
}

// planPriority is an entry's ACP priority: medium unless the CLI said.
func planPriority(p string) string {
	switch p {
	case "high", "medium", "low":
		return p
	}
	return "medium"
}

// planStatus is an entry's ACP status: pending unless the CLI said.
func planStatus(s string) string {
	switch s {
	case itemmap.PlanInProgress, itemmap.PlanCompleted:
		return s
	}
	return itemmap.PlanPending
}

// AppendItemText appends the _spbridge/item of a text that grew by delta
// (several appends of at most about MaxText each for a longer one).
func AppendItemText(b []byte, sid, id, delta string) []byte {
	splitText(delta, MaxText, func(part string) {
		b = append(b, itemPrefix...)
		b = canonjson.AppendString(b, sid)
		b = append(b, `,"op":"append","id":`...)
		b = canonjson.AppendString(b, id)
		b = append(b, `,"field":"text","text":`...)
		b = canonjson.AppendString(b, part)
		b = append(b, "}}\n"...)
	})
	return b
}

// AppendItem appends the _spbridge/item that carries a whole item (its
// fields as the archive keeps them) with op, and the approval card when
// card is not nil.
func AppendItem(b []byte, sid, op string, item map[string]any, card any) []byte {
	b = append(b, itemPrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"op":`...)
	b = canonjson.AppendString(b, op)
	b = append(b, `,"item":`...)
	b = appendValue(b, item)
	if card != nil {
		b = append(b, `,"card":`...)
		b = appendValue(b, card)
	}
	return append(b, "}}\n"...)
}

// appendValue appends a value tree (as canonjson reads and items hold) on
// one line.
func appendValue(b []byte, v any) []byte {
	data, err := canonjson.EncodeCompact(v)
	if err != nil {
		// A value canonjson does not take (never in an item as spbridge
		// makes or reads them): encoding/json's form, or null.
		if data, err = json.Marshal(v); err != nil {
			data = []byte("null")
		}
	}
	return append(b, data...)
}

// AppendNotice appends a session/update notice: an info notice whose
// title is text. Notices are live: a loaded conversation's are not sent
// again.
func AppendNotice(b []byte, sid, text string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"notice","severity":"info","title":`...)
	b = canonjson.AppendString(b, text)
	return append(b, "}}}\n"...)
}
