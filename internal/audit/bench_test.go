package audit

import (
	"fmt"
	"strings"
	"testing"
)

// benchRecord is a turn's record of about 110 KB: a user line and 40 items
// with text, as a streamed reply with tools leaves them.
func benchRecord() map[string]any {
	items := make([]any, 40)
	for i := range items {
		items[i] = map[string]any{"id": fmt.Sprintf("item-%d", i), "type": "assistant", "text": strings.Repeat("a reply line, é/<>\n", 150)}
	}
	return map[string]any{"time": "2026-12-01T00:00:00Z", "backend": "claude", "user": "continue", "status": "completed", "items": items}
}

// BenchmarkAppend appends one turn's record to a log in a state folder
// whose index knows 50 other logs, as serve does at each turn's end.
func BenchmarkAppend(b *testing.B) {
	dir := b.TempDir()
	for i := range 50 {
		p, _ := Path(dir, fmt.Sprintf("other-%d", i))
		if err := Append(p, map[string]any{"user": "x"}); err != nil {
			b.Fatal(err)
		}
	}
	path, _ := Path(dir, "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30")
	rec := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if err := Append(path, rec); err != nil {
			b.Fatal(err)
		}
	}
}
