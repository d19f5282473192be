package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEncodeCanonical(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{}`, `{}`},
		{`[]`, `[]`},
		{`{"b":1,"a":[]}`, "{\n  \"a\" : [],\n  \"b\" : 1\n}"},
		{`{"a":{"z":{},"y":[1,2]}}`, "{\n  \"a\" : {\n    \"y\" : [\n      1,\n      2\n    ],\n    \"z\" : {}\n  }\n}"},
		{`"a/b<c>&d"`, `"a/b<c>&d"`},
		{`"a\/b"`, `"a/b"`},
		{`"\u00e9\u2028😀"`, "\"é\u2028😀\""},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\uFFFD\uffff"`, "\"\uFFFD\uffff\""},
		{`"\u0001\n\t\r\b\f\"\\\u007f"`, "\"\\u0001\\n\\t\\r\\b\\f\\\"\\\\\x7f\""},
		{`1.50`, `1.50`},
		{`-0`, `-0`},
		{`1E+3`, `1E+3`},
		{`0.0213`, `0.0213`},
		{`[true,false,null]`, "[\n  true,\n  false,\n  null\n]"},
		// Keys sort by code point, not by UTF-16 unit: U+FF5E sorts before U+1F600.
		{`{"😀":1,"～":2,"Z":3,"a":4}`, "{\n  \"Z\" : 3,\n  \"a\" : 4,\n  \"～\" : 2,\n  \"😀\" : 1\n}"},
		{" \n{\"k\" :\t\"v\" } \r\n", "{\n  \"k\" : \"v\"\n}"},
		{`{"k":1,"k":2}`, "{\n  \"k\" : 2\n}"},
	}
	for _, tt := range tests {
		v, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%q) error: %v", tt.in, err)
			continue
		}
		got, err := Encode(v)
		if err != nil {
			t.Errorf("Encode(Decode(%q)) error: %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Encode(Decode(%q)) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDecodeRefusesInvalidText checks that text which is not UTF-8, and
// escapes of lone UTF-16 surrogates, are errors rather than replaced, and
// that the encoder never writes invalid UTF-8.
func TestDecodeRefusesInvalidText(t *testing.T) {
	bad := []string{
		"\"a\xffb\"",                // a byte that starts no character (fast path)
		"\"a\\n\xffb\"",             // the same after an escape (slow path)
		"\"x\xc3\"",                 // a character cut short
		"\"\xed\xa0\x80\"",          // a surrogate encoded as UTF-8
		"\"\xc0\xaf\"",              // an overlong encoding
		"{\"k\xff\":1}",             // in a key
		`"\ud800"`,                  // a lone high surrogate
		`"\udc00"`,                  // a lone low surrogate
		`"\ud83dx"`,                 // a high surrogate and no low one
		`"\ud83d\u0041"`,            // a high surrogate and no low one
		`"\ud83d\ud83d"`,            // two high surrogates
		`{"items":["ok","\uDBFF"]}`, // deep inside
	}
	for _, in := range bad {
		v, err := Decode([]byte(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%q) = %q, %v, want a *SyntaxError", in, v, err)
		}
	}
	for in, want := range map[string]string{
		"x\xc3":               "\"x\uFFFD\"",
		"\xed\xa0\x80y":       "\"\uFFFD\uFFFD\uFFFDy\"",
		"ok \u00e9\U0001F600": "\"ok é😀\"",
	} {
		got := AppendString(nil, in)
		if string(got) != want || !utf8.Valid(got) {
			t.Errorf("AppendString(%q) = %q, want %q", in, got, want)
		}
	}
	enc, err := Encode(map[string]any{"k\xff": []any{"v\xfe"}})
	if err != nil || !utf8.Valid(enc) {
		t.Errorf("Encode of invalid UTF-8 = %q, %v, want valid UTF-8", enc, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	bad := []string{
		``, ` `, `{`, `[`, `[1,]`, `{"a":1,}`, `{"a"}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`,
		`tru`, `nul`, `"abc`, "\"a\nb\"", `"\x"`, `"\u12"`, `1 2`, `{} x`, `NaN`, `[1 2]`,
	}
	for _, in := range bad {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", in)
		} else {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("Decode(%q) error %T, want *SyntaxError", in, err)
			}
		}
	}
}

func TestDecodeDepth(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	var de *DepthError
	if _, err := Decode([]byte(deep)); !errors.As(err, &de) || de.Max != MaxDepth || de.Offset != MaxDepth {
		t.Errorf("Decode of %d nested arrays = %v, want a *DepthError at byte %d", MaxDepth+1, err, MaxDepth)
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Decode([]byte(ok)); err != nil {
		t.Errorf("Decode of %d nested arrays: %v", MaxDepth, err)
	}
	// A lower limit counts objects and arrays alike; a limit above
	// MaxDepth is MaxDepth.
	nest := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":[`, n/2) + strings.Repeat("[", n%2) + strings.Repeat("]", n%2) + strings.Repeat("]}", n/2))
	}
	for _, tt := range []struct{ depth, max int }{{7, 7}, {8, 7}, {1, 1}, {2, 1}, {MaxDepth, MaxDepth + 5}, {MaxDepth + 1, MaxDepth + 5}} {
		_, err := DecodeDepth(nest(tt.depth), tt.max)
		if tt.depth <= min(tt.max, MaxDepth) {
			if err != nil {
				t.Errorf("DecodeDepth(%d levels, %d) = %v", tt.depth, tt.max, err)
			}
			continue
		}
		if !errors.As(err, &de) || de.Max != min(tt.max, MaxDepth) {
			t.Errorf("DecodeDepth(%d levels, %d) = %v, want a *DepthError", tt.depth, tt.max, err)
		}
	}
}

