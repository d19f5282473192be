// Package jsonline reads one line of JSON once: Valid checks it against
// the grammar gjson accepts, nested no deeper than MaxDepth, without
// recursion; a Doc validates it and lays out its values with their place
// in the line in the same pass, so that a field is found, an array walked
// or a value of any size skipped in a few steps, every value reading as
// gjson reads it; TooDeep tells a line nested too deep without reading it.
// The CLI mappers of internal/itemmap read every line through it. A Doc
// borrows the line: what it gives as a string has memory of its own,
// what it gives as a view does not.
package jsonline

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Doc is one line read once: validated (the grammar Valid accepts,
// nested no deeper than MaxDepth) and laid out as a list of its values in
// order, each with its place in the line, so that finding a field, walking
// an array or skipping a value of any size costs a few steps, never a scan
// of the bytes again. A mapper keeps one Doc and reads every line into it;
// the values read from it (Value) are valid until the next line.
//
// The line is borrowed: its bytes are the caller's again once the mapper
// returns. So what a Value gives as a string (String, Raw, Result) has
// memory of its own, and may be kept; view and rawView give the line's own
// bytes, for what is compared or copied at once and never kept.
type Doc struct {
	s     string  // the line (shares the caller's bytes)
	nodes []Node  // the values in the order they start; an object's keys are values too
	stack []int32 // the containers open while parsing
	buf   []byte  // scratch for unescaping keys
}

// Node is one value of a line: its raw text is s[start:end]. next is the
// index (among the line's nodes) of the first node after the value and
// everything in it, so a value is skipped in one step. An object's
// children are its keys and values, alternately; an array's, its
// elements.
type Node struct {
	start, end uint32
	next       int32
	kind       byte // '{', '[', '"', '0' (a number), 't', 'f', 'n'
	esc        bool // a string with a backslash: its text must be unescaped
}

// parse reads line into d and reports whether it is valid JSON no deeper
// than MaxDepth (exactly when Valid says so). The line's bytes must not
// change while d's values are used.
func (d *Doc) Parse(line []byte) bool {
	if uint64(len(line)) >= 1<<31 {
		return false
	}
	d.s = unsafe.String(unsafe.SliceData(line), len(line))
	var ok bool
	d.nodes, d.stack, ok = parseNodes(line, d.nodes[:0], d.stack[:0])
	if !ok {
		d.nodes = d.nodes[:0]
	}
	return ok
}

// parseNodes appends the nodes of line b to nodes, with stack as scratch.
// The line's nodes count from its first: next is an index among them.
func parseNodes(b []byte, nodes []Node, stack []int32) (_ []Node, _ []int32, ok bool) {
	base := len(nodes)
	n := len(b)
	i := skipSpace(b, 0)
value: // a value starts at i
	if i >= n {
		return nodes, stack, false
	}
	switch c := b[i]; c {
	case '{', '[':
		if len(stack) >= MaxDepth {
			return nodes, stack, false
		}
		stack = append(stack, int32(len(nodes)))
		nodes = pushNode(nodes, base, i, 0, c, false)
		i = skipSpace(b, i+1)
		if i < n && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
			i++
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			nodes[top].end, nodes[top].next = uint32(i), int32(len(nodes)-base)
			goto after
		}
		if c == '{' {
			goto key
		}
		goto value
	case '"':
		j, esc, ok := ScanString(b, i+1)
		if !ok {
			return nodes, stack, false
		}
		nodes = pushNode(nodes, base, i, j, '"', esc)
		i = j
	case 't', 'f', 'n':
		w := "null"
		if c == 't' {
			w = "true"
		} else if c == 'f' {
			w = "false"
		}
		j, ok := ScanWord(b, i, w)
		if !ok {
			return nodes, stack, false
		}
		nodes = pushNode(nodes, base, i, j, c, false)
		i = j
	default:
		if c != '-' && (c < '0' || c > '9') {
			return nodes, stack, false
		}
		j, ok := ScanNumber(b, i)
		if !ok {
			return nodes, stack, false
		}
		nodes = pushNode(nodes, base, i, j, '0', false)
		i = j
	}
after: // a value ended at i
	if len(stack) == 0 {
		return nodes, stack, skipSpace(b, i) == n
	}
	i = skipSpace(b, i)
	if i >= n {
		return nodes, stack, false
	}
	{
		top := stack[len(stack)-1]
		switch c := b[i]; c {
		case ',':
			i = skipSpace(b, i+1)
			if nodes[top].kind == '{' {
				goto key
			}
			goto value
		case '}', ']':
			if c != nodes[top].kind+2 {
				return nodes, stack, false
			}
			i++
			stack = stack[:len(stack)-1]
			nodes[top].end, nodes[top].next = uint32(i), int32(len(nodes)-base)
			goto after
		default:
			return nodes, stack, false
		}
	}
key: // an object's key starts at i
	if i >= n || b[i] != '"' {
		return nodes, stack, false
	}
	{
		j, esc, ok := ScanString(b, i+1)
		if !ok {
			return nodes, stack, false
		}
		nodes = pushNode(nodes, base, i, j, '"', esc)
		i = skipSpace(b, j)
		if i >= n || b[i] != ':' {
			return nodes, stack, false
		}
		i = skipSpace(b, i+1)
	}
	goto value
}

