package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The folder the benchmarks walk: benchFiles files in 100 folders,
// benchBytes in all (a tenth of the files are text lines, the rest
// random bytes), generated in the benchmark's temporary folder.
const (
	benchFiles = 10_000
	benchBytes = 200 << 20
)

// benchFolder makes a folder of n files holding total bytes, and returns
// it with the relative paths of its files.
func benchFolder(tb testing.TB, dir string, n int, total int64) []string {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	size := int(total / int64(n))
	buf := make([]byte, size)
	paths := make([]string, n)
	for i := range n {
		p := fmt.Sprintf("d%02d/f%05d.txt", i%100, i)
		paths[i] = p
		if i%10 == 0 {
			line := fmt.Sprintf("line of file %d\n", i)
			copy(buf, strings.Repeat(line, size/len(line)+1))
		} else {
			for j := range buf {
				buf[j] = byte(rng.Uint32())
			}
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(full, buf, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return paths
}

type benchEnv struct {
	root, pkg string
	tr        *Tracker
	st        *Store
	paths     []string
}

func newBench(tb testing.TB, n int, total int64) *benchEnv {
	tb.Helper()
	base := tb.TempDir()
	e := &benchEnv{root: filepath.Join(base, "work"), pkg: filepath.Join(base, "pkg")}
	os.MkdirAll(e.pkg, 0o755)
	e.paths = benchFolder(tb, e.root, n, total)
	var err error
	if e.tr, err = NewTracker([]string{e.root}, filepath.Join(base, "state"), Options{}); err != nil {
		tb.Fatal(err)
	}
	if e.st, err = Open(e.pkg, Policy{}); err != nil {
		tb.Fatal(err)
	}
	// The first turn reads every file once.
	if err := e.tr.Begin(); err != nil {
		tb.Fatal(err)
	}
	if _, err := e.tr.End(); err != nil {
		tb.Fatal(err)
	}
	return e
}

// turn runs a turn that changes k files (appending a line to each) and
// records it under key.
func (e *benchEnv) turn(tb testing.TB, key string, files []string) ChangeSet {
	if err := e.tr.Begin(); err != nil {
		tb.Fatal(err)
	}
	for _, p := range files {
		f, err := os.OpenFile(filepath.Join(e.root, filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(f, "changed by %s\n", key)
		f.Close()
	}
	cs, err := e.tr.End()
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.st.Record(key, "user-"+key, cs); err != nil {
		tb.Fatal(err)
	}
	return cs
}

// BenchmarkFirstTurn: the first turn in a folder of 10,000 files and 200
// MB reads every file once into the baseline cache.
func BenchmarkFirstTurn(b *testing.B) {
	base := b.TempDir()
	root := filepath.Join(base, "work")
	benchFolder(b, root, benchFiles, benchBytes)
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for i := range b.N {
		tr, _ := NewTracker([]string{root}, filepath.Join(base, fmt.Sprintf("state%d", i)), Options{})
		if err := tr.Begin(); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.End(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTurnUnchanged: a turn that changes nothing in a folder of
// 10,000 files and 200 MB (Begin and End: two metadata walks).
func BenchmarkTurnUnchanged(b *testing.B) {
	e := newBench(b, benchFiles, benchBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := e.tr.Begin(); err != nil {
			b.Fatal(err)
		}
		cs, err := e.tr.End()
		if err != nil || !cs.Empty() {
			b.Fatal(err, cs)
		}
	}
}

// BenchmarkTurnTenChanged: a turn that changes 10 files of the same
// folder, recorded in the package.
func BenchmarkTurnTenChanged(b *testing.B) {
	e := newBench(b, benchFiles, benchBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.turn(b, fmt.Sprintf("n%d", i), e.paths[(i*10)%benchFiles:(i*10)%benchFiles+10])
	}
}

// BenchmarkRewindFiveTurns: planning and applying a rewind of 5 turns
// that changed 50 files of the same folder (10 each); the rewind is
// undone between runs, untimed.
func BenchmarkRewindFiveTurns(b *testing.B) {
	e := newBench(b, benchFiles, benchBytes)
	var keys []string
	for t := range 5 {
		k := fmt.Sprintf("n%d", t)
		e.turn(b, k, e.paths[t*10:t*10+10])
		keys = append([]string{k}, keys...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		plan, err := e.st.Plan(keys, false)
		if err != nil || len(plan.Actions) != 50 {
			b.Fatal(err, len(plan.Actions))
		}
		id, err := e.st.Apply(plan)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		undo, err := e.st.PlanUndo(id, false)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.st.Apply(undo); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestTenChangedStoresTen: a turn that changes 10 files of a folder of
// 1,000 stores those 10 earlier contents and nothing else, and reads only
// those files.
func TestTenChangedStoresTen(t *testing.T) {
	e := newBench(t, 1000, 4<<20)
	reads := e.tr.reads
	cs := e.turn(t, "n1", e.paths[100:110])
	if len(cs.Files) != 10 {
		t.Fatalf("%d files changed", len(cs.Files))
	}
	if b := blobs(t, e.pkg); len(b) != 10 {
		t.Fatalf("%d contents stored, want 10", len(b))
	}
	if n := e.tr.reads - reads; n != 10 {
		t.Fatalf("the turn read %d files, want 10", n)
	}
}
