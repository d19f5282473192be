package itemmap

import (
	"bytes"
	"path/filepath"
	"testing"
)

// checkOwned maps stream twice: with Line, its lines in a buffer
// scribbled over as soon as Line returns, and with LineOwned, each line a
// slice of its own. The results must be the same, to the end of the turn.
func checkOwned(t *testing.T, stream []byte) {
	t.Helper()
	line, owned := NewCodexApp(SequentialIDs()), NewCodexApp(SequentialIDs())
	var buf []byte
	for i, l := range bytes.Split(stream, []byte("\n")) {
		buf = append(buf[:0], l...)
		r := line.Line(buf)
		for j := range buf {
			buf[j] = '#'
		}
		want := dumpResult(t, r)
		if got := dumpResult(t, owned.LineOwned(bytes.Clone(l))); got != want {
			t.Fatalf("line %d: LineOwned gives\n%s\nnot, as Line,\n%s", i+1, got, want)
		}
	}
	if got, want := dumpResult(t, owned.Finish(false, "end", "")), dumpResult(t, line.Finish(false, "end", "")); got != want {
		t.Fatalf("finish: after LineOwned\n%s\nnot, as after Line,\n%s", got, want)
	}
}

// TestCodexAppLineOwned: on every recorded app-server session, and on
// lines too deep or not JSON, a line handed over maps as a line lent.
func TestCodexAppLineOwned(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded app-server sessions")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			stream, _ := appServerSession(t, f)
			checkOwned(t, stream)
		})
	}
	t.Run("bad lines", func(t *testing.T) {
		checkOwned(t, bytes.Join(append(deepSeeds(), []byte(`{"method":`), []byte(`[1,2]`), []byte(`{"id":7,"result":{}}`)), []byte("\n")))
	})
}

// FuzzCodexAppLineOwned checks on any stream that a line handed over maps
// as a line lent.
func FuzzCodexAppLineOwned(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	for _, file := range files {
		stream, _ := appServerSession(&testing.T{}, file)
		for _, seed := range streamSeeds(stream, codexAppStart) {
			f.Add(seed)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkOwned(t, data) })
}