// pushNode appends a node for the value at b[start:end] (end is set later
// for an array or object). It writes the node's fields in place: a node
// built aside and copied in whole is read back before its parts are
// written, which stalls the parse at every value.
func pushNode(nodes []Node, base, start, end int, kind byte, esc bool) []Node {
	if len(nodes) == cap(nodes) {
		nodes = slices.Grow(nodes, 1)
	}
	nodes = nodes[:len(nodes)+1]
	n := &nodes[len(nodes)-1]
	n.start, n.end, n.next, n.kind, n.esc = uint32(start), uint32(end), int32(len(nodes)-base), kind, esc
	return nodes
}

// ScanString reads a string's contents and closing quote at b[i:] (i just
// after the opening quote), checking them as Valid does, and
// returns the index after the quote and whether the string holds an
// escape. A string's first words (eight steps of eight bytes or an
// escape) are read eight bytes at a time; past them, the closing quote and
// each backslash are found with bytes.IndexByte and the runs between them
// are checked for control characters.
func ScanString(b []byte, i int) (end int, esc, ok bool) {
	for k := 0; k < 8; k++ {
		if len(b)-i < 8 {
			return scanStringTail(b, i, esc)
		}
		m := specialMask(binary.LittleEndian.Uint64(b[i:]))
		if m == 0 {
			i += 8
			continue
		}
		// The lowest byte flagged is exact: a formula's borrow only runs
		// upwards from a byte it rightly flags.
		i += bits.TrailingZeros64(m) >> 3
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, true
		case c < ' ':
			return i, esc, false
		}
		esc = true
		if i, ok = skipEscape(b, i+1); !ok {
			return i, esc, false
		}
	}
	return scanLong(b, i, esc)
}

// scanLong is ScanString past a string's first bytes.
func scanLong(b []byte, i int, esc bool) (end int, _, ok bool) {
	q := -1 // the next quote at or after i, when known
	for {
		if q < i {
			if q = bytes.IndexByte(b[i:], '"'); q < 0 {
				return len(b), esc, false
			}
			q += i
		}
		run := b[i:q]
		bs := bytes.IndexByte(run, '\\')
		if bs >= 0 {
			run = run[:bs]
		}
		if hasControl(run) {
			return i, esc, false
		}
		if bs < 0 {
			return q + 1, esc, true
		}
		esc = true
		if i, ok = skipEscape(b, i+bs+1); !ok {
			return i, esc, false
		}
	}
}

