package claude

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// compactHost records what a turn's host is told of compactions.
type compactHost struct{ got []string }

func (h *compactHost) Change(c itemmap.Change) {
	if c.Compaction != nil {
		h.got = append(h.got, fmt.Sprintf("notice %s: %s", c.Compaction.ID, c.Item.String("text")))
	}
}

func (h *compactHost) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}

func (h *compactHost) Compaction(c itemmap.Compaction) {
	h.got = append(h.got, fmt.Sprintf("%s %s %q %q", c.ID, c.Status, c.Summary, c.Error))
}

// TestCompactionSteps: the recorded /compact of the real claude
// (testdata/claude/compact.stdout.jsonl) is one compaction: in progress
// at its "compacting" status, the boundary's notice naming it, then
// completed with the summary the continuing message carries, without
// Claude Code's framing.
func TestCompactionSteps(t *testing.T) {
	data, err := os.ReadFile("../../testdata/claude/compact.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b := New(Options{NewID: itemmap.SequentialIDs()})
	h := &compactHost{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 {
			b.compactionLine(line, h)
		}
	}
	id := "00000000-0000-4000-8000-000000000001"
	want := []string{
		id + ` in_progress "" ""`,
		"notice " + id + ": Claude Code compacted the conversation (104 tokens before, 2565 after).",
		id + ` completed "The user said hi; the assistant greeted them." ""`,
	}
	if !reflect.DeepEqual(h.got, want) {
		t.Errorf("steps\n%q\nwant\n%q", h.got, want)
	}
}

// TestCompactionWithoutSummary: a compaction whose turn ends before the
// summary completes at the result when its boundary came, and is
// cancelled when it did not; a failed one fails with Claude Code's error.
func TestCompactionWithoutSummary(t *testing.T) {
	lines := func(ls ...string) []string {
		b := New(Options{NewID: itemmap.SequentialIDs()})
		h := &compactHost{}
		for _, l := range ls {
			b.compactionLine([]byte(l), h)
		}
		return h.got
	}
	compacting := `{"type":"system","subtype":"status","status":"compacting"}`
	result := `{"type":"result","subtype":"success"}`
	id := "00000000-0000-4000-8000-000000000001"
	if got := lines(compacting, `{"type":"system","subtype":"compact_boundary"}`, result); len(got) != 3 || got[2] != id+` completed "" ""` {
		t.Errorf("boundary, no summary: %q", got)
	}
	if got := lines(compacting, result); len(got) != 2 || got[1] != id+` cancelled "" ""` {
		t.Errorf("no boundary: %q", got)
	}
	failed := `{"type":"system","subtype":"status","status":null,"compact_result":"failed","compact_error":"Not enough messages to compact."}`
	if got := lines(compacting, failed, result); len(got) != 2 || got[1] != id+` failed "" "Not enough messages to compact."` {
		t.Errorf("failed: %q", got)
	}
}

// TestCompactionID: a backend whose items get their ids elsewhere (no
// NewID, as serve and run make them) still names each compaction.
func TestCompactionID(t *testing.T) {
	b := New(Options{})
	h := &compactHost{}
	b.compactionLine([]byte(`{"type":"system","subtype":"status","status":"compacting"}`), h)
	if len(h.got) != 1 || strings.HasPrefix(h.got[0], " ") {
		t.Errorf("steps %q, want one compaction with an id", h.got)
	}
}

// compactRecorder is a recorder that also records compactions.
type compactRecorder struct {
	recorder
	cmu   sync.Mutex
	steps []itemmap.Compaction
}

func (r *compactRecorder) Compaction(c itemmap.Compaction) {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	r.steps = append(r.steps, c)
}

// TestCompactionDiesWithProcess: a compaction of a claude that died ends
// with it; the restarted claude's turn tells of none (no stale compaction
// ended by its result).
func TestCompactionDiesWithProcess(t *testing.T) {
	b := fakeBackend(t, "compact-crash", Options{})
	rec := &compactRecorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "one"}, rec); end.Status != itemmap.TurnFailed {
		t.Fatalf("status %s, want failed", end.Status)
	}
	if len(rec.steps) != 1 || rec.steps[0].Status != itemmap.CompactionInProgress {
		t.Fatalf("steps %+v, want the compaction in progress", rec.steps)
	}
	rec.steps = nil
	if end := b.Turn(context.Background(), backend.Message{Text: "two"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("after the crash: %s", end.Status)
	}
	if len(rec.steps) != 0 {
		t.Errorf("the restarted claude's turn told of %+v", rec.steps)
	}
}
