package itemmap

import (
	"bytes"
	"os"
	"runtime"
	"testing"
)

// codexBenchStream concatenates every recorded codex stream until it is at
// least size bytes long.
func codexBenchStream(b *testing.B, size int) (stream []byte, lines int) {
	b.Helper()
	var one []byte
	for _, f := range codexStreams(b) {
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

// BenchmarkCodexMapper maps a stream of at least 100 MB built from the
// recorded codex streams, line by line, as the supervisor feeds it. It
// reports MB/s, allocations per line, and the heap after the run (which
// must not grow with the stream's length).
func BenchmarkCodexMapper(b *testing.B) {
	stream, lines := codexBenchStream(b, 100<<20)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var ms, before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		m := NewCodex(SequentialIDs())
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
