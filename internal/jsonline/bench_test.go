package jsonline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func BenchmarkValidLine(b *testing.B) {
	stream, _ := benchStream(b, claudeStreams(b), 20<<20)
	b.SetBytes(int64(len(stream)))
	b.Run("Valid", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			readLines(stream, func(l []byte) { Valid(l) })
		}
	})
	b.Run("gjson", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			readLines(stream, func(l []byte) { _ = !TooDeep(l) && gjson.ValidBytes(l) })
		}
	})
}

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

// BenchmarkJSONDoc reads the recorded claude streams line by line into a
// Doc, as the claude mapper does first with every line.
func BenchmarkJSONDoc(b *testing.B) {
	stream, _ := benchStream(b, claudeStreams(b), 20<<20)
	b.SetBytes(int64(len(stream)))
	var d Doc
	for b.Loop() {
		readLines(stream, func(l []byte) { d.Parse(l) })
	}
}

// BenchmarkJSONDocHarness reads the side-by-side harness's 100 MB Claude
// stream (scripts/bench builds it in .tools/perf) into a Doc line by line.
func BenchmarkJSONDocHarness(b *testing.B) {
	stream, err := os.ReadFile(filepath.Join("..", "..", ".tools", "perf", "stream-100M.jsonl"))
	if err != nil {
		b.Skipf("no harness stream: %v", err)
	}
	b.SetBytes(int64(len(stream)))
	var d Doc
	for b.Loop() {
		readLines(stream, func(l []byte) { d.Parse(l) })
	}
}

// BenchmarkJSONDocDelta reads one text_delta line into a Doc.
func BenchmarkJSONDocDelta(b *testing.B) {
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" parse I'll \"quoted\" -\u003e now"}},"session_id":"1f7b169c-846f-418a-a552-fa82fbf86758","parent_tool_use_id":null,"uuid":"d838ddd4-2f59-4f58-ab1b-9ff1f6f40b7a","api_message_id":"msg_mock_492f2b8a67697c4f"}`)
	b.Run("Doc", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		var d Doc
		for b.Loop() {
			d.Parse(line)
		}
	})
	b.Run("gjsonType", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			gjson.GetBytes(line, "type")
		}
	})
	b.Run("Valid", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			Valid(line)
		}
	})
}

// BenchmarkUnescape unescapes the escaped strings of the recorded claude
// streams (tool results, code, prose), one after the other.
func BenchmarkUnescape(b *testing.B) {
	var strs []string
	n := 0
	for _, f := range claudeStreams(b) {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		readLines(data, func(l []byte) {
			var d Doc
			if !d.Parse(l) {
				return
			}
			for i := range d.nodes {
				if nd := &d.nodes[i]; nd.kind == '"' && nd.esc && nd.end-nd.start > 64 {
					strs = append(strs, strings.Clone(d.s[nd.start+1:nd.end-1]))
					n += len(strs[len(strs)-1])
				}
			}
		})
	}
	b.SetBytes(int64(n))
	var dst []byte
	for b.Loop() {
		for _, s := range strs {
			dst = Unescape(dst[:0], s)
		}
	}
}

// claudeStreams are the recorded claude streams the itemmap tests map:
// the shared fixtures' and the project's own.
func claudeStreams(t testing.TB) []string {
	shared, _ := filepath.Glob("../itemmap/testdata/claude/*.stdout.jsonl")
	own, _ := filepath.Glob("../../testdata/claude/*.stdout.jsonl")
	if len(shared) == 0 || len(own) == 0 {
		t.Fatalf("found %d shared and %d own claude streams", len(shared), len(own))
	}
	return append(shared, own...)
}

// benchStream is files one after the other, repeated to at least size
// bytes.
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
