package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// FuzzEncode: every line the hand-written encoders append is one line of
// valid JSON that decodes to what encoding/json makes of the same message
// (strings escaped alike, invalid UTF-8 as U+FFFD).
func FuzzEncode(f *testing.F) {
	f.Add("/tmp/Doc.silverpoint", "00000000-0000-4000-8000-000000000001", "Hello \"world\"\n\\", "Read", "output:\nline\t\x00\x1f", "/tmp/a.txt", "step one\n  step two\n\n")
	f.Add("", "", "", "", "", "", "")
	f.Add("é\u2028\u2029<>&/", "\xff\xfe", "\xed\xa0\x80 surrogate", "Bash", "\x7f\u00a0", "a\"b", "\r\n\t")
	f.Fuzz(func(t *testing.T, sid, id, text, name, detail, path, plan string) {
		if jsonCost(text) > MaxText/2 || jsonCost(detail) > MaxText/2 || jsonCost(plan) > MaxText/2 {
			t.Skip("longer texts are cut or split: TestSplit and TestCaps")
		}
		check := func(what string, line []byte, want any) {
			t.Helper()
			if len(line) == 0 || line[len(line)-1] != '\n' || bytes.IndexByte(line[:len(line)-1], '\n') >= 0 {
				t.Fatalf("%s: not one line: %q", what, line)
			}
			var got any
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("%s: %v: %q", what, err, line)
			}
			data, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			var w any
			json.Unmarshal(data, &w)
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("%s:\n got %q\nwant %s", what, line, data)
			}
		}
		note := func(method string, params map[string]any) map[string]any {
			return map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		}
		update := func(u map[string]any) map[string]any {
			return note("session/update", map[string]any{"sessionId": sid, "update": u})
		}
		text2 := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
		buf := []byte("left from the last message")

		for _, kind := range []string{AgentMessageChunk, AgentThoughtChunk, UserMessageChunk} {
			want := map[string]any{"sessionUpdate": kind, "content": text2(text)}
			if id != "" {
				want["messageId"] = id
			}
			check(kind, AppendChunk(buf[:0], sid, kind, id, text), update(want))
		}

		it := archive.ItemFromMap(map[string]any{"id": id, "type": archive.TypeTool, "name": name, "summary": path,
			"status": archive.StatusSucceeded, "detail": detail})
		u := ToolOf("tool_call_update", it, nil, "")
		want := map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "title": toolTitle(it),
			"kind": toolKind(name), "status": "completed"}
		if name != "" {
			want["name"] = name
		}
		// The detail's output fenced, or what it says besides the call's
		// input; never the input.
		if out, ok := itemmap.DetailOutput(detail); ok {
			want["content"] = []any{map[string]any{"type": "content", "content": text2(fenced(out, maxOutput))}}
		} else if out != "" {
			want["content"] = []any{map[string]any{"type": "content", "content": text2(out)}}
		}
		if len(u.locations) > 0 {
			want["locations"] = []any{map[string]any{"path": path}}
		}
		check("tool", AppendTool(buf[:0], sid, u), update(want))

		// With a view: diffs (one new file), locations with a line, output
		// fenced, a parent.
		view := &itemmap.ToolView{Kind: name, Title: text, ParentID: plan, Output: detail,
			Locations: []itemmap.Location{{Path: path, Line: len(text)}},
			Diffs:     []itemmap.Diff{{Path: path, OldText: &plan, NewText: text}, {Path: path, NewText: detail}}}
		u = ToolOf("tool_call_update", it, view, "")
		want = map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "title": toolTitle(it),
			"kind": toolKind(name), "status": "completed"}
		if name != "" {
			want["name"] = name
		}
		if text != "" {
			want["title"] = text
		}
		if name != "" {
			want["kind"] = name
		}
		var content []any
		for _, d := range view.Diffs {
			var old any
			if d.OldText != nil {
				old = *d.OldText
			}
			content = append(content, map[string]any{"type": "diff", "path": d.Path, "oldText": old, "newText": d.NewText})
		}
		if detail != "" {
			content = append(content, map[string]any{"type": "content", "content": text2(fenced(detail, maxOutput))})
		}
		want["content"] = content
		loc := map[string]any{"path": path}
		if len(text) > 0 {
			loc["line"] = len(text)
		}
		want["locations"] = []any{loc}
		if plan != "" {
			want["_meta"] = map[string]any{"spbridge": map[string]any{"parentToolCallId": plan}}
		}
		check("tool view", AppendTool(buf[:0], sid, u), update(want))

		entries := []itemmap.PlanEntry{{Content: plan, Status: text, Priority: name}, {Content: detail, Status: itemmap.PlanInProgress, Priority: "high"}}
		list := []any{
			map[string]any{"content": plan, "priority": planPriority(name), "status": planStatus(text)},
			map[string]any{"content": detail, "priority": "high", "status": "in_progress"},
		}
		check("plan", AppendPlan(buf[:0], sid, entries), update(map[string]any{"sessionUpdate": "plan", "entries": list}))

		check("append", AppendItemText(buf[:0], sid, id, text),
			note("_spbridge/item", map[string]any{"sessionId": sid, "op": "append", "id": id, "field": "text", "text": text}))
		item := map[string]any{"id": id, "type": "assistant", "text": text, name: []any{detail, true, nil, json.Number("1.5e3"), map[string]any{path: plan}}}
		card := map[string]any{"state": detail}
		check("item", AppendItem(buf[:0], sid, "update", item, card),
			note("_spbridge/item", map[string]any{"sessionId": sid, "op": "update", "item": item, "card": card}))
	})
}

// fenced is the text content AppendTool writes for a command's output,
// made whole: the reference the encoder is checked against.
func fenced(out string, n int) string {
	body, fence, more := fence(out, n)
	return fence + "\n" + body + "\n" + fence + moreText(more)
}
