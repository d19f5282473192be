package canonjson

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// appendStringRef is AppendString one byte at a time, as the definition
// reads: the fast path must give the same bytes.
func appendStringRef(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\b':
			buf = append(buf, `\b`...)
		case c == '\f':
			buf = append(buf, `\f`...)
		case c == '\n':
			buf = append(buf, `\n`...)
		case c == '\r':
			buf = append(buf, `\r`...)
		case c == '\t':
			buf = append(buf, `\t`...)
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c < utf8.RuneSelf:
			buf = append(buf, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(buf, '"')
}

func TestAppendStringFastPath(t *testing.T) {
	specials := []string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", " ", "é", "\xff", "\xe2\x82", "😀", "a"}
	for _, s := range []string{"", "abcdefgh", "abcdefghi", "abcdefg\"", "\"abcdefgh", strings.Repeat("x", 100)} {
		if got, want := AppendString(nil, s), appendStringRef(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	// Every special at every position of a 17-byte run, alone and in
	// pairs.
	for _, a := range specials {
		for _, b := range specials {
			for i := 0; i <= 17; i++ {
				s := strings.Repeat("p", i) + a + strings.Repeat("q", 17-i) + b + "tail"
				if got, want := AppendString(nil, s), appendStringRef(nil, s); string(got) != string(want) {
					t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
				}
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text", "quote\" back\\slash", "ctl\x01\x1f", "é😀\xff\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendString(nil, s), appendStringRef(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzAppendStringParts checks that parts cut where a character begins
// encode as their concatenation does.
func FuzzAppendStringParts(f *testing.F) {
	f.Add("``"+"`\n", "out \"put\"\n\t", "é😀")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, s := range []string{a, b, c} {
			if s != "" && !utf8.RuneStart(s[0]) {
				return
			}
		}
		if got, want := AppendStringParts(nil, a, b, c), AppendString(nil, a+b+c); string(got) != string(want) {
			t.Fatalf("AppendStringParts(%q, %q, %q) = %s, want %s", a, b, c, got, want)
		}
	})
}

// BenchmarkAppendString encodes a reply's text: mostly ASCII prose and
// code, lines, quotes, some accented letters.
func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("The function returns the value when the file has been read and the lines were counted.\n", 100) +
		strings.Repeat("\tif x == \"ok\" {\n\t\treturn café\n\t}\n", 50)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}

// TestWriteCompactIsEncodeCompact checks that WriteCompact gives
// EncodeCompact's bytes, in pieces of about flushSize.
func TestWriteCompactIsEncodeCompact(t *testing.T) {
	many := make([]any, 5_000)
	for i := range many {
		many[i] = map[string]any{"id": strings.Repeat("x", i%50), "n": 1.5, "ok": i%2 == 0, "z": nil, "t": "é\"\n"}
	}
	for _, v := range []any{nil, "x", []any{}, map[string]any{}, many, map[string]any{"items": many, "k": "v"}} {
		want, err := EncodeCompact(v)
		if err != nil {
			t.Fatal(err)
		}
		var got chunks
		if err := WriteCompact(&got, v); err != nil {
			t.Fatal(err)
		}
		if got.all.String() != string(want) {
			t.Fatalf("WriteCompact gives %d bytes unlike EncodeCompact's %d", got.all.Len(), len(want))
		}
		for _, n := range got.sizes {
			if n > flushSize+1024 {
				t.Errorf("a piece of %d bytes", n)
			}
		}
	}
}
