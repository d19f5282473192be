package main

import (
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"spbridge/internal/cliproc"
)

// readAllLines collects what read hands over: each line's bytes (copied
// at once) or its Oversize report.
func readAllLines(t *testing.T, read func(io.Reader, int, func(cliproc.Line) bool) error, r io.Reader, maxLine int) []string {
	t.Helper()
	var got []string
	err := read(r, maxLine, func(l cliproc.Line) bool {
		if l.Oversize > 0 {
			got = append(got, "oversize "+strconv.FormatInt(l.Oversize, 10))
		} else {
			got = append(got, "line "+string(l.Data))
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReadBorrowedLines checks that replay's reader hands over the lines
// and oversize reports cliproc.ReadLines does, whatever the line lengths
// (past the reader's buffer too) and however the input arrives.
func TestReadBorrowedLines(t *testing.T) {
	big := strings.Repeat("b", 600<<10)
	inputs := []string{
		"", "\n", "a", "a\n", "a\nb", "a\n\nb\n", "{\"x\":1}\r\n{}\n",
		big + "\n" + "tail", "x\n" + big + "\n" + big + big + "\ny\n", big,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(strings.Repeat("r", rng.IntN(400<<10)))
			b.WriteByte('\n')
		}
		if rng.IntN(2) == 0 {
			b.WriteString("end")
		}
		inputs = append(inputs, b.String())
	}
	readers := map[string]func(string) io.Reader{
		"whole": func(s string) io.Reader { return strings.NewReader(s) },
		"half":  func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for i, in := range inputs {
		for _, maxLine := range []int{0, 1, 3, 300 << 10, 600 << 10, 700 << 10} {
			for name, reader := range readers {
				want := readAllLines(t, cliproc.ReadLines, reader(in), maxLine)
				got := readAllLines(t, readBorrowedLines, reader(in), maxLine)
				if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
					t.Fatalf("input %d, maxLine %d, %s reads: got %d lines, want %d", i, maxLine, name, len(got), len(want))
				}
			}
		}
	}
}

// heldByTest is memory TestReplayGCPace holds.
var heldByTest []byte

// TestReplayGCPace checks how replay paces the collector: five times the
// live heap while it is small, the default pace once a turn holds more
// than replayLiveLimit, GOGC alone when it is set, and the pace as it was
// once replay is done.
func TestReplayGCPace(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	percent := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	g := newReplayGC()
	if p := percent(); p != replayGCPercent {
		t.Fatalf("replay's pace %d, want %d", p, replayGCPercent)
	}
	heldByTest = make([]byte, 2*replayLiveLimit)
	runtime.GC()
	g.turnWritten()
	if p := percent(); p != 100 {
		t.Fatalf("pace %d with %d bytes held, want 100", p, len(heldByTest))
	}
	heldByTest = nil
	runtime.GC()
	g.turnWritten()
	if p := percent(); p != replayGCPercent {
		t.Fatalf("pace %d once the turn was let go, want %d", p, replayGCPercent)
	}
	g.restore()
	if p := percent(); p != 100 {
		t.Fatalf("pace %d after replay, want 100 as before", p)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	g = newReplayGC()
	g.turnWritten()
	if p := percent(); p != 50 {
		t.Fatalf("pace %d with GOGC=50, want 50", p)
	}
	g.restore()
}
