package itemmap

import (
	"bytes"
	"flag"

	"spbridge/internal/jsonline"
)

// fuzzSeedBytes bounds a seed cut from a recorded stream.
const fuzzSeedBytes = 2 << 10

// streamSeeds are the seeds a stream fuzzer takes from a recorded stream:
// the whole stream when go test runs the seeds as tests, its short runs of
// lines (fuzzSeeds) when it fuzzes.
func streamSeeds(stream []byte, start func(line []byte) bool) [][]byte {
	if fuzzing() {
		return fuzzSeeds(stream, start)
	}
	return [][]byte{stream}
}

// fuzzing reports whether go test was asked to fuzz (-fuzz).
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// Lines that start a turn, by CLI: a run of lines cut from the middle of a
// turn is led by one.
var (
	claudeStart   = linePrefixed(`{"type":"system","subtype":"init"`)
	codexStart    = linePrefixed(`{"type":"turn.started"`)
	codexAppStart = func(line []byte) bool { return bytes.Contains(line, []byte(`"method":"turn/started"`)) }
)

func linePrefixed(prefix string) func([]byte) bool {
	return func(line []byte) bool { return bytes.HasPrefix(line, []byte(prefix)) }
}

// fuzzSeeds cuts a recorded stream into fuzzing seeds: runs of whole lines
// of at most fuzzSeedBytes, each led by the line that last started a turn
// (start tells it) when that line is not in the run and fits.
//
// Whole recordings of 10–50 KB as the only seeds made the stream fuzzers
// crawl (FuzzCodexApp at 0–10 inputs a second): nearly every mutation of one
// reached new code, and the fuzzer then minimizes such an input, trying it
// over and over at a millisecond or more a try, for up to
// -fuzzminimizetime. Short runs of lines reach the same code at a hundredth
// of the cost.
func fuzzSeeds(stream []byte, start func(line []byte) bool) [][]byte {
	var seeds [][]byte
	var lead, run []byte
	flush := func() {
		if len(run) > 0 {
			seeds = append(seeds, run)
		}
		run = nil
	}
	for line := range bytes.Lines(stream) {
		if len(line) > fuzzSeedBytes {
			flush()
			continue
		}
		if len(run)+len(line) > fuzzSeedBytes {
			flush()
		}
		if start(line) {
			lead = line
		} else if len(run) == 0 && lead != nil && len(lead)+len(line) <= fuzzSeedBytes {
			run = append(run, lead...)
		}
		run = append(run, line...)
	}
	flush()
	return seeds
}

// deepSeeds are the lines nested too deep that a stream fuzzer takes as
// seeds: deepLines' 10 MB when go test runs the seeds as tests; when it
// fuzzes, lines a little deeper than jsonline.MaxDepth, which take the same
// skip at a ten-thousandth of the size.
func deepSeeds() [][]byte {
	if !fuzzing() {
		var lines [][]byte
		for _, l := range deepLines() {
			lines = append(lines, l)
		}
		return lines
	}
	open := bytes.Repeat([]byte("["), jsonline.MaxDepth+10)
	return [][]byte{
		open,
		append([]byte(`{"type":"assistant","a":`), open...),
		append([]byte(`{"jsonrpc":"2.0","method":"item/started","params":{"item":`), open...),
	}
}
