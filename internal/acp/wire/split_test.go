package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
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
	for _, c := range cases {
		for _, s := range []string{text, zalgo} {
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
			if s == text {
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
