package acp

import (
	"encoding/json"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
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
	agentMessageChunk = "agent_message_chunk"
	agentThoughtChunk = "agent_thought_chunk"
	userMessageChunk  = "user_message_chunk"
)

// appendChunk appends a session/update whose update is a text chunk of
// kind (one of the chunk kinds above).
func appendChunk(b []byte, sid, kind, text string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"`...)
	b = append(b, kind...)
	b = append(b, `","content":{"type":"text","text":`...)
	b = canonjson.AppendString(b, text)
	return append(b, "}}}}\n"...)
}

// toolUpdate is a tool_call or tool_call_update as ACP shows a tool item.
type toolUpdate struct {
	update     string // tool_call or tool_call_update
	id         string
	title      string
	kind       string
	status     string
	content    string // shown as one text content block when hasContent
	location   string // a file the tool works on, "" when none
	hasContent bool
}

// toolUpdateOf is what ACP shows of a tool or webSearch item.
func toolUpdateOf(update string, it archive.Item) toolUpdate {
	name := it.String("name")
	if it.Type() == archive.TypeWebSearch {
		name = "WebSearch"
	}
	status := it.String("status")
	u := toolUpdate{update: update, id: it.ID(), title: toolTitle(it), kind: toolKind(name), status: toolStatus(status)}
	if d := it.String("detail"); d != "" && status != archive.StatusRunning {
		u.content, u.hasContent = d, true
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
	switch name {
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		u.location = it.String("summary")
	}
	return u
}

// appendTool appends a session/update carrying u.
func appendTool(b []byte, sid string, u toolUpdate) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"`...)
	b = append(b, u.update...)
	b = append(b, `","toolCallId":`...)
	b = canonjson.AppendString(b, u.id)
	b = append(b, `,"title":`...)
	b = canonjson.AppendString(b, u.title)
	b = append(b, `,"kind":"`...)
	b = append(b, u.kind...)
	b = append(b, `","status":"`...)
	b = append(b, u.status...)
	b = append(b, '"')
	if u.hasContent {
		b = append(b, `,"content":[{"type":"content","content":{"type":"text","text":`...)
		b = canonjson.AppendString(b, u.content)
		b = append(b, "}}]"...)
	}
	if u.location != "" {
		b = append(b, `,"locations":[{"path":`...)
		b = canonjson.AppendString(b, u.location)
		b = append(b, "}]"...)
	}
	return append(b, "}}}\n"...)
}

// planEntries are a directions item's lines, one plan entry each.
func planEntries(it archive.Item) []string {
	var entries []string
	for _, line := range strings.Split(it.String("text"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			entries = append(entries, line)
		}
	}
	return entries
}

// appendPlan appends a session/update with a plan of these entries.
func appendPlan(b []byte, sid string, entries []string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"plan","entries":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"content":`...)
		b = canonjson.AppendString(b, e)
		b = append(b, `,"priority":"medium","status":"pending"}`...)
	}
	return append(b, "]}}}\n"...)
}

// appendItemText appends the _spbridge/item of a text that grew by delta.
func appendItemText(b []byte, sid, id, delta string) []byte {
	b = append(b, itemPrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"op":"append","id":`...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"field":"text","text":`...)
	b = canonjson.AppendString(b, delta)
	return append(b, "}}\n"...)
}

// appendItem appends the _spbridge/item that carries a whole item (its
// fields as the archive keeps them) with op, and the approval card when
// card is not nil.
func appendItem(b []byte, sid, op string, item map[string]any, card any) []byte {
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
