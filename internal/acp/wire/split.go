package wire

import (
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// MaxText is about the most text one line carries: a longer message goes
// out as several chunks of the same message, a longer write to a
// client's terminal or append to an item as several, each cut between
// grapheme clusters. Clients that read a line at a time with a 64 KiB
// limit (Python's asyncio streams, the Python ACP SDK) read every one.
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

// splitText calls f with s in pieces, in order, each costing at most max
// bytes in a JSON string (jsonCost), cut between grapheme clusters (so
// never inside a character); a cluster that alone costs more than max is
// cut between its characters. s whole when it fits (also when it is "").
func splitText(s string, max int, f func(string)) {
	if len(s) <= max/6 || jsonCost(s) <= max {
		f(s)
		return
	}
	start, cost, state := 0, 0, -1
	for pos, rest := 0, s; rest != ""; {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		c := jsonCost(cluster)
		if cost+c > max && pos > start {
			f(s[start:pos])
			start, cost = pos, 0
		}
		if c > max {
			// One cluster (a character and thousands of marks): cut
			// between its characters.
			for i := 0; i < len(cluster); {
				_, size := utf8.DecodeRuneInString(cluster[i:])
				rc := jsonCost(cluster[i : i+size])
				if cost+rc > max && pos+i > start {
					f(s[start : pos+i])
					start, cost = pos+i, 0
				}
				cost += rc
				i += size
			}
			pos += len(cluster)
			continue
		}
		cost += c
		pos += len(cluster)
	}
	if start < len(s) {
		f(s[start:])
	}
}
