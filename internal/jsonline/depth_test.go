package jsonline

import (
	"bytes"
	"strings"
	"testing"
)

func TestTooDeep(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1)
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	tests := []struct {
		in   string
		want bool
	}{
		{ok, false},
		{deep, true},
		{`{"a":` + deep, true},
		{strings.Repeat(`{"a":`, MaxDepth+1), true},
		{`{"a":"` + deep + `"}`, false},            // inside a string
		{`{"a":"\"` + deep + `"}`, false},          // an escaped quote does not end the string
		{`{"a":"\\"` + deep, true},                 // an escaped backslash does
		{`{"a":"x\\\"` + deep + `"}`, false},       // three backslashes: the quote is escaped
		{`"` + deep, false},                        // an unterminated string: not JSON anyway
		{strings.Repeat("[]", 10*MaxDepth), false}, // wide, not deep
		{`{"t":"` + strings.Repeat(`\"[`, 5000) + `"}`, false},
	}
	for _, tt := range tests {
		if got := TooDeep([]byte(tt.in)); got != tt.want {
			t.Errorf("TooDeep(%.40q…) = %v, want %v", tt.in, got, tt.want)
		}
	}
	okBytes := []byte(ok)
	if n := testing.AllocsPerRun(10, func() { TooDeep(okBytes) }); n != 0 {
		t.Errorf("TooDeep allocates %v times", n)
	}
}

// deepLines are lines that nest far too deep: validating one recursively
// overflows the stack.
func deepLines() map[string][]byte {
	open := bytes.Repeat([]byte("["), 10<<20)
	return map[string][]byte{
		"brackets":  open,
		"in field":  append([]byte(`{"type":"assistant","a":`), open...),
		"in method": append([]byte(`{"jsonrpc":"2.0","method":"item/started","params":{"item":`), open...),
	}
}

func BenchmarkTooDeep(b *testing.B) {
	stream, _ := benchStream(b, claudeStreams(b), 10<<20)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		TooDeep(stream)
	}
}
