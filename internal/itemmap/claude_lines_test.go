package itemmap

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// checkReadAhead maps stream line by line with Line, and again in batches
// of batch lines read ahead into a ClaudeLines (each batch read whole
// before any of it is mapped, the batch reused): every line must give the
// same result.
func checkReadAhead(t *testing.T, stream []byte, batch int) {
	t.Helper()
	lines := bytes.Split(stream, []byte("\n"))
	one, ahead := NewClaude(SequentialIDs()), NewClaude(SequentialIDs())
	var b ClaudeLines
	for start := 0; start < len(lines); start += batch {
		end := min(start+batch, len(lines))
		b.Reset()
		for _, l := range lines[start:end] {
			b.Read(l)
		}
		if b.Len() != end-start {
			t.Fatalf("batch holds %d lines, want %d", b.Len(), end-start)
		}
		for i := range b.Len() {
			if !bytes.Equal(b.Line(i), lines[start+i]) {
				t.Fatalf("line %d of the batch is %q, want %q", i, b.Line(i), lines[start+i])
			}
		}
		for i := range b.Len() {
			got, want := dumpResult(t, ahead.MapRead(&b, i)), dumpResult(t, one.Line(lines[start+i]))
			if got != want {
				t.Fatalf("line %d read ahead gives\n%s\nLine gives\n%s", start+i+1, got, want)
			}
		}
	}
	if got, want := dumpResult(t, ahead.Finish(false, "end", "")), dumpResult(t, one.Finish(false, "end", "")); got != want {
		t.Fatalf("finish: read ahead gives\n%s\nLine gives\n%s", got, want)
	}
}

// TestClaudeReadAhead checks that lines read ahead in batches map as Line
// maps them, on the recorded streams.
func TestClaudeReadAhead(t *testing.T) {
	streams := [][]byte{[]byte(fastLines), []byte(specialStream)}
	for _, f := range claudeStreams(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, data)
	}
	for _, s := range streams {
		for _, batch := range []int{1, 3, 64} {
			checkReadAhead(t, s, batch)
		}
	}
}

// FuzzClaudeReadAhead checks on any stream that lines read ahead map as
// Line maps them.
func FuzzClaudeReadAhead(f *testing.F) {
	for _, seed := range streamSeeds([]byte(fastLines), claudeStart) {
		f.Add(seed, uint8(3))
	}
	for _, seed := range streamSeeds([]byte(specialStream), claudeStart) {
		f.Add(seed, uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, batch uint8) {
		checkReadAhead(t, data, int(batch%16)+1)
	})
}

// TestSequentialID checks that sequential ids read as
// 00000000-0000-4000-8000-%012d does.
func TestSequentialID(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 12345, 999999999999, 1000000000000, 1<<62 + 3} {
		if got, want := sequentialID(n), fmt.Sprintf("00000000-0000-4000-8000-%012d", n); got != want {
			t.Errorf("sequentialID(%d) = %q, want %q", n, got, want)
		}
	}
	next := SequentialIDs()
	if a, b := next(), next(); a != "00000000-0000-4000-8000-000000000001" || b != "00000000-0000-4000-8000-000000000002" {
		t.Errorf("SequentialIDs gives %q, %q", a, b)
	}
}

// TestWriteTruncated checks that writeTruncated writes what truncate
// gives, on a character boundary.
func TestWriteTruncated(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("é", 20), strings.Repeat("abc", 10)} {
		for _, n := range []int{0, 1, 2, 5, 9, 29, 30, 100} {
			var b strings.Builder
			writeTruncated(&b, s, n)
			if got, want := b.String(), truncate(s, n); got != want {
				t.Errorf("writeTruncated(%q, %d) = %q, truncate gives %q", s, n, got, want)
			}
		}
	}
}
