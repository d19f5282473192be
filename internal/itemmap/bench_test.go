package itemmap

import (
	"bytes"
	"os"
	"path/filepath"
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

// BenchmarkClaudeTextDelta maps the line the claude stream has most of: a
// text_delta of a streaming reply (per line: ns, bytes and allocations).
func BenchmarkClaudeTextDelta(b *testing.B) {
	m := NewClaude(SequentialIDs())
	for _, l := range []string{
		`{"type":"system","subtype":"init","session_id":"s","model":"m"}`,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{}}},"session_id":"s","parent_tool_use_id":null}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}`,
	} {
		m.Line([]byte(l))
	}
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" parse I'll \"quoted\" -\u003e now"}},"session_id":"1f7b169c-846f-418a-a552-fa82fbf86758","parent_tool_use_id":null,"uuid":"d838ddd4-2f59-4f58-ab1b-9ff1f6f40b7a","api_message_id":"msg_1"}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n%1000 == 0 {
			// A new block now and then, so the text does not grow without end.
			m.Line([]byte(`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}`))
			m.turn.blocks = m.turn.blocks[len(m.turn.blocks)-1:]
		}
		m.Line(line)
	}
}

// BenchmarkClaudeMapperHarness maps the side-by-side harness's 100 MB
// Claude stream (scripts/bench builds it in .tools/perf), one line at a
// time with Line, as serve's supervisor feeds it.
func BenchmarkClaudeMapperHarness(b *testing.B) {
	stream, err := os.ReadFile(filepath.Join("..", "..", ".tools", "perf", "stream-100M.jsonl"))
	if err != nil {
		b.Skipf("no harness stream: %v", err)
	}
	lines := bytes.Count(stream, []byte("\n"))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var ms, before runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		m := NewClaude(SequentialIDs())
		readLines(stream, func(l []byte) { m.Line(l) })
		m.Finish(false, "end", "")
	}
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-before.Mallocs)/float64(b.N)/float64(lines), "allocs/line")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(lines), "ns/line")
}

// readLines calls f with each line of s.
func readLines(s []byte, f func([]byte)) {
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\n')
		if i < 0 {
			i = len(s)
		}
		f(s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
}
