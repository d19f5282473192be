package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
)

// exportBenchSize is how large a conversation BenchmarkExport exports.
const exportBenchSize = 100 << 20

// makeLongPackage writes, under dir, a package whose conversation.json is
// about size bytes: turns of a user's message, thinking, an assistant's
// Markdown answer, a command with its output (as items keep it: up to 16
// KiB), an edit with its old and new text and its approval, and the
// history to go with them.
func makeLongPackage(tb testing.TB, dir string, size int) string {
	tb.Helper()
	pkg := filepath.Join(dir, "Long.silverpoint")
	if fi, err := os.Stat(filepath.Join(pkg, archive.AgentDir, archive.ConversationFile)); err == nil && fi.Size() >= int64(size) {
		return pkg // made by an earlier run (SPBRIDGE_EXPORT_BENCH_DIR)
	}
	if err := os.MkdirAll(pkg, 0o700); err != nil {
		tb.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		tb.Fatal(err)
	}
	conv := p.Conv
	item := func(fields map[string]any) {
		fields["id"] = archive.NewID()
		conv.Items = append(conv.Items, archive.ItemFromMap(fields))
	}
	var out strings.Builder
	for i := range 400 {
		fmt.Fprintf(&out, "src/pkg%d/file%d.go:%d: // TODO(%d) make this faster, it is called for every line of every file\n", i%7, i, i*3, i)
	}
	output := out.String()[:14<<10]
	answer := strings.Repeat("The change keeps the **public API** as it was and moves the `parse` step out of the loop:\n\n"+
		"```go\nfor _, l := range lines {\n\tif err := handle(l); err != nil {\n\t\treturn err\n\t}\n}\n```\n\n- one\n- two\n\n", 6)
	oldText := strings.Repeat("\tx := parse(line)\n\tuse(x)\n", 30)
	newText := strings.Replace(oldText, "parse(line)", "parsed[i]", 10)
	est := 0
	for n := 0; est < size; n++ {
		user := fmt.Sprintf("Turn %d: find the TODOs in src and make the parser faster, keeping the API.", n)
		item(map[string]any{"type": archive.TypeUser, "text": user})
		item(map[string]any{"type": archive.TypeThinking, "text": strings.Repeat("Look at the callers first; the loop parses each line twice. ", 12)})
		item(map[string]any{"type": archive.TypeTool, "name": "Bash", "summary": "rg -n TODO src", "status": archive.StatusSucceeded, "statusText": "exit 0",
			"detail": "arguments:\n{\n  \"command\": \"rg -n TODO src\",\n  \"description\": \"Find the TODOs\"\n}\n\noutput:\n" + output})
		args := fmt.Sprintf("{\n  \"file_path\": \"src/pkg/file%d.go\",\n  \"new_string\": %s,\n  \"old_string\": %s\n}", n, strconv.Quote(newText), strconv.Quote(oldText))
		item(map[string]any{"type": archive.TypeTool, "name": "Edit", "summary": fmt.Sprintf("src/pkg/file%d.go", n), "status": archive.StatusSucceeded, "statusText": "done",
			"detail": "arguments:\n" + args + "\n\noutput:\nThe file was updated."})
		item(map[string]any{"type": archive.TypeToolApproval, "name": "Edit", "summary": fmt.Sprintf("src/pkg/file%d.go", n), "detail": "arguments:\n" + args})
		item(map[string]any{"type": archive.TypeAssistant, "text": answer})
		conv.History = append(conv.History,
			archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(user)}},
			archive.Message{Role: "assistant", Content: []archive.Block{archive.NewTextBlock(answer), archive.NewToolCallBlock("call", "Bash", `{"command":"rg -n TODO src"}`)}},
			archive.Message{Role: "tool", Content: []archive.Block{archive.NewToolResultBlock("call", "Bash", output, false)}})
		// What the turn adds to the file: its texts twice (items and
		// history), JSON's escapes and layout.
		est += 2*len(output) + 3*len(answer) + 4*len(oldText) + 2500
	}
	conv.Usage = archive.Usage{Input: "123456789", Output: "2345678", CacheRead: "98765432"}
	conv.EstimatedCost = archive.Cost{Kind: archive.CostEstimated, Dollars: "412.75"}
	if _, err := p.Save(true); err != nil {
		tb.Fatal(err)
	}
	return pkg
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkExport exports a 100 MB conversation (makeLongPackage) as the
// command does, package opened and all, as HTML and as Markdown: the time
// a run, its throughput over conversation.json, the page's size, what it
// allocated, and the heap's peak (the most the live heap held at a
// collection: /gc/heap/live:bytes after each one, the collector paced as
// the command runs it). $SPBRIDGE_EXPORT_BENCH_DIR keeps the
// package between runs (made once, several seconds).
func BenchmarkExport(b *testing.B) {
	dir := os.Getenv("SPBRIDGE_EXPORT_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	pkg := makeLongPackage(b, dir, exportBenchSize)
	fi, err := os.Stat(filepath.Join(pkg, archive.AgentDir, archive.ConversationFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("SPBRIDGE_STATE_DIR", b.TempDir())
	for _, format := range []string{"html", "md"} {
		b.Run(format, func(b *testing.B) {
			b.SetBytes(fi.Size())
			var out countWriter
			var errOut strings.Builder
			var peak uint64
			for b.Loop() {
				runtime.GC()
				out.n = 0
				stop := watchHeap(&peak)
				code := run(context.Background(), []string{"export", "--format", format, pkg}, strings.NewReader(""), &out, &errOut)
				stop()
				if code != exitOK {
					b.Fatalf("export: exit %d, %s", code, errOut.String())
				}
			}
			b.ReportMetric(float64(fi.Size())/1e6, "fileMB")
			b.ReportMetric(float64(out.n)/1e6, "pageMB")
			b.ReportMetric(float64(peak)/1e6, "peakHeapMB")
		})
	}
}

// watchHeap records in peak the largest live heap a collection found,
// until stop is called: a sentinel's finalizer runs after each collection
// and reads /gc/heap/live:bytes, then sets itself again.
func watchHeap(peak *uint64) (stop func()) {
	var mu sync.Mutex
	done := false
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() {
		metrics.Read(sample)
		mu.Lock()
		*peak = max(*peak, sample[0].Value.Uint64())
		mu.Unlock()
	}
	var arm func()
	arm = func() {
		s := new([16]byte)
		runtime.SetFinalizer(s, func(*[16]byte) {
			read()
			mu.Lock()
			again := !done
			mu.Unlock()
			if again {
				arm()
			}
		})
	}
	arm()
	return func() {
		runtime.GC() // the heap at the end counts too
		read()
		mu.Lock()
		done = true
		mu.Unlock()
	}
}
