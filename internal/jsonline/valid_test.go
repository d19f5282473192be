package jsonline

import (
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// validCases are texts at the edges of the grammar, each tried as it is and
// as the value of a field, of an array and inside a long string's
// neighbourhood (the eight-byte scan).
var validCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a" : 1 , "b":[1,2]}`, `[1,]`, `{"a":1,}`, `{,}`, `[,1]`,
	`"`, `""`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00g9"`, `"\u00"`, `"\x"`, "\"\x01\"", "\"\x7f\xff\"",
	`0`, `-0`, `-`, `01`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-5`, `-1.5e10`, `1x`, `+1`,
	`true`, `tru`, `false`, `fals`, `null`, `nul`, `nulll`, `truex`,
	"\t{\"a\":\r\n[true,false,null]}\n", `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, `}`, `]`,
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth),
	strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	strings.Repeat("[", MaxDepth+1) + "x",
}

// wantValid is what the mapper accepted before Valid: gjson's grammar,
// no deeper than MaxDepth.
func wantValid(b []byte) bool { return !TooDeep(b) && gjson.ValidBytes(b) }

func TestValidLine(t *testing.T) {
	long := strings.Repeat("abcdefgh", 3)
	for _, c := range validCases {
		for _, in := range []string{c, `{"k":` + c + `}`, `[` + c + `]`, `["` + long + `",` + c + `]`,
			`"` + long + c + long + `"`, `"` + c, c + ` `} {
			if got, want := Valid([]byte(in)), wantValid([]byte(in)); got != want {
				t.Errorf("Valid(%.60q) = %v, want %v", in, got, want)
			}
		}
	}
	for _, file := range claudeStreams(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if got, want := Valid([]byte(line)), wantValid([]byte(line)); got != want {
				t.Errorf("%s: Valid(%.60q) = %v, want %v", file, line, got, want)
			}
		}
	}
}

func FuzzValidLine(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), wantValid(b); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", b, got, want)
		}
	})
}
