package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReplayStream replays the side-by-side harness's Claude stream
// (scripts/bench builds it in .tools/perf; SPBRIDGE_REPLAY_STREAM names
// another) to io.Discard, as `spbridge replay --backend claude` does.
func BenchmarkReplayStream(b *testing.B) {
	path := os.Getenv("SPBRIDGE_REPLAY_STREAM")
	if path == "" {
		path = filepath.Join("..", "..", ".tools", "perf", "stream-100M.jsonl")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("no stream to replay: %v", err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		st := stdio{in: bytes.NewReader(data), out: io.Discard, err: io.Discard}
		if err := runReplay(b.Context(), st, []string{"--backend", "claude"}); err != nil {
			b.Fatal(err)
		}
	}
}
