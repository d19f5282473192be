package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/canonjson"
)

// manyLogs makes n logs of one keyed record each in a new state folder, and
// the index that knows them, as n conversations of one turn leave them
// (written directly: Append rewrites the index at each call). It returns
// the folder and each log's head, as spbridge audit head prints them.
func manyLogs(tb testing.TB, n int) (string, []Head) {
	tb.Helper()
	dir := tb.TempDir()
	key, err := loadKey(dir, true)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "audit"), 0o700); err != nil {
		tb.Fatal(err)
	}
	ix := &index{logs: map[string]*entry{}}
	heads := make([]Head, 0, n)
	for i := range n {
		id := fmt.Sprintf("%08X-0F3A-4E7B-8D61-2B9A0C1D2E30", i)
		rec := map[string]any{"user": "x", FieldSeq: json.Number("1"), FieldPrev: zeroHash}
		tag, err := recordMAC(key, id, rec)
		if err != nil {
			tb.Fatal(err)
		}
		rec[FieldHMAC] = tag
		line, err := canonjson.EncodeCompact(rec)
		if err != nil {
			tb.Fatal(err)
		}
		path, _ := Path(dir, id)
		if err := os.WriteFile(path, append(line, '\n'), 0o600); err != nil {
			tb.Fatal(err)
		}
		ix.logs[id] = &entry{records: 1, last: tag, keyedFrom: 1}
		heads = append(heads, Head{ID: id, Records: 1, Last: tag})
	}
	if err := ix.write(dir, key); err != nil {
		tb.Fatal(err)
	}
	return dir, heads
}

// BenchmarkVerifyAllHeads is spbridge audit verify --heads over 1,000,
// 10,000 and 100,000 logs with a kept head each: the time per log must not
// grow with the number of logs.
func BenchmarkVerifyAllHeads(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir, heads := manyLogs(b, n)
			b.ResetTimer()
			for b.Loop() {
				a, err := VerifyAll(dir, heads)
				if err != nil || !a.OK() || len(a.Logs) != n {
					b.Fatalf("VerifyAll: %v, ok %v, %d logs", err, a != nil && a.OK(), len(a.Logs))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/log")
		})
	}
}
