package canonjson

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Encode writes v in the canonical form: object keys sorted by Unicode code
// point at every depth, two spaces a level, `"key" : value`, one member or
// element a line, `{}` and `[]` for empty containers, UTF-8 without `\u`
// escapes except for control characters, `/` and `<>&` unescaped, numbers as
// their json.Number text, and no trailing newline. An object or array
// nested PrettyDepth levels deep or more is written on one line, as
// EncodeCompact writes it. The same value always gives the same bytes.
func Encode(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append is Encode appending to buf.
func Append(buf []byte, v any) ([]byte, error) {
	return AppendAt(buf, v, 0)
}

// AppendAt appends v's canonical form as it appears nested depth levels
// deep: continuation lines are indented for that depth, the first line is
// not. Its result can be placed in a value as Raw at the same depth.
func AppendAt(buf []byte, v any, depth int) ([]byte, error) {
	e := encoder{buf: buf}
	if err := e.value(v, depth); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Write writes v's canonical form to w: the same bytes as Encode, handed
// to w in pieces of about 32 KiB as they are made (and a Raw of that size or
// more directly), so that no buffer holds the whole output. On an error
// part of the output may have been written.
func Write(w io.Writer, v any) error {
	return write(w, v, false)
}

// writeBufs holds the buffers Write and WriteCompact gather their output
// in, reused.
var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, flushSize+4096); return &b }}

// maxKeptBuf is the largest buffer writeBufs keeps: one grown for a long
// string does not stay in memory.
const maxKeptBuf = 256 << 10

func write(w io.Writer, v any, compact bool) error {
	bp := writeBufs.Get().(*[]byte)
	e := encoder{buf: (*bp)[:0], w: w, compact: compact}
	err := e.value(v, 0)
	if err == nil {
		err = e.flush()
	}
	if cap(e.buf) <= maxKeptBuf {
		*bp = e.buf[:0]
		writeBufs.Put(bp)
	}
	return err
}

// WriteCompact writes v's one-line form (EncodeCompact's bytes) to w, in
// pieces of about 32 KiB as Write does.
func WriteCompact(w io.Writer, v any) error {
	return write(w, v, true)
}

// PrettyDepth is the depth from which Encode writes objects and arrays on
// one line: the top value is at depth 0, its members at 1. Above it each
// level costs a line's indentation, two bytes more a level; below it, none,
// so a structure nested far deeper (a host's field, a tool's input) is
// written at a size proportional to its text, not to its depth times it.
// Real conversations nest 3 to 13 levels.
const PrettyDepth = 32

// flushSize is how much Write gathers before it writes.
const flushSize = 32 << 10

// Raw is text already in canonical form for the depth it is placed at (see
// AppendAt); Encode writes it unchanged. It lets a caller reuse the encoding
// of a part that did not change. It must come from AppendAt, whose output,
// like Encode's, is always UTF-8 (a Go string that is not is written with
// U+FFFD in place of its invalid bytes).
type Raw []byte

// EncodeCompact writes v on one line with sorted keys and no spaces, for
// JSON-lines output. Strings and numbers are written as in Encode.
func EncodeCompact(v any) ([]byte, error) {
	return AppendCompact(nil, v)
}

