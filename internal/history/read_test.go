package history

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
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
	HeadLines(r, int64(len(data)), func(l []byte) bool { head = append(head, string(l)); return true })
	if !slices.Equal(head, lines) {
		t.Errorf("head: %d lines, want %d", len(head), len(lines))
	}
	head = nil
	HeadLines(r, int64(len(data)), func(l []byte) bool { head = append(head, string(l)); return len(head) < 3 })
	if !slices.Equal(head, lines[:3]) {
		t.Errorf("head stopped: %q", head)
	}
	var tail []string
	TailLines(r, int64(len(data)), func(l []byte) bool { tail = append(tail, string(l)); return true })
	slices.Reverse(tail)
	if len(tail) == 0 || len(tail) >= len(lines) || !slices.Equal(tail, lines[len(lines)-len(tail):]) {
		t.Errorf("tail: %d lines", len(tail))
	}
	// A file shorter than the tail: every line.
	tail = nil
	TailLines(bytes.NewReader([]byte("a\nb\n")), 4, func(l []byte) bool { tail = append(tail, string(l)); return true })
	if !slices.Equal(tail, []string{"b", "a"}) {
		t.Errorf("short tail %q", tail)
	}
}

// TestLineReaderLong: a line longer than the bound is skipped and counted
// without being held whole; the lines around it are read.
func TestLineReaderLong(t *testing.T) {
	old := maxLine
	maxLine = 1000
	defer func() { maxLine = old }()
	data := "a\n" + strings.Repeat("x", 300<<10) + "\nb\n" + strings.Repeat("y", 5000)
	lr := NewLineReader(strings.NewReader(data))
	var lines []string
	for {
		l, ok := lr.Next()
		if !ok {
			break
		}
		lines = append(lines, string(l))
	}
	if strings.Join(lines, ",") != "a,b" || lr.TooLong != 2 || lr.Err() != nil {
		t.Errorf("lines %q, %d too long, %v", lines, lr.TooLong, lr.Err())
	}
}

// TestCutTitle: one line of at most 80 characters.
func TestCutTitle(t *testing.T) {
	long := strings.Repeat("é", 100)
	if got := CutTitle("  a\n\tb  c "); got != "a b c" {
		t.Errorf("%q", got)
	}
	if got := CutTitle(long); got != strings.Repeat("é", 79)+"…" {
		t.Errorf("%q", got)
	}
}
