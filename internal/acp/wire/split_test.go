package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// longText is a reply of about n bytes mixing what a cut must respect:
// ASCII, two- to four-byte characters, emoji joined by ZWJ, flags,
// combining marks, Hangul syllables in jamo, CR LF, quotes and control
// characters (which escape to more bytes than they are).
func longText(n int) string {
	parts := []string{"plain words ", "é ", "日本語 ", "👩‍👩‍👧‍👦", "🇫🇷🇩🇪", "e\u0301\u0302 ", "\u1100\u1161\u11a8", "\r\n", "\"quoted\\\" ", "\x01\x1b[0m", "\t"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(parts[i%len(parts)])
		if i%7 == 0 {
			b.WriteString(strings.Repeat("x", i%97))
		}
	}
	return b.String()
}

// boundaries are the byte offsets between the grapheme clusters of s.
func boundaries(s string) map[int]bool {
	at := map[int]bool{0: true}
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		_, to := g.Positions()
		at[to] = true
	}
	return at
}

// lines decodes each line of b (each must be one JSON object) and checks
// none is longer than MaxText and a line's frame.
func lines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if len(line) > MaxText+512 {
			t.Errorf("a line of %d bytes (bound %d and its frame)", len(line), MaxText)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		out = append(out, m)
	}
	return out
}

// TestSplit: a long message goes out as several chunks of the same
// message, a long terminal write and item append as several, each line
// at most about MaxText, cut only between grapheme clusters (never inside
// a UTF-8 sequence), and together the text whole, in order; a cluster
// longer than the bound alone is cut between its characters; a text that
// fits is one line.
func TestSplit(t *testing.T) {
	const sid, id = "/tmp/Doc.silverpoint", "00000000-0000-4000-8000-000000000001"
	text := longText(80000)
	get := func(m map[string]any, path ...string) string {
		var v any = m
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		s, _ := v.(string)
		return s
	}
	cases := []struct {
		name string
		enc  func(b []byte, s string) []byte
		text func(m map[string]any) string
	}{
		{"chunk", func(b []byte, s string) []byte { return AppendChunk(b, sid, AgentMessageChunk, id, s) }, func(m map[string]any) string {
			if get(m, "params", "update", "messageId") != id {
				t.Errorf("a chunk of another message: %v", m)
			}
			return get(m, "params", "update", "content", "text")
		}},
		{"terminal", func(b []byte, s string) []byte { return AppendTerminalOutput(b, sid, id, s) }, func(m map[string]any) string {
			return get(m, "params", "update", "_meta", "terminal_output", "data")
		}},
		{"item append", func(b []byte, s string) []byte { return AppendItemText(b, sid, id, s) }, func(m map[string]any) string {
			return get(m, "params", "text")
		}},
	}
	zalgo := "e" + strings.Repeat("\u0301", 20000) + " after"
	// No two ASCII characters side by side: uniseg finds every cut.
	wide := strings.Repeat("日本語👩‍👩‍👧🇫🇷🇩🇪🇮e\u0301한\r\n", 3000)
	for _, c := range cases {
		for _, s := range []string{text, zalgo, wide} {
			var got strings.Builder
			cuts := []int{}
			ls := lines(t, c.enc([]byte("left over"), s)[len("left over"):])
			for _, m := range ls {
				part := c.text(m)
				if !utf8.ValidString(part) {
					t.Errorf("%s: a part is not valid UTF-8", c.name)
				}
				got.WriteString(part)
				cuts = append(cuts, got.Len())
			}
			if got.String() != s {
				t.Fatalf("%s: the parts do not make the text (%d bytes of %d)", c.name, got.Len(), len(s))
			}
			if len(ls) < 2 {
				t.Errorf("%s: %d bytes went out as %d line(s)", c.name, len(s), len(ls))
			}
			if s != zalgo {
				at := boundaries(s)
				for _, cut := range cuts {
					if !at[cut] {
						t.Errorf("%s: cut at %d, inside a grapheme cluster (%q|%q)", c.name, cut, s[max(cut-8, 0):cut], s[cut:min(cut+8, len(s))])
					}
				}
			}
		}
		if n := len(lines(t, c.enc(nil, "short \"one\"\n"))); n != 1 {
			t.Errorf("%s: a short text went out as %d lines", c.name, n)
		}
		if n := len(lines(t, c.enc(nil, ""))); n != 1 {
			t.Errorf("%s: an empty text went out as %d lines", c.name, n)
		}
	}
}

