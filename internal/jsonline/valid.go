package jsonline

import "encoding/binary"

// Valid reports whether b is valid JSON (the grammar gjson.Valid
// accepts: no check of UTF-8) nested no deeper than MaxDepth. It walks b
// once and reads a string's bytes eight at a time, since nearly all of a
// stream's bytes are inside strings; a line that is too deep is reported
// invalid as soon as it goes past MaxDepth, so the recursion is bounded.
func Valid(b []byte) bool {
	i, ok := validAny(b, skipSpace(b, 0), 0)
	if !ok {
		return false
	}
	return skipSpace(b, i) == len(b)
}

// isSpace marks the whitespace JSON allows between tokens.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace[b[i]] {
		i++
	}
	return i
}

// validAny reads one value at b[i:] (no whitespace before it) inside depth
// enclosing arrays and objects, and returns the index after it.
func validAny(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; c {
	case '{':
		if depth >= MaxDepth {
			return i, false
		}
		return validObject(b, i+1, depth+1)
	case '[':
		if depth >= MaxDepth {
			return i, false
		}
		return validArray(b, i+1, depth+1)
	case '"':
		return validString(b, i+1)
	case 't':
		return ScanWord(b, i, "true")
	case 'f':
		return ScanWord(b, i, "false")
	case 'n':
		return ScanWord(b, i, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return ScanNumber(b, i)
		}
		return i, false
	}
}

// ScanWord reads the literal w (true, false, null) at b[i:] and returns
// the index after it.
func ScanWord(b []byte, i int, w string) (int, bool) {
	if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
		return i + len(w), true
	}
	return i, false
}

func validObject(b []byte, i, depth int) (int, bool) {
	i = skipSpace(b, i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = validString(b, i+1); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = validAny(b, skipSpace(b, i+1), depth); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return i, false
		}
	}
}

func validArray(b []byte, i, depth int) (int, bool) {
	i = skipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = validAny(b, i, depth); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ']':
			return i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return i, false
		}
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether any of the eight bytes in w is below 0x20, a
// quote or a backslash: the bytes a string's scan must stop at. Each test
// is the exact "has a byte less than n" (n <= 128) or "has a zero byte"
// formula, so a word without them is never stopped at, nor one with them
// passed over.
func special(w uint64) bool {
	lt := (w - ones*0x20) &^ w
	q := w ^ (ones * '"')
	q = (q - ones) &^ q
	bs := w ^ (ones * '\\')
	bs = (bs - ones) &^ bs
	return (lt|q|bs)&highs != 0
}

// validString reads a string's contents and closing quote at b[i:] and
// returns the index after the quote.
func validString(b []byte, i int) (int, bool) {
	for {
		for len(b)-i >= 8 && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < ' ':
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 || !ishex(b[i+1]) || !ishex(b[i+2]) || !ishex(b[i+3]) || !ishex(b[i+4]) {
					return i, false
				}
				i += 5
			default:
				return i, false
			}
		default:
			i++
		}
	}
}

func ishex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(b []byte, i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }

// ScanNumber reads a number at b[i:] and returns the index after it: an
// optional minus, 0 or digits not
// starting with 0, an optional fraction and an optional exponent.
func ScanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if !isDigit(b, i) {
		return i, false
	}
	if b[i] == '0' {
		i++
	} else {
		for isDigit(b, i) {
			i++
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !isDigit(b, i) {
			return i, false
		}
		for isDigit(b, i) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !isDigit(b, i) {
			return i, false
		}
		for isDigit(b, i) {
			i++
		}
	}
	return i, true
}
