package jsonline

import "bytes"

// MaxDepth is the deepest nesting of arrays and objects a line may have to
// be read: a deeper line is skipped with a notice. JSON validation recurses
// once a level, so a line of ten million "[" would exhaust the stack; the
// recorded streams nest at most 13 levels (a tool's input included), and
// the saved conversation (archive.MaxConversationDepth, 1,100) must still
// be able to hold whatever a line carries, a few levels further down.
const MaxDepth = 1000

// structural marks the bytes the depth scan stops at outside strings.
var structural = [256]bool{'"': true, '[': true, '{': true, ']': true, '}': true}

// TooDeep reports whether the JSON text b nests arrays and objects deeper
// than MaxDepth, counting only brackets outside strings (escapes honoured).
// It does not validate b and allocates nothing; text that is not JSON gives
// an answer that does not matter, since the validation after it fails.
func TooDeep(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !structural[c] {
			continue
		}
		switch c {
		case '[', '{':
			depth++
			if depth > MaxDepth {
				return true
			}
		case ']', '}':
			depth--
		case '"':
			// Skip the string: find the next quote not escaped by an odd
			// run of backslashes.
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return false // an unterminated string: not JSON
				}
				i += j + 1
				k := i - 1
				for k >= 0 && b[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		}
	}
	return false
}