func TestEncodeGoNumbers(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{0.0213, "0.0213"},
		{1.0, "1"},
		{1e21, "1e+21"},
		{1e-7, "1e-07"},
		{int64(-5), "-5"},
		{42, "42"},
	}
	for _, tt := range tests {
		got, err := Encode(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("Encode(%v) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []any{json.Number("1x"), struct{}{}, []string{"a"}} {
		if _, err := Encode(bad); err == nil {
			t.Errorf("Encode(%#v) succeeded, want an error", bad)
		}
	}
}

func TestEncodeCompact(t *testing.T) {
	v, _ := Decode([]byte(`{"b":[1,{"d":"x","c":null}],"a":{}}`))
	got, err := EncodeCompact(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{},"b":[1,{"c":null,"d":"x"}]}`
	if string(got) != want {
		t.Errorf("EncodeCompact = %s, want %s", got, want)
	}
}

// checkAgainstStdlib decodes data with both decoders and requires that they
// agree on validity and, after encoding, on the value.
func checkAgainstStdlib(t *testing.T, data []byte) {
	v, err := Decode(data)
	// encoding/json accepts text that is not UTF-8 and lone surrogate escapes
	// (it replaces them); Decode must refuse exactly those.
	stdValid := json.Valid(data) && utf8.Valid(data) && !hasLoneSurrogate(data)
	if (err == nil) != stdValid {
		t.Fatalf("Decode(%q) error = %v, but json.Valid = %v, utf8.Valid = %v, lone surrogate = %v",
			data, err, json.Valid(data), utf8.Valid(data), hasLoneSurrogate(data))
	}
	if err != nil {
		return
	}
	enc, err := Encode(v)
	if err != nil {
		t.Fatalf("Encode after Decode(%q): %v", data, err)
	}
	if !utf8.Valid(enc) {
		t.Fatalf("Encode(Decode(%q)) = %q, not UTF-8", data, enc)
	}
	if compact, err := EncodeCompact(v); err != nil || !utf8.Valid(compact) {
		t.Fatalf("EncodeCompact(Decode(%q)) = %q, %v, not UTF-8", data, compact, err)
	}
	v2, err := Decode(enc)
	if err != nil {
		t.Fatalf("Decode(Encode(Decode(%q))) = %v; encoded %q", data, err, enc)
	}
	enc2, err := Encode(v2)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("encoding not stable for %q:\n%s\n%s", data, enc, enc2)
	}
	var std1, std2 any
	d1 := json.NewDecoder(bytes.NewReader(data))
	d1.UseNumber()
	d2 := json.NewDecoder(bytes.NewReader(enc))
	d2.UseNumber()
	if d1.Decode(&std1) != nil || d2.Decode(&std2) != nil {
		t.Fatalf("encoding/json cannot read %q or %q", data, enc)
	}
	if !reflect.DeepEqual(std1, std2) {
		t.Fatalf("value changed through Encode: %q -> %q", data, enc)
	}
	if !reflect.DeepEqual(std1, v) {
		t.Fatalf("Decode(%q) = %#v, encoding/json gives %#v", data, v, std1)
	}
}

// hasLoneSurrogate reports whether JSON text holds a \u escape of a UTF-16
// surrogate that is not a high one directly followed by a low one.
func hasLoneSurrogate(data []byte) bool {
	hex := func(i int) (rune, bool) {
		if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case inString && c == '\\':
			r, ok := hex(i)
			if !ok {
				i++ // a two-character escape
				continue
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := hex(i + 6)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
			i += 5
		}
	}
	return false
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{}`, `[1,2.5e-3,"x"]`, `{"a":{"b":[null,true,false]}}`, `"\ud800\udc00"`, `"\u00e9\/"`,
		`{"formatVersion":1,"items":[{"id":"A","type":"user","text":"hi"}]}`, "\"\xff\"", `-0.0E+0`,
		`"\ud800"`, `"\udc00\ud800"`, `["\\ud800"]`, "\"\xed\xa0\x80\"", `{"\ud83d\ude00":"\ud83d"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkAgainstStdlib)
}

func TestAppendAtAndRaw(t *testing.T) {
	v, _ := Decode([]byte(`{"a":{"b":[1,{"c":"d"}],"e":{}}}`))
	whole, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := AppendAt(nil, v.(map[string]any)["a"], 1)
	if err != nil {
		t.Fatal(err)
	}
	spliced, err := Encode(map[string]any{"a": Raw(inner)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, spliced) {
		t.Errorf("Raw at depth 1 gives\n%s\nwant\n%s", spliced, whole)
	}
}

// chunks records each Write it is given.
type chunks struct {
	all   bytes.Buffer
	sizes []int
}

func (c *chunks) Write(p []byte) (int, error) {
	c.sizes = append(c.sizes, len(p))
	return c.all.Write(p)
}

func TestWriteIsEncode(t *testing.T) {
	long := strings.Repeat("é\"x\n", 20_000) // 100 kB once encoded
	raw, err := AppendAt(nil, map[string]any{"t": long}, 2)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]any, 5_000)
	for i := range many {
		many[i] = map[string]any{"id": strconv.Itoa(i), "n": json.Number("1.50"), "ok": i%2 == 0, "z": nil}
	}
	for _, v := range []any{
		nil, "x", []any{}, map[string]any{},
		map[string]any{"a": long, "b": []any{long, Raw(raw)}, "c": map[string]any{}},
		map[string]any{"items": many, "raw": []any{Raw(raw), Raw(raw)}},
	} {
		want, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		var got chunks
		if err := Write(&got, v); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.all.Bytes(), want) {
			t.Fatalf("Write gives %d bytes unlike Encode's %d", got.all.Len(), len(want))
		}
	}
	// Small values are gathered into pieces of about flushSize: never one
	// buffer for the whole output.
	var got chunks
	if err := Write(&got, many); err != nil {
		t.Fatal(err)
	}
	if len(got.sizes) < 4 || slices.Max(got.sizes) > flushSize+1024 {
		t.Errorf("Write of %d bytes wrote pieces of %v bytes", got.all.Len(), got.sizes)
	}
	if err := Write(&chunks{}, map[string]any{"x": 1.5i}); err == nil {
		t.Error("Write of a complex number: no error")
	}
}

// sliceArray is a []any as an Array.
type sliceArray []any

func (a sliceArray) Len() int     { return len(a) }
func (a sliceArray) At(i int) any { return a[i] }

// TestArrayIsSlice: an Array is written as the []any of its elements, by
// every encoder, nested or not.
func TestArrayIsSlice(t *testing.T) {
	many := make([]any, 3_000)
	for i := range many {
		many[i] = map[string]any{"id": strconv.Itoa(i), "n": json.Number("1.50"), "a": []any{"x", nil}}
	}
	for _, v := range [][]any{{}, {"x"}, many, {many, map[string]any{}, []any{}}} {
		want, _ := Encode(map[string]any{"v": v, "w": []any{v}})
		got, err := Encode(map[string]any{"v": sliceArray(v), "w": sliceArray{sliceArray(v)}})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Encode of an Array of %d = %d bytes (%v), want %d", len(v), len(got), err, len(want))
		}
		var w chunks
		if err := Write(&w, sliceArray(v)); err != nil || !bytes.Equal(w.all.Bytes(), must(Encode(v))) {
			t.Fatalf("Write of an Array of %d differs from Encode of its slice (%v)", len(v), err)
		}
		wantC, _ := EncodeCompact(v)
		if gotC, err := EncodeCompact(sliceArray(v)); err != nil || !bytes.Equal(gotC, wantC) {
			t.Fatalf("EncodeCompact of an Array of %d differs from its slice's (%v)", len(v), err)
		}
	}
	if _, err := Encode(sliceArray{1.5i}); err == nil {
		t.Error("Encode of an Array holding a complex number: no error")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestPrettyDepth: objects and arrays nested PrettyDepth levels or more
// are written on one line, those above pretty-printed; the text reads back
// the same value, and AppendAt at such a depth gives the same bytes.
func TestPrettyDepth(t *testing.T) {
	inner := map[string]any{"k": []any{"v", map[string]any{"a": json.Number("1")}}}
	v := any(inner)
	for range PrettyDepth - 1 {
		v = []any{v}
	}
	enc, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	// The innermost array of the chain is at depth PrettyDepth-2: pretty;
	// inner is at PrettyDepth-1: pretty; its "k" array at PrettyDepth: one
	// line.
	want := "\n" + strings.Repeat("  ", PrettyDepth) + `"k" : ["v",{"a":1}]`
	if !strings.Contains(string(enc), want) {
		t.Errorf("encoding lacks %q:\n%s", want, enc)
	}
	back, err := Decode(enc)
	if err != nil || !reflect.DeepEqual(back, v) {
		t.Errorf("read back %v, %v", back, err)
	}
	deep, err := AppendAt(nil, inner["k"], PrettyDepth)
	if err != nil || string(deep) != `["v",{"a":1}]` {
		t.Errorf("AppendAt at PrettyDepth = %s, %v", deep, err)
	}
}
