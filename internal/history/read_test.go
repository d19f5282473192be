package history

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// TestHeadTailLines: the head's lines come whole and in order across the
// reads' boundaries, up to the bound, the last one without its newline
// when the file ends there; the tail's come last first, the partial first
// line of the tail left out.
func TestHeadTailLines(t *testing.T) {
	var lines []string
	var b bytes.Buffer
	for i := 0; b.Len() < 3*headChunk; i++ {
		l := fmt.Sprintf("line %d %s", i, bytes.Repeat([]byte("x"), i%97))
		lines = append(lines, l)
		b.WriteString(l + "\n")
	}
	data := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	r := bytes.NewReader(data)
	var head []string
	headLines(r, int64(len(data)), func(l []byte) bool { head = append(head, string(l)); return true })
	if !slices.Equal(head, lines) {
		t.Errorf("head: %d lines, want %d", len(head), len(lines))
	}
	head = nil
	headLines(r, int64(len(data)), func(l []byte) bool { head = append(head, string(l)); return len(head) < 3 })
	if !slices.Equal(head, lines[:3]) {
		t.Errorf("head stopped: %q", head)
	}
	var tail []string
	tailLines(r, int64(len(data)), func(l []byte) bool { tail = append(tail, string(l)); return true })
	slices.Reverse(tail)
	if len(tail) == 0 || len(tail) >= len(lines) || !slices.Equal(tail, lines[len(lines)-len(tail):]) {
		t.Errorf("tail: %d lines", len(tail))
	}
	// A file shorter than the tail: every line.
	tail = nil
	tailLines(bytes.NewReader([]byte("a\nb\n")), 4, func(l []byte) bool { tail = append(tail, string(l)); return true })
	if !slices.Equal(tail, []string{"b", "a"}) {
		t.Errorf("short tail %q", tail)
	}
}
