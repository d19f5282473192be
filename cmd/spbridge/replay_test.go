package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"spbridge/internal/cliproc"
	"spbridge/internal/clis"
	"spbridge/internal/codex"
	"spbridge/internal/itemmap"
)

// readAllLines collects what read hands over: each line's length and
// SHA-256 (taken at once: the bytes are only lent) or its Oversize report.
// A digest, not a copy: the tests read gigabytes of lines, and copying
// them under the race detector took minutes.
func readAllLines(t *testing.T, read func(io.Reader, int, func(cliproc.Line) bool) error, r io.Reader, maxLine int) []string {
	t.Helper()
	var got []string
	err := read(r, maxLine, func(l cliproc.Line) bool {
		if l.Oversize > 0 {
			got = append(got, "oversize "+strconv.FormatInt(l.Oversize, 10))
		} else {
			got = append(got, fmt.Sprintf("line %d %x", len(l.Data), sha256.Sum256(l.Data)))
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReadAheadLines checks that replay's reader (read ahead in batches)
// hands over the lines and oversize reports cliproc.ReadLines does,
// whatever the line lengths (past a batch's buffer too) and however the
// input arrives.
func TestReadAheadLines(t *testing.T) {
	t.Parallel()
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
	readAheadLines := func(r io.Reader, maxLine int, fn func(cliproc.Line) bool) error {
		return readAhead(r, maxLine, claudeLines, func(b *replayBatch) bool {
			i := 0
			for _, e := range b.entries {
				var l cliproc.Line
				switch {
				case e > 0:
					l.Oversize = e
				case e == 0:
					l.Data = b.lines.Line(i)
					i++
				}
				if !fn(l) {
					return false
				}
			}
			if i != b.lines.Len() {
				t.Fatalf("a batch of %d lines read has %d entries for them", b.lines.Len(), i)
			}
			return true
		})
	}
	readers := map[string]func(string) io.Reader{
		"whole": func(s string) io.Reader { return strings.NewReader(s) },
		"half":  func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"small": func(s string) io.Reader { return iotest.DataErrReader(&smallReader{s: s}) },
	}
	for i, in := range inputs {
		for _, maxLine := range []int{0, 1, 3, 300 << 10, 600 << 10, 700 << 10} {
			// What cliproc.ReadLines hands over from the input whole, which
			// every way of reading it must give.
			want := readAllLines(t, cliproc.ReadLines, readers["whole"](in), maxLine)
			for name, reader := range readers {
				got := readAllLines(t, readAheadLines, reader(in), maxLine)
				if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
					t.Fatalf("read ahead: input %d, maxLine %d, %s reads: got %d lines, want %d", i, maxLine, name, len(got), len(want))
				}
			}
		}
	}
}

// heldByTest is memory TestReplayGCPace holds.
var heldByTest []byte

// TestReplayGCPace checks how replay paces the collector: five times the
// live heap (up to replayMemoryLimit) while it is small, the default pace
// once a turn holds more than replayLiveLimit, GOGC alone when it is set,
// and the pace as it was once replay is done.
func TestReplayGCPace(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	percent := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	t.Setenv("GOMEMLIMIT", "")
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	prevLimit := limit()
	g := newReplayGC()
	if p := percent(); p != replayGCPercent {
		t.Fatalf("replay's pace %d, want %d", p, replayGCPercent)
	}
	if l := limit(); l != replayMemoryLimit {
		t.Fatalf("replay's memory limit %d, want %d", l, replayMemoryLimit)
	}
	heldByTest = make([]byte, 2*replayLiveLimit)
	runtime.GC()
	g.pace()
	if p, l := percent(), limit(); p != 100 || l != prevLimit {
		t.Fatalf("pace %d, memory limit %d with %d bytes held, want 100 and %d", p, l, len(heldByTest), prevLimit)
	}
	heldByTest = nil
	runtime.GC()
	g.pace()
	if p := percent(); p != replayGCPercent {
		t.Fatalf("pace %d once the turn was let go, want %d", p, replayGCPercent)
	}
	g.restore()
	if p, l := percent(), limit(); p != 100 || l != prevLimit {
		t.Fatalf("pace %d, memory limit %d after replay, want 100 and %d as before", p, l, prevLimit)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	g = newReplayGC()
	g.pace()
	if p := percent(); p != 50 {
		t.Fatalf("pace %d with GOGC=50, want 50", p)
	}
	g.restore()
}

// TestReadAheadStops checks that replay's read-ahead stops when the
// mapping side does, with the stream not read to its end, and reports a
// read error after the lines before it.
func TestReadAheadStops(t *testing.T) {
	line := strings.Repeat("x", 1000) + "\n"
	in := strings.NewReader(strings.Repeat(line, 10*replayBatchLines))
	batches := 0
	if err := readAhead(in, 0, claudeLines, func(*replayBatch) bool { batches++; return false }); err != nil {
		t.Fatal(err)
	}
	if batches != 1 {
		t.Fatalf("%d batches handed over after the first said stop", batches)
	}

	broken := io.MultiReader(strings.NewReader("a\nb\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	var got []string
	err := readAhead(broken, 0, claudeLines, func(b *replayBatch) bool {
		for i := range b.lines.Len() {
			got = append(got, string(b.lines.Line(i)))
		}
		return true
	})
	if err != io.ErrUnexpectedEOF || strings.Join(got, ",") != "a,b" {
		t.Fatalf("read %q then %v, want a, b then %v", got, err, io.ErrUnexpectedEOF)
	}
}

// smallReader returns at most 1000 bytes a read.
type smallReader struct{ s string }

func (r *smallReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1000)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// claudeLines is a batch for readAhead's tests.
func claudeLines() itemmap.Lines { return new(itemmap.ClaudeLines) }

// aheadMapper is Claude Code's mapper under a type of the test's own; it
// counts the lines mapped read ahead.
type aheadMapper struct {
	*itemmap.Claude
	read *int
}

func (m aheadMapper) MapRead(b itemmap.Lines, i int) itemmap.Result {
	*m.read++
	return m.Claude.MapRead(b, i)
}

// recordedMapper is the app-server's mapper under a type of the test's
// own.
type recordedMapper struct{ *itemmap.CodexApp }

// TestReplayTakesMappersWays checks that replay reads a stream ahead, and
// unwraps a recording, for whichever CLI's mapper offers it
// (itemmap.ReadAhead, itemmap.Recorded), not for two mapper types it
// knows: a row whose mapper is of a type of this test's own replays as
// the CLI it wraps, the same items, by the same way.
func TestReplayTakesMappersWays(t *testing.T) {
	replay := func(t *testing.T, file, backend string, own map[string]string) string {
		t.Helper()
		in, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		if err := replayStream(in, backend, own, w, nil); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		return out.String()
	}
	claudeRow, _ := clis.Lookup("claude")
	codexRow, _ := clis.Lookup("codex")
	read := 0
	ahead := claudeRow
	ahead.Name = "ahead"
	ahead.Mapper = func(newID itemmap.IDFunc, own map[string]string) itemmap.Mapper {
		return aheadMapper{claudeRow.Mapper(newID, own).(*itemmap.Claude), &read}
	}
	recorded := codexRow
	recorded.Name = "recorded"
	recorded.Mapper = func(newID itemmap.IDFunc, own map[string]string) itemmap.Mapper {
		return recordedMapper{codexRow.Mapper(newID, own).(*itemmap.CodexApp)}
	}
	undo := clis.Register(ahead)
	defer undo()
	undoRecorded := clis.Register(recorded)
	defer undoRecorded()

	stream := filepath.Join("..", "..", "testdata", "claude", "parallel_tools.stdout.jsonl")
	want := replay(t, stream, "claude", nil)
	if got := replay(t, stream, "ahead", nil); got != want || read == 0 {
		t.Errorf("a mapper that reads ahead: %d lines read ahead, items\n%s\nwant\n%s", read, got, want)
	}
	app := map[string]string{codex.SettingTransport: codex.TransportAppServer}
	session := filepath.Join("..", "..", "testdata", "codex", "app-server", "plan_updates.jsonl")
	want = replay(t, session, "codex", app)
	if got := replay(t, session, "recorded", app); got != want || !strings.Contains(want, `"directions"`) {
		t.Errorf("a recording's mapper: items\n%s\nwant\n%s", got, want)
	}
}
