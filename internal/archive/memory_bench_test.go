package archive

import (
	"io"
	"os"
	"runtime"
	"testing"
)

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkConversationHeap reports what a conversation read from
// $SPBRIDGE_CONVERSATION (a conversation.json, such as the one the
// side-by-side harness's serve run saves) holds in memory: the live heap
// after Decode, and after an encode that fills the save's caches, against
// the file's size and per item.
func BenchmarkConversationHeap(b *testing.B) {
	path := os.Getenv("SPBRIDGE_CONVERSATION")
	if path == "" {
		b.Skip("SPBRIDGE_CONVERSATION names no conversation.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	var conv *Conversation
	var decoded, encoded uint64
	for b.Loop() {
		conv = nil
		base := heapInUse()
		conv, err = Decode(data)
		if err != nil {
			b.Fatal(err)
		}
		decoded = heapInUse() - base
		if err := conv.write(io.Discard, nil, false); err != nil {
			b.Fatal(err)
		}
		encoded = heapInUse() - base
	}
	b.ReportMetric(float64(len(data))/1e6, "fileMB")
	b.ReportMetric(float64(decoded)/1e6, "heapMB-decoded")
	b.ReportMetric(float64(encoded)/1e6, "heapMB-encoded")
	b.ReportMetric(float64(len(conv.Items)), "items")
	b.ReportMetric(float64(decoded)/float64(len(conv.Items)), "B/item-decoded")
	runtime.KeepAlive(conv)
}
