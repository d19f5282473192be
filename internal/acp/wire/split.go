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
// thousands of marks); len(s) when all of s does. It walks s only as far
// as the cut.
func cut(s string, max int) int {
	cost, state := 0, -1
	for pos, rest := 0, s; rest != ""; {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		c := jsonCost(cluster)
		if cost+c <= max {
			cost += c
			pos += len(cluster)
			continue
		}
		if pos > 0 {
			return pos
		}
		for i := 0; i < len(cluster); {
			_, size := utf8.DecodeRuneInString(cluster[i:])
			if cost += jsonCost(cluster[i : i+size]); cost > max && i > 0 {
				return i
			}
			i += size
		}
		return len(cluster)
	}
	return len(s)
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