// scanStringTail is ScanString over the last few bytes of b.
func scanStringTail(b []byte, i int, esc bool) (end int, _, ok bool) {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, true
		case c < ' ':
			return i, esc, false
		case c == '\\':
			esc = true
			if i, ok = skipEscape(b, i+1); !ok {
				return i, esc, false
			}
		default:
			i++
		}
	}
	return i, esc, false
}

// skipEscape reads the rest of an escape at b[i:], after its backslash.
func skipEscape(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 1, true
	case 'u':
		if len(b)-i < 5 || !ishex(b[i+1]) || !ishex(b[i+2]) || !ishex(b[i+3]) || !ishex(b[i+4]) {
			return i, false
		}
		return i + 5, true
	}
	return i, false
}

// hasControl reports whether b has a byte below 0x20, looking at 32 bytes
// at a time.
func hasControl(b []byte) bool {
	const lt = ones * 0x20
	for len(b) >= 32 {
		w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
		if ((w0-lt)&^w0|(w1-lt)&^w1|(w2-lt)&^w2|(w3-lt)&^w3)&highs != 0 {
			return true
		}
		b = b[32:]
	}
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		if (w-lt)&^w&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < ' ' {
			return true
		}
	}
	return false
}

// specialMask has the high bit of each byte of w that is below 0x20, a
// quote or a backslash set (and maybe of bytes above the lowest such one).
func specialMask(w uint64) uint64 {
	lt := (w - ones*0x20) &^ w
	q := w ^ (ones * '"')
	q = (q - ones) &^ q
	bs := w ^ (ones * '\\')
	bs = (bs - ones) &^ bs
	return (lt | q | bs) & highs
}

// root is the line's value.
func (d *Doc) Root() Value {
	if len(d.nodes) == 0 {
		return Value{}
	}
	return Value{d, 0}
}

// Value is one value of a Doc, or no value (the zero Value, what a missing
// field gives). Its methods read as gjson.Result's do, so the mapper sees
// exactly what it saw when it read lines with gjson.
type Value struct {
	d *Doc
	i int32
}

func (v Value) node() *Node { return &v.d.nodes[v.i] }

// Exists reports whether v is a value.
func (v Value) Exists() bool { return v.d != nil }

// Raw is v's JSON text, "" when v does not exist.
func (v Value) Raw() string { return strings.Clone(v.RawView()) }

// Type is v's type as gjson names it.
func (v Value) Type() gjson.Type {
	if v.d == nil {
		return gjson.Null
	}
	switch v.node().kind {
	case '"':
		return gjson.String
	case '0':
		return gjson.Number
	case 't':
		return gjson.True
	case 'f':
		return gjson.False
	case 'n':
		return gjson.Null
	}
	return gjson.JSON
}

// IsObject reports whether v is an object.
func (v Value) IsObject() bool { return v.d != nil && v.node().kind == '{' }

// IsArray reports whether v is an array.
func (v Value) IsArray() bool { return v.d != nil && v.node().kind == '[' }

// IsNull reports whether v is a JSON null (not a missing value).
func (v Value) IsNull() bool { return v.d != nil && v.node().kind == 'n' }