// AppendCompact is EncodeCompact appending to buf.
func AppendCompact(buf []byte, v any) ([]byte, error) {
	e := encoder{buf: buf, compact: true}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// UnsupportedError reports a Go value Encode cannot write.
type UnsupportedError struct {
	Value any
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("canonjson: cannot encode %T value %v", e.Value, e.Value)
}

type encoder struct {
	buf     []byte
	compact bool
	w       io.Writer // where Write sends buf; nil: buf holds everything
}

// flush writes buf to w and empties it.
func (e *encoder) flush() error {
	if e.w == nil || len(e.buf) == 0 {
		return nil
	}
	_, err := e.w.Write(e.buf)
	e.buf = e.buf[:0]
	return err
}

// member ends one member or element: the buffer is written once it holds
// flushSize bytes.
func (e *encoder) member() error {
	if e.w != nil && len(e.buf) >= flushSize {
		return e.flush()
	}
	return nil
}

// flat reports whether a container at depth is written on one line.
func (e *encoder) flat(depth int) bool { return e.compact || depth >= PrettyDepth }

// newline begins a line indented indent levels in a container at depth
// container, unless that container is written on one line.
func (e *encoder) newline(container, indent int) {
	if e.flat(container) {
		return
	}
	e.buf = append(e.buf, '\n')
	for range indent {
		e.buf = append(e.buf, ' ', ' ')
	}
}

func (e *encoder) value(v any, depth int) error {
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case string:
		e.buf = AppendString(e.buf, v)
	case Raw:
		if e.w != nil && len(v) >= flushSize {
			if err := e.flush(); err != nil {
				return err
			}
			_, err := e.w.Write(v)
			return err
		}
		e.buf = append(e.buf, v...)
	case json.Number:
		if !validNumber(string(v)) {
			return &UnsupportedError{Value: v}
		}
		e.buf = append(e.buf, v...)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(v), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, v, 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(v), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, v, 10)
	case float64:
		s, err := FormatFloat(v)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, s...)
	case map[string]any:
		if len(v) == 0 {
			e.buf = append(e.buf, '{', '}')
			return nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // byte order of UTF-8 is code point order
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.newline(depth, depth+1)
			e.buf = AppendString(e.buf, k)
			if e.flat(depth) {
				e.buf = append(e.buf, ':')
			} else {
				e.buf = append(e.buf, " : "...)
			}
			if err := e.value(v[k], depth+1); err != nil {
				return err
			}
			if err := e.member(); err != nil {
				return err
			}
		}
		e.newline(depth, depth)
		e.buf = append(e.buf, '}')
	case []any:
		if len(v) == 0 {
			e.buf = append(e.buf, '[', ']')
			return nil
		}
		e.buf = append(e.buf, '[')
		for i, x := range v {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.newline(depth, depth+1)
			if err := e.value(x, depth+1); err != nil {
				return err
			}
			if err := e.member(); err != nil {
				return err
			}
		}
		e.newline(depth, depth)
		e.buf = append(e.buf, ']')
	case Array:
		n := v.Len()
		if n == 0 {
			e.buf = append(e.buf, '[', ']')
			return nil
		}
		e.buf = append(e.buf, '[')
		for i := range n {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.newline(depth, depth+1)
			if err := e.value(v.At(i), depth+1); err != nil {
				return err
			}
			if err := e.member(); err != nil {
				return err
			}
		}
		e.newline(depth, depth)
		e.buf = append(e.buf, ']')
	default:
		return &UnsupportedError{Value: v}
	}
	return nil
}

// Array is an array whose elements are made as they are written: the
// encoders write At(0) through At(Len()-1) exactly as a []any of them, so
// that a large array of values made for the occasion need not exist whole.
type Array interface {
	Len() int
	At(i int) any
}

// FormatFloat gives the shortest text that reads back as f, without an
// exponent unless the number is very large or very small.
func FormatFloat(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", &UnsupportedError{Value: f}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.FormatFloat(f, format, -1, 64), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: `"` and `\` escaped, control
// characters as \b \f \n \r \t or \u00XX, everything else (including `/`,
// `<>&` and non-ASCII) as its UTF-8 bytes. Invalid UTF-8 becomes U+FFFD.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	buf = appendStringBody(buf, s)
	return append(buf, '"')
}

// AppendStringParts appends the concatenation of parts as one JSON string,
// as AppendString would, without making the concatenation. (Each part's
// invalid UTF-8 is replaced on its own: a part that ends inside a
// character is not joined with the next.)
func AppendStringParts(buf []byte, parts ...string) []byte {
	buf = append(buf, '"')
	for _, s := range parts {
		buf = appendStringBody(buf, s)
	}
	return append(buf, '"')
}

// appendStringBody appends what AppendString puts between the quotes.
func appendStringBody(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: printable ASCII
		// other than `"` and `\`.
		for i+8 <= len(s) {
			w := s[i : i+8]
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			if m := special8(x); m != 0 {
				// Straight to the first byte that needs a look (the
				// lowest flagged byte is exact).
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(buf, s[start:]...)
}

// special8 flags (with its high bit) each byte of x that is not written as
// it is: >= 0x80, below 0x20, a '"', a '\'. The lowest flagged byte is
// exact; a borrow may flag bytes above it that need no look.
func special8(x uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	q, b := x^(ones*'"'), x^(ones*'\\')
	return (x | (x - ones*0x20) | ((q - ones) &^ q) | ((b - ones) &^ b)) & high
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	d := decoder{data: []byte(s)}
	v, err := d.number()
	return err == nil && d.pos == len(s) && v != nil
}
