package itemmap

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
	b.Run("validLine", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			readLines(stream, func(l []byte) { validLine(l) })
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
// jdoc, as the claude mapper does first with every line.
func BenchmarkJSONDoc(b *testing.B) {
	stream, _ := benchStream(b, claudeStreams(b), 20<<20)
	b.SetBytes(int64(len(stream)))
	var d jdoc
	for b.Loop() {
		readLines(stream, func(l []byte) { d.parse(l) })
	}
}

// BenchmarkJSONDocHarness reads the side-by-side harness's 100 MB Claude
// stream (scripts/bench builds it in .tools/perf) into a jdoc line by line.
func BenchmarkJSONDocHarness(b *testing.B) {
	stream, err := os.ReadFile(filepath.Join("..", "..", ".tools", "perf", "stream-100M.jsonl"))
	if err != nil {
		b.Skipf("no harness stream: %v", err)
	}
	b.SetBytes(int64(len(stream)))
	var d jdoc
	for b.Loop() {
		readLines(stream, func(l []byte) { d.parse(l) })
	}
}

// BenchmarkJSONDocDelta reads one text_delta line into a jdoc.
func BenchmarkJSONDocDelta(b *testing.B) {
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" parse I'll \"quoted\" -\u003e now"}},"session_id":"1f7b169c-846f-418a-a552-fa82fbf86758","parent_tool_use_id":null,"uuid":"d838ddd4-2f59-4f58-ab1b-9ff1f6f40b7a","api_message_id":"msg_mock_492f2b8a67697c4f"}`)
	b.Run("jdoc", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		var d jdoc
		for b.Loop() {
			d.parse(line)
		}
	})
	b.Run("gjsonType", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			gjson.GetBytes(line, "type")
		}
	})
	b.Run("validLine", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			validLine(line)
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
			var d jdoc
			if !d.parse(l) {
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
			dst = unescapeJSON(dst[:0], s)
		}
	}
}

// BenchmarkReadFast reads a text_delta line as the fast path does.
func BenchmarkReadFast(b *testing.B) {
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" parse I'll \"quoted\" -\u003e now"}},"session_id":"1f7b169c-846f-418a-a552-fa82fbf86758","parent_tool_use_id":null,"uuid":"d838ddd4-2f59-4f58-ab1b-9ff1f6f40b7a","api_message_id":"msg_mock_492f2b8a67697c4f"}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, ok := readFast(line); !ok {
			b.Fatal("not taken")
		}
	}
}