// str is the text of string node n, in memory of its own.
func (d *Doc) str(n *Node) string {
	raw := d.s[n.start+1 : n.end-1]
	if !n.esc {
		return strings.Clone(raw)
	}
	b := Unescape(nil, raw)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// strView is the text of string node n: the line's bytes when it has no
// escape.
func (d *Doc) strView(n *Node) string {
	raw := d.s[n.start+1 : n.end-1]
	if !n.esc {
		return raw
	}
	b := Unescape(nil, raw)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// view is String, sharing the line's bytes where it can: not to be kept.
func (v Value) View() string {
	if v.d != nil && v.node().kind == '"' {
		return v.d.strView(v.node())
	}
	return v.String()
}

// is reports whether v is a string whose text is s.
func (v Value) Is(s string) bool {
	if v.d == nil {
		return false
	}
	n := v.node()
	if n.kind != '"' {
		return false
	}
	if !n.esc {
		return v.d.s[n.start+1:n.end-1] == s
	}
	return v.d.keyIs(n, s)
}

// rawView is Raw, sharing the line's bytes: not to be kept.
func (v Value) RawView() string {
	if v.d == nil {
		return ""
	}
	n := v.node()
	return v.d.s[n.start:n.end]
}

// String is v as gjson's Result.String gives it: a string's text, a
// number's digits (or its value formatted when it has a fraction or an
// exponent), true or false, an object's or array's JSON, "" for null or a
// missing value.
func (v Value) String() string {
	if v.d == nil {
		return ""
	}
	n := v.node()
	switch n.kind {
	case '"':
		return v.d.str(n)
	case '0':
		raw := v.d.s[n.start:n.end]
		if plainInt(raw) {
			return strings.Clone(raw)
		}
		return strconv.FormatFloat(v.num(), 'f', -1, 64)
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return ""
	}
	return strings.Clone(v.d.s[n.start:n.end])
}

// plainInt reports whether a number's text is digits with an optional
// minus.
func plainInt(raw string) bool {
	i := 0
	if raw[0] == '-' {
		i++
	}
	for ; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

func (v Value) num() float64 {
	f, _ := strconv.ParseFloat(v.RawView(), 64)
	return f
}

// Int is v as gjson's Result.Int gives it.
func (v Value) Int() int64 {
	if v.d != nil && v.node().kind == '0' {
		// A short integer reads as itself: what gjson gives for any
		// integer a float64 holds exactly.
		if raw := v.RawView(); len(raw) <= 15 && plainInt(raw) && raw != "-" {
			n := int64(0)
			neg := raw[0] == '-'
			if neg {
				raw = raw[1:]
			}
			for i := 0; i < len(raw); i++ {
				n = n*10 + int64(raw[i]-'0')
			}
			if neg {
				n = -n
			}
			return n
		}
	}
	return v.result(false).Int()
}

// Bool is v as gjson's Result.Bool gives it.
func (v Value) Bool() bool {
	if v.d == nil {
		return false
	}
	switch v.node().kind {
	case 't':
		return true
	case 'f', 'n', '{', '[':
		return false
	}
	return v.result(false).Bool()
}

// Float is v as gjson's Result.Float gives it.
func (v Value) Float() float64 { return v.result(false).Float() }

// Result is v as the gjson.Result gjson would give for it (Index aside),
// in memory of its own.
func (v Value) Result() gjson.Result { return v.result(true) }

// result is Result; unless own is set, it shares the line's bytes.
func (v Value) result(own bool) gjson.Result {
	if v.d == nil {
		return gjson.Result{}
	}
	n := v.node()
	raw := v.d.s[n.start:n.end]
	if own {
		raw = strings.Clone(raw)
	}
	switch n.kind {
	case '"':
		if !n.esc {
			return gjson.Result{Type: gjson.String, Raw: raw, Str: raw[1 : len(raw)-1]}
		}
		return gjson.Result{Type: gjson.String, Raw: raw, Str: v.d.strView(n)}
	case '0':
		return gjson.Result{Type: gjson.Number, Raw: raw, Num: v.num()}
	case 't':
		return gjson.Result{Type: gjson.True, Raw: raw}
	case 'f':
		return gjson.Result{Type: gjson.False, Raw: raw}
	case 'n':
		return gjson.Result{Type: gjson.Null, Raw: raw}
	}
	return gjson.Result{Type: gjson.JSON, Raw: raw}
}

// keyIs reports whether key node k reads as key.
func (d *Doc) keyIs(k *Node, key string) bool {
	raw := d.s[k.start+1 : k.end-1]
	if !k.esc {
		return raw == key
	}
	d.buf = Unescape(d.buf[:0], raw)
	return string(d.buf) == key
}

// field is the value of v's first field named key (a name, not a path);
// no value when v is not an object or has no such field.
func (v Value) Field(key string) Value {
	if v.d == nil {
		return Value{}
	}
	nodes := v.d.nodes
	o := &nodes[v.i]
	if o.kind != '{' {
		return Value{}
	}
	for k := v.i + 1; k < o.next; k = nodes[k+1].next {
		if v.d.keyIs(&nodes[k], key) {
			return Value{v.d, k + 1}
		}
	}
	return Value{}
}

// Get reads path: field names joined by dots ("message.content"), each
// looked up as gjson's Get looks up a plain name. It takes no wildcards,
// array indexes or escapes.
func (v Value) Get(path string) Value {
	for {
		key, rest, more := strings.Cut(path, ".")
		v = v.Field(key)
		if !more || v.d == nil {
			return v
		}
		path = rest
	}
}

// ForEach calls fn with each field of an object (key, value) or each
// element of an array (no key, value) in order until fn returns false, and
// once with v itself (no key) for any other value, as gjson's ForEach does
// (which gives an array element's index as its key: the mapper never reads
// it).
func (v Value) ForEach(fn func(k, v Value) bool) {
	if v.d == nil {
		return
	}
	nodes := v.d.nodes
	o := &nodes[v.i]
	switch o.kind {
	case '{':
		for k := v.i + 1; k < o.next; k = nodes[k+1].next {
			if !fn(Value{v.d, k}, Value{v.d, k + 1}) {
				return
			}
		}
	case '[':
		for e := v.i + 1; e < o.next; e = nodes[e].next {
			if !fn(Value{}, Value{v.d, e}) {
				return
			}
		}
	default:
		fn(Value{}, v)
	}
}

// elems iterates an array's elements (none for other values).
func (v Value) Elems() Iter {
	if v.d == nil || v.node().kind != '[' {
		return Iter{}
	}
	return Iter{d: v.d, i: v.i + 1, end: v.node().next}
}

// Array is an array's elements, as gjson's Array gives them: none for
// null or a missing value, v alone for any other value.
func (v Value) Array() []Value {
	if v.d == nil || v.node().kind == 'n' {
		return nil
	}
	if v.node().kind != '[' {
		return []Value{v}
	}
	var out []Value
	for it := v.Elems(); ; {
		e, ok := it.Next()
		if !ok {
			return out
		}
		out = append(out, e)
	}
}

// Iter walks the elements of an array.
type Iter struct {
	d      *Doc
	i, end int32
}

func (it *Iter) Next() (Value, bool) {
	if it.d == nil || it.i >= it.end {
		return Value{}, false
	}
	v := Value{it.d, it.i}
	it.i = it.d.nodes[it.i].next
	return v, true
}

// ReadFields reads the fields names of object v in one pass into out, in
// the same order; of a key given twice the first counts, as gjson's Get
// reads it. A field v lacks, or every field when v is not an object, is
// no value.
func (v Value) ReadFields(names []string, out []Value) {
	clear(out)
	if !v.IsObject() {
		return
	}
	nodes := v.d.nodes
	o := &nodes[v.i]
	for k := v.i + 1; k < o.next; k = nodes[k+1].next {
		for i, name := range names {
			if out[i].d == nil && v.d.keyIs(&nodes[k], name) {
				out[i] = Value{v.d, k + 1}
				break
			}
		}
	}
}

// Unescape appends the text of the contents s of a valid JSON string
// to dst, exactly as gjson unescapes it: an escaped UTF-16 surrogate pair
// is one character, a lone surrogate U+FFFD, other bytes as they are. The
// text is never longer than s, so it is written into room made once,
// eight bytes at a time up to each backslash.
func Unescape(dst []byte, s string) []byte {
	w := len(dst)
	dst = slices.Grow(dst, len(s)+8)
	dst = dst[:cap(dst)]
	i := 0
	for {
		for len(s)-i >= 8 {
			v := le64(s[i:])
			binary.LittleEndian.PutUint64(dst[w:], v)
			t := v ^ (ones * '\\')
			if m := (t - ones) &^ t & highs; m != 0 {
				k := bits.TrailingZeros64(m) >> 3
				i, w = i+k, w+k
				break
			}
			i, w = i+8, w+8
		}
		for i < len(s) && s[i] != '\\' {
			dst[w] = s[i]
			i, w = i+1, w+1
		}
		if i+1 >= len(s) {
			return dst[:w]
		}
		c := s[i+1]
		i += 2
		switch c {
		case 'b':
			dst[w] = '\b'
		case 'f':
			dst[w] = '\f'
		case 'n':
			dst[w] = '\n'
		case 'r':
			dst[w] = '\r'
		case 't':
			dst[w] = '\t'
		case '"', '\\', '/':
			dst[w] = c
		case 'u':
			if len(s)-i < 4 {
				return dst[:w]
			}
			r := hex4(s[i:])
			i += 4
			if r >= 0xD800 && r < 0xDC00 && len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' {
				if r2 := hex4(s[i+2:]); r2 >= 0xDC00 && r2 < 0xE000 {
					r = utf16.DecodeRune(r, r2)
					i += 6
				}
			}
			w += utf8.EncodeRune(dst[w:], r)
			continue
		default:
			return dst[:w]
		}
		w++
	}
}

// le64 is the first eight bytes of s as a little-endian number.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hex4 reads four hex digits (checked by the parse).
func hex4(s string) rune {
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return utf8.RuneError // not reached for a parsed line
		}
		r = r<<4 | rune(c)
	}
	return r
}

