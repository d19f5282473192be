package itemmap

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"spbridge/internal/canonjson"
)

// dumpResult is everything a Result says, as text, read when the call
// returned.
func dumpResult(t *testing.T, r Result) string {
	t.Helper()
	var changes []any
	for _, c := range r.Changes {
		tool, err := json.Marshal(c.Tool)
		if err != nil {
			t.Fatal(err)
		}
		plan, _ := json.Marshal(c.Plan)
		changes = append(changes, map[string]any{"op": c.Op.String(), "item": c.Item.Map(), "delta": c.Delta,
			"tool": string(tool), "plan": string(plan), "outputDelta": c.OutputDelta})
	}
	approvals, err := json.Marshal(r.Approvals)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"changes": orEmpty(changes), "approvals": string(approvals), "skipped": r.Skipped}
	if r.Session != nil {
		v["session"] = []any{r.Session.ID, r.Session.Model}
	}
	var controls []any
	for _, c := range r.ControlRequests {
		controls = append(controls, c.RequestID, c.Subtype)
	}
	for _, id := range r.ControlResponses {
		controls = append(controls, id)
	}
	v["controls"] = orEmpty(controls)
	if e := r.End; e != nil {
		var p panel
		p.apply(t, Result{End: e})
		v["end"] = []any{p.turns[0], e.ContextWindow, e.NotStarted}
	}
	out, err := canonjson.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// checkBorrowed maps stream twice: once with each line in a slice of its
// own, once with every line in one buffer that is scribbled over as soon
// as Line returns. The results must be the same: the mapper keeps nothing
// of a line's bytes.
func checkBorrowed(t *testing.T, stream []byte) {
	t.Helper()
	own, borrowed := NewClaude(SequentialIDs()), NewClaude(SequentialIDs())
	var buf []byte
	for i, line := range bytes.Split(stream, []byte("\n")) {
		want := dumpResult(t, own.Line(bytes.Clone(line)))
		buf = append(buf[:0], line...)
		r := borrowed.Line(buf)
		for j := range buf {
			buf[j] = '#'
		}
		if got := dumpResult(t, r); got != want {
			t.Fatalf("line %d: with the line's bytes reused, the mapper gives\n%s\nnot\n%s", i+1, got, want)
		}
	}
	if got, want := dumpResult(t, borrowed.Finish(false, "end", "")), dumpResult(t, own.Finish(false, "end", "")); got != want {
		t.Fatalf("finish: with the lines' bytes reused, the mapper gives\n%s\nnot\n%s", got, want)
	}
}

// TestClaudeBorrowedLines checks on every recorded stream that the claude
// mapper keeps nothing of the lines it is given.
func TestClaudeBorrowedLines(t *testing.T) {
	streams := append(claudeStreams(t), "")
	for _, f := range streams {
		var data []byte
		if f == "" {
			data = []byte(specialStream)
		} else {
			var err error
			if data, err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(f, func(t *testing.T) { checkBorrowed(t, data) })
	}
}

// FuzzClaudeBorrowedLines checks on any stream that the claude mapper
// keeps nothing of the lines it is given.
func FuzzClaudeBorrowedLines(f *testing.F) {
	for _, file := range claudeStreams(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			for _, seed := range streamSeeds(data, claudeStart) {
				f.Add(seed)
			}
		}
	}
	for _, seed := range streamSeeds([]byte(specialStream), claudeStart) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkBorrowed(t, data) })
}
