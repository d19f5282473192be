package itemmap

import "testing"

// BenchmarkCodexMapper maps a stream of at least 100 MB built from the
// recorded codex streams.
func BenchmarkCodexMapper(b *testing.B) {
	benchMapper(b, codexStreams(b), func() interface {
		Line([]byte) Result
		Finish(bool, string, string) Result
	} {
		return NewCodex(SequentialIDs())
	})
}
