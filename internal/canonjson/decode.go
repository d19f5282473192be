// Package canonjson reads any JSON into a plain value tree and writes that
// tree back in spbridge's canonical, byte-stable form.
//
// The tree uses map[string]any for objects, []any for arrays, string,
// json.Number (the number's text exactly as read), bool and nil. Encode
// accepts the same types plus Go's integer and float types for numbers made
// in memory.
package canonjson

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts.
const MaxDepth = 10000

// SyntaxError reports where and why input is not JSON.
type SyntaxError struct {
	Offset int64 // byte offset of the problem
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// DepthError reports JSON nested deeper than the reader accepts: where the
// first array or object past the limit opens, and the limit.
type DepthError struct {
	Offset int64
	Max    int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("nested deeper than %d levels at byte %d", e.Max, e.Offset)
}

// Decode parses one JSON value, surrounded by optional whitespace, into a
// value tree. Numbers keep their text as json.Number. A key that occurs twice
// keeps its last value. Text that is not UTF-8 and a \u escape of a lone
// UTF-16 surrogate are errors (*SyntaxError), never replaced: JSON is UTF-8
// (RFC 8259 §8.1), and a replacement would change what was written without a
// word, so that encoding the value again would not give back its bytes.
// Arrays and objects nested deeper than MaxDepth are an error too
// (*DepthError).
func Decode(data []byte) (any, error) {
	return DecodeDepth(data, MaxDepth)
}

// DecodeDepth is Decode for a format that nests no deeper than maxDepth
// (at most MaxDepth): deeper input fails with a *DepthError as soon as the
// reader reaches it, before any of it is built.
func DecodeDepth(data []byte, maxDepth int) (any, error) {
	d := decoder{data: data, max: min(maxDepth, MaxDepth)}
	d.skipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errorf("data after the value")
	}
	return v, nil
}

type decoder struct {
	data []byte
	pos  int
	max  int               // the deepest nesting accepted
	keys map[string]string // object keys read so far, to share (see key)
	vals map[string]any    // short string values read so far (see shortStr)
}

// Keys of at most maxKeyLen bytes are shared, up to maxKeys of them; so
// are string values of at most maxValLen bytes, up to maxVals of them.
const (
	maxKeyLen = 64
	maxKeys   = 4096
	maxValLen = 16
	maxVals   = 4096
)

func (d *decoder) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: int64(d.pos), Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end of input")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		if v, ok := d.shortStr(); ok {
			return v, nil
		}
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	default:
		return nil, d.errorf("unexpected character %q", c)
	}
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.errorf("invalid literal")
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	if depth > d.max {
		return nil, &DepthError{Offset: int64(d.pos), Max: d.max}
	}
	d.pos++ // {
	m := make(map[string]any)
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("expected a string key")
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("expected ':' after a key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in an object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, d.errorf("expected ',' or '}' in an object")
		}
	}
}

func (d *decoder) array(depth int) (any, error) {
	if depth > d.max {
		return nil, &DepthError{Offset: int64(d.pos), Max: d.max}
	}
	d.pos++ // [
	a := []any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return a, nil
	}
	for {
		d.skipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in an array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, nil
		default:
			return nil, d.errorf("expected ',' or ']' in an array")
		}
	}
}

