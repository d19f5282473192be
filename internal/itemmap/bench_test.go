package itemmap

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// benchStream concatenates the files until the result is at least size
// bytes long.
func benchStream(b *testing.B, files []string, size int) (stream []byte, lines int) {
	b.Helper()
	var one []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		one = append(one, data...)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			one = append(one, '\n')
		}
	}
	for len(stream) < size {
		stream = append(stream, one...)
	}
	return stream, bytes.Count(stream, []byte("\n"))
}

// benchMapper maps a stream of at least 100 MB built from files, line by
// line, as the supervisor feeds it, with a new mapper each round. It
// reports MB/s, allocations per line, and the heap after the run (which
// must not grow with the stream's length).
func benchMapper(b *testing.B, files []string, newMapper func() interface {
	Line([]byte) Result
	Finish(bool, string, string) Result
}) {
	stream, lines := benchStream(b, files, 100<<20)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var ms, before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		m := newMapper()
		rest := stream
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			m.Line(rest[:i])
			rest = rest[i+1:]
		}
		m.Finish(false, "end", "")
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-before.Mallocs)/float64(b.N)/float64(lines), "allocs/line")
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(lines), "lines/op")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heapMB-after")
}

// BenchmarkClaudeMapper maps a stream of at least 100 MB built from the
// recorded claude streams.
func BenchmarkClaudeMapper(b *testing.B) {
	benchMapper(b, claudeStreams(b), func() interface {
		Line([]byte) Result
		Finish(bool, string, string) Result
	} {
		return NewClaude(SequentialIDs())
	})
}
