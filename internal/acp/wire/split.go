package wire

import (
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// MaxText is about the most text one line carries: a longer message goes
// out as several chunks of the same message, a longer write to a
// client's terminal or append to an item as several, each cut between
// grapheme clusters; a tool call's text and a plan, which ACP sends whole
// in each update, are cut to it. Clients that read a line at a time with
// a 64 KiB limit (Python's asyncio streams, the Python ACP SDK) read
// every one.
const MaxText = 16 << 10

// jsonCost is what s costs between a JSON string's quotes, as canonjson
// writes it: `"`, `\` and the short escapes two bytes, other control
// characters six, any other byte one.
func jsonCost(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n += byteCost(s[i])
	}
	return n
}

func byteCost(c byte) int {
	switch {
	case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
		return 2
	case c < 0x20:
		return 6
	}
	return 1
}

// fits reports whether s costs at most max in a JSON string.
func fits(s string, max int) bool { return len(s) <= max/6 || jsonCost(s) <= max }

// cut is the length of the longest start of s that costs at most max in
// a JSON string and ends between grapheme clusters (between characters,
// when s's first cluster alone costs more than max: a character and
// thousands of marks); len(s) when all of s does. It reads s only as far
// as the cut: between two ASCII characters (but CR LF) there always is a
// cluster boundary, so uniseg segments only from the last such place
// before it (from s's start when there is none, as in text without ASCII).
func cut(s string, max int) int {
	end, cost := 0, 0
	for end < len(s) && cost+byteCost(s[end]) <= max {
		cost += byteCost(s[end])
		end++
	}
	if end == len(s) {
		return end
	}
	// The nearest place at or before end that two ASCII characters show
	// to be a boundary: the cut when it is near, else where uniseg starts.
	from := 0
	for i := end; i > 0; i-- {
		if asciiBoundary(s, i) {
			if end-i <= 64 {
				return i
			}
			from = i
			break
		}
	}
	// Segment from a boundary at or before the end: the last cluster
	// boundary at or before it.
	last, state := from, -1
	for pos, rest := from, s[from:]; pos < end; {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if pos+len(cluster) > end {
			break
		}
		pos += len(cluster)
		last = pos
	}
	if last > 0 {
		return last
	}
	// The first cluster alone passes max: cut between its characters.
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	if end == 0 {
		_, end = utf8.DecodeRuneInString(s)
	}
	return end
}

// asciiBoundary reports whether s has a grapheme cluster boundary at i
// that the two ASCII characters around it show (GB3 to GB9b: no ASCII
// character extends another, and only CR LF stays together).
func asciiBoundary(s string, i int) bool {
	a, b := s[i-1], s[i]
	return a < utf8.RuneSelf && b < utf8.RuneSelf && (a != '\r' || b != '\n')
}

// splitText calls f with s in pieces, in order, each costing at most max
// bytes in a JSON string, cut between grapheme clusters (cut); s whole
// when it fits (also when it is "").
func splitText(s string, max int, f func(string)) {
	if fits(s, max) {
		f(s)
		return
	}
	for s != "" {
		n := cut(s, max)
		f(s[:n])
		s = s[n:]
	}
}

// capText is s cut to cost at most max in a JSON string (cut), and how
// many bytes were left out.
func capText(s string, max int) (string, int) {
	if fits(s, max) {
		return s, 0
	}
	n := cut(s, max)
	return s[:n], len(s) - n
}
