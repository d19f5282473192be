package itemmap

import (
	"bytes"
	"reflect"
	"testing"
)

// TestCodexAppCompaction: the recorded thread/compact/start of codex
// app-server (testdata/codex/app-server/compact.jsonl) is one compaction,
// by its contextCompaction item's id: in progress when the item starts,
// completed when it completes, with the notice that names it.
func TestCodexAppCompaction(t *testing.T) {
	stream, _ := appServerSession(t, "../../testdata/codex/app-server/compact.jsonl")
	m := NewCodexApp(SequentialIDs())
	var got []Compaction
	var notices []string
	for _, line := range bytes.Split(stream, []byte("\n")) {
		r := m.Line(line)
		got = append(got, r.Compactions...)
		for _, c := range r.Changes {
			if c.Compaction != nil {
				notices = append(notices, c.Compaction.ID+" "+c.Item.String("text"))
			}
		}
	}
	id := "01a22fa3-fe74-7a61-a80b-d2af4745143a"
	want := []Compaction{{ID: id, Status: CompactionInProgress}, {ID: id, Status: CompactionCompleted}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compactions %+v, want %+v", got, want)
	}
	if len(notices) != 1 || notices[0] != id+" Codex compacted the conversation." {
		t.Errorf("notices %q, want the compaction's", notices)
	}
}