// TestCaps: what ACP sends whole in each update is cut to about MaxText:
// a tool call's text (with "… N bytes more" after it), and a plan's
// entries, each to its share ("…" after what was cut); a plan and a text
// that fit are left as they are, and so is the plan an agent asks to
// approve (ExitPlanMode's, kind switch_mode), which the user must read
// whole.
func TestCaps(t *testing.T) {
	const sid = "/tmp/Doc.silverpoint"
	long := longText(50000)
	content := func(b []byte) string {
		t.Helper()
		ls := lines(t, b)
		if len(ls) != 1 {
			t.Fatalf("%d lines", len(ls))
		}
		c := ls[0]["params"].(map[string]any)["update"].(map[string]any)["content"].([]any)
		return c[0].(map[string]any)["content"].(map[string]any)["text"].(string)
	}
	tool := archive.ItemFromMap(map[string]any{"id": "t1", "type": archive.TypeTool, "name": "Read", "summary": "/tmp/big.txt",
		"status": archive.StatusSucceeded, "detail": long})
	got := content(AppendTool(nil, sid, ToolOf("tool_call_update", tool, nil, "")))
	text, more, ok := strings.Cut(got, "\n… ")
	if !ok || !strings.HasPrefix(long, text) || more != strconv.Itoa(len(long)-len(text))+" bytes more" || jsonCost(text) > MaxText {
		t.Errorf("a long tool text: %d bytes kept, then %q", len(text), more)
	}
	// A command's output that escapes to more than it is (colours).
	colours := strings.Repeat("\x1b[31mred\x1b[0m\n", 1000)
	view := &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`make`", Output: colours}
	got = content(AppendTool(nil, sid, ToolOf("tool_call_update", tool, view, "")))
	if body, more, ok := strings.Cut(got, "\n```\n… "); !ok || !strings.HasPrefix(colours, strings.TrimPrefix(body, "```\n")) || !strings.HasSuffix(more, " bytes more") {
		t.Errorf("a colourful output: %d bytes, ending %q", len(got), got[max(len(got)-40, 0):])
	}
	tool.Set("detail", "short")
	if got := content(AppendTool(nil, sid, ToolOf("tool_call_update", tool, nil, ""))); got != "short" {
		t.Errorf("a short tool text: %q", got)
	}
	plan := archive.ItemFromMap(map[string]any{"id": "p1", "type": archive.TypeDirections, "text": long})
	b := AppendTool(nil, sid, ToolOf("tool_call", plan, nil, ""))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got := m["params"].(map[string]any)["update"].(map[string]any)["content"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"]; got != long {
		t.Errorf("the plan to approve was cut")
	}

	var entries []itemmap.PlanEntry
	for i := range 100 {
		entries = append(entries, itemmap.PlanEntry{Content: fmt.Sprint(i, " ", longText(500)), Status: itemmap.PlanPending})
	}
	ls := lines(t, AppendPlan(nil, sid, entries))
	if n := len(ls[0]["params"].(map[string]any)["update"].(map[string]any)["entries"].([]any)); n != 100 {
		t.Fatalf("%d entries", n)
	}
	for i, e := range ls[0]["params"].(map[string]any)["update"].(map[string]any)["entries"].([]any) {
		c := e.(map[string]any)["content"].(string)
		if kept, ok := strings.CutSuffix(c, "…"); !ok || !strings.HasPrefix(entries[i].Content, kept) || !utf8.ValidString(c) {
			t.Errorf("entry %d: %q", i, c)
		}
	}
	short := []itemmap.PlanEntry{{Content: "Read the code"}, {Content: "Fix it"}}
	ls = lines(t, AppendPlan(nil, sid, short))
	if e := ls[0]["params"].(map[string]any)["update"].(map[string]any)["entries"].([]any); e[0].(map[string]any)["content"] != "Read the code" || e[1].(map[string]any)["content"] != "Fix it" {
		t.Errorf("a short plan: %v", e)
	}
}
