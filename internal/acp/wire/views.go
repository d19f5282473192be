package wire

import (
	"encoding/json"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
)

// This file holds what an item, or a permission request, shows as over
// ACP besides its encoding: a tool's title, kind and status, a todo
// list's plan entries, the plain text of a failure or questions.

// PermissionToolCall is the toolCall of a session/request_permission for
// approval a, shown as tool call id: its title and kind, and for an edit
// the change it asks to make (diffs, locations), to review before it is
// written.
func PermissionToolCall(id string, a itemmap.Approval, cwd string) map[string]any {
	var input any
	json.Unmarshal(a.Input, &input)
	title := a.ToolName
	if s := summaryOf(a.Input); s != "" {
		title += ": " + s
	}
	toolCall := map[string]any{"toolCallId": id, "title": title, "kind": toolKind(a.ToolName),
		"status": "pending", "rawInput": input}
	if a.ToolName != "" {
		toolCall["name"] = a.ToolName
	}
	var content, locations []any
	if text := approvalText(a); text != "" {
		content = append(content, map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": text}})
	}
	if v := a.Tool; v != nil {
		if v.Title != "" {
			toolCall["title"] = v.Title
		}
		if v.Kind != "" {
			toolCall["kind"] = v.Kind
		}
		// The change the call asks to make, to review before it is
		// written.
		locs, diffs := viewFiles(v, cwd)
		for _, d := range diffs {
			var old any
			if d.OldText != nil {
				old = *d.OldText
			}
			content = append(content, map[string]any{"type": "diff", "path": d.Path, "oldText": old, "newText": d.NewText})
		}
		for _, l := range locs {
			loc := map[string]any{"path": l.Path}
			if l.Line > 0 {
				loc["line"] = l.Line
			}
			locations = append(locations, loc)
		}
		if locations != nil {
			toolCall["locations"] = locations
		}
	}
	if content != nil {
		toolCall["content"] = content
	}
	return toolCall
}

// approvalText is what a permission request says besides its title, as
// the CLI's terminal says it: what the call is for, why it is asked (the
// model's justification), and that the command runs outside the sandbox;
// "" when none.
func approvalText(a itemmap.Approval) string {
	var parts []string
	if a.Tool != nil && a.Tool.Description != "" {
		parts = append(parts, a.Tool.Description)
	}
	if a.Reason != "" {
		parts = append(parts, "Reason: "+a.Reason)
	}
	if a.Escalated {
		parts = append(parts, "Runs outside the sandbox.")
	}
	return strings.Join(parts, "\n\n")
}

// summaryOf is a short account of a tool's input for a permission title.
func summaryOf(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description"} {
		if s, ok := m[k].(string); ok && s != "" {
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[:i] + "…"
			}
			return s
		}
	}
	return ""
}

// toolKind is the ACP kind of a tool, by name, as the CLIs' vocabularies
// say it (a conversation may hold the tools of more than one CLI).
func toolKind(name string) string { return clis.ToolKind(name) }

// toolStatus is the nearest ACP status; the exact one (denied, cancelled)
// travels in _spbridge/item.
func toolStatus(status string) string {
	switch status {
	case archive.StatusRunning:
		return "in_progress"
	case archive.StatusSucceeded:
		return "completed"
	case archive.StatusFailed, archive.StatusDenied, archive.StatusCancelled:
		return "failed"
	}
	return "pending"
}

func toolTitle(it archive.Item) string {
	if it.Type() == archive.TypeWebSearch {
		return "Web search: " + it.String("query")
	}
	title := it.String("name")
	if s := it.String("summary"); s != "" {
		title += ": " + s
	}
	return title
}

// PlanEntries are a directions item's lines, one plan entry each: a todo
// list's "[x] step" completed, "[ ] step" (and any other line) pending.
func PlanEntries(it archive.Item) []itemmap.PlanEntry {
	entries, _ := TodoEntries(it.String("text"))
	return entries
}

// TodoEntries reads text as plan entries, one a line, and reports whether
// every line is a todo list's ("[x] step" or "[ ] step", as Codex's
// todo lists are kept).
func TodoEntries(text string) ([]itemmap.PlanEntry, bool) {
	entries := []itemmap.PlanEntry{}
	todo := true
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		e := itemmap.PlanEntry{Content: line, Status: itemmap.PlanPending}
		if rest, ok := strings.CutPrefix(line, "[x] "); ok {
			e.Content, e.Status = rest, itemmap.PlanCompleted
		} else if rest, ok := strings.CutPrefix(line, "[ ] "); ok {
			e.Content = rest
		} else {
			todo = false
		}
		entries = append(entries, e)
	}
	return entries, todo && len(entries) > 0
}

// PlainText is what an ACP client without spbridge's extensions is shown
// for a failure or questions.
func PlainText(it archive.Item) string {
	switch it.Type() {
	case archive.TypeFailure:
		return "Error: " + it.String("text")
	case archive.TypeQuestions:
		var qs []string
		list, _ := it.Get("questions").([]any)
		for _, q := range list {
			m, _ := q.(map[string]any)
			if s, _ := m["question"].(string); s != "" {
				if a, _ := m["answer"].(string); a != "" {
					s += " " + a
				}
				qs = append(qs, s)
			}
		}
		return strings.Join(qs, "\n")
	}
	return it.String("text")
}

// AppendRestored appends the session/update lines that show a restored
// item (of a conversation loaded or recovered) other than a user's
// message: an answer's or a thought's text as a chunk of its message, a
// todo list as the plan it last stood as, other directions, a tool call
// or a web search as a tool_call, a failure's or questions' plain text,
// a reset of the CLI's context as its notice's text; nothing for an item
// ACP does not show.
func AppendRestored(b []byte, sid string, it archive.Item, cwd string) []byte {
	switch it.Type() {
	case archive.TypeAssistant:
		return AppendChunk(b, sid, AgentMessageChunk, it.ID(), it.String("text"))
	case archive.TypeThinking:
		return AppendChunk(b, sid, AgentThoughtChunk, it.ID(), it.String("text"))
	case archive.TypeDirections:
		if entries, todo := TodoEntries(it.String("text")); todo {
			// A todo list (Codex's) as it last stood.
			return AppendPlan(b, sid, entries)
		}
		return AppendTool(b, sid, ToolOf("tool_call", it, nil, cwd))
	case archive.TypeTool, archive.TypeWebSearch:
		return AppendTool(b, sid, ToolOf("tool_call", it, nil, cwd))
	case archive.TypeFailure, archive.TypeQuestions:
		return AppendChunk(b, sid, AgentMessageChunk, it.ID(), PlainText(it))
	case archive.TypeNotice:
		if it.String(archive.ContextReset) != "" {
			// A reset of the CLI's context (its /clear): the boundary.
			return AppendChunk(b, sid, AgentMessageChunk, it.ID(), it.String("text"))
		}
	}
	return b
}