func (d *decoder) number() (any, error) {
	start := d.pos
	p := d.pos
	n := len(d.data)
	if p < n && d.data[p] == '-' {
		p++
	}
	switch {
	case p < n && d.data[p] == '0':
		p++
	case p < n && d.data[p] >= '1' && d.data[p] <= '9':
		for p < n && isDigit(d.data[p]) {
			p++
		}
	default:
		d.pos = p
		return nil, d.errorf("invalid number")
	}
	if p < n && d.data[p] == '.' {
		p++
		if p >= n || !isDigit(d.data[p]) {
			d.pos = p
			return nil, d.errorf("invalid number")
		}
		for p < n && isDigit(d.data[p]) {
			p++
		}
	}
	if p < n && (d.data[p] == 'e' || d.data[p] == 'E') {
		p++
		if p < n && (d.data[p] == '+' || d.data[p] == '-') {
			p++
		}
		if p >= n || !isDigit(d.data[p]) {
			d.pos = p
			return nil, d.errorf("invalid number")
		}
		for p < n && isDigit(d.data[p]) {
			p++
		}
	}
	d.pos = p
	return json.Number(d.data[start:p]), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// key reads an object's key, whose opening quote is at d.pos. A short key
// without escapes is read once per input: the many objects of one shape
// (a conversation's items, say) then share their keys' memory.
func (d *decoder) key() (string, error) {
	start := d.pos + 1
	end := start
	for end < len(d.data) && end-start <= maxKeyLen {
		c := d.data[end]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		end++
	}
	if end >= len(d.data) || d.data[end] != '"' || end-start > maxKeyLen {
		return d.str()
	}
	b := d.data[start:end]
	if k, ok := d.keys[string(b)]; ok {
		d.pos = end + 1
		return k, nil
	}
	if !utf8.Valid(b) {
		return d.str()
	}
	k := string(b)
	if len(d.keys) < maxKeys {
		if d.keys == nil {
			d.keys = make(map[string]string)
		}
		d.keys[k] = k
	}
	d.pos = end + 1
	return k, nil
}

// shortStr reads a string value of at most maxValLen bytes without escapes
// whose opening quote is at d.pos, and reports whether it did. Such values
// (a type, a status, a name) repeat across the objects of one input: each
// is made once, boxed, and shared.
func (d *decoder) shortStr() (any, bool) {
	start := d.pos + 1
	end := start
	for end < len(d.data) && end-start <= maxValLen {
		c := d.data[end]
		if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		end++
	}
	if end >= len(d.data) || d.data[end] != '"' || end-start > maxValLen {
		return nil, false
	}
	b := d.data[start:end]
	v, ok := d.vals[string(b)]
	if !ok {
		s := string(b)
		v = s
		if len(d.vals) < maxVals {
			if d.vals == nil {
				d.vals = make(map[string]any)
			}
			d.vals[s] = v
		}
	}
	d.pos = end + 1
	return v, true
}

// str reads a string whose opening quote is at d.pos.
func (d *decoder) str() (string, error) {
	d.pos++ // "
	start := d.pos
	// Fast path: no escapes, valid UTF-8, no control characters.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			if utf8.Valid(s) {
				d.pos++
				return string(s), nil
			}
			d.pos = start
			return d.slowStr()
		}
		if c == '\\' || c < 0x20 {
			d.pos = start
			return d.slowStr()
		}
		d.pos++
	}
	return "", d.errorf("unexpected end of input in a string")
}

func (d *decoder) slowStr() (string, error) {
	buf := make([]byte, 0, 64)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(buf), nil
		case c < 0x20:
			return "", d.errorf("control character in a string")
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				return "", d.errorf("unexpected end of input in a string")
			}
			e := d.data[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.errorf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					at := d.pos - 6
					r2 := rune(utf8.RuneError)
					if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						d.pos += 2
						if lo, ok := d.hex4(); ok {
							r2 = utf16.DecodeRune(r, lo)
						}
					}
					if r2 == utf8.RuneError {
						d.pos = at
						return "", d.errorf("lone UTF-16 surrogate %s", d.data[at:at+6])
					}
					r = r2
				}
				buf = utf8.AppendRune(buf, r)
			default:
				d.pos--
				return "", d.errorf("invalid escape character %q", e)
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", d.errorf("invalid UTF-8 in a string")
			}
			buf = append(buf, d.data[d.pos:d.pos+size]...)
			d.pos += size
		}
	}
	return "", d.errorf("unexpected end of input in a string")
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d.data[d.pos:d.pos+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	d.pos += 4
	return rune(v), true
}
