package jsonrpc

// MaxDepth is the deepest nesting of arrays and objects a message
// may have: encoding/json, which reads every message, refuses a deeper
// one (its limit is 10,000 levels).
const MaxDepth = 10000

// TooDeep reports whether the JSON text b nests arrays and objects deeper
// than max, counting only brackets outside strings (escapes honoured). It
// does not validate b and allocates nothing.
func TooDeep(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