// ParseInto reads line into d as Parse does, its values appended to nodes
// (with stack as scratch) so that many lines can share one array: d's
// values are the ones appended. It returns nodes and stack to reuse; on
// false, nodes as they were and d empty.
func (d *Doc) ParseInto(line []byte, nodes []Node, stack []int32) ([]Node, []int32, bool) {
	d.s, d.nodes = unsafe.String(unsafe.SliceData(line), len(line)), nil
	if uint64(len(line)) >= 1<<31 {
		return nodes, stack, false
	}
	start := len(nodes)
	nodes, stack, ok := parseNodes(line, nodes, stack[:0])
	if !ok {
		return nodes[:start], stack, false
	}
	d.nodes = nodes[start:len(nodes):len(nodes)]
	return nodes, stack, true
}

// Reset empties d, so that it holds nothing of the line it read.
func (d *Doc) Reset() { d.s, d.nodes = "", nil }

// Doc is the line v is a value of (nil for a value that does not exist).
func (v Value) Doc() *Doc { return v.d }

// Offset is where v's text begins in its line, in bytes (-1 for no
// value).
func (v Value) Offset() int {
	if v.d == nil {
		return -1
	}
	return int(v.node().start)
}

// Index is v's place among its line's values: two values of one Doc are
// the same value when their indexes are.
func (v Value) Index() int32 { return v.i }

// Members walks the members of an object in order:
//
//	for m := v.Members(); m.Next(); { m.Key(), m.Value() }
//
// A value that is not an object has none.
type Members struct {
	d      *Doc
	k, end int32 // the next member's key, and the end of the object
	key    int32 // the current member's key
}

// Members is a walk of object v's members.
func (v Value) Members() Members {
	if !v.IsObject() {
		return Members{}
	}
	return Members{d: v.d, k: v.i + 1, end: v.node().next}
}

// Next moves to the next member; false when there is none.
func (m *Members) Next() bool {
	if m.d == nil || m.k >= m.end {
		return false
	}
	m.key = m.k
	m.k = m.d.nodes[m.k+1].next
	return true
}

// Key is the current member's key, unescaped. Unless it had an escape, it
// is a view of the line's bytes: not to be kept.
func (m *Members) Key() string {
	kn := &m.d.nodes[m.key]
	if kn.esc {
		return m.d.str(kn)
	}
	return m.d.s[kn.start+1 : kn.end-1]
}

// Value is the current member's value.
func (m *Members) Value() Value { return Value{m.d, m.key + 1} }
