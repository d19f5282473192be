package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/itemmap"
)

// TestCompactions: each compaction entity starts once and ends once: its
// first step is a compaction_update in progress, its summary streams as
// chunks while it runs and rides on the update that ends it, a summary
// after it completed goes on a completed update, nothing follows a
// cancel, and Open ends what a turn left running.
func TestCompactions(t *testing.T) {
	var cs Compactions
	lines := func(c itemmap.Compaction) []string {
		st := cs.Step(c)
		var out []string
		for l := range strings.SplitSeq(strings.TrimSuffix(string(st.Append(nil, "s", c.ID, c.Error)), "\n"), "\n") {
			if l == "" {
				continue
			}
			var m struct {
				Params struct {
					Update struct {
						SessionUpdate, Status string
						Summary               []struct{ Text string }
						Content               struct{ Text string }
					}
				}
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			u := m.Params.Update
			s := u.SessionUpdate + " " + u.Status + u.Content.Text
			for _, p := range u.Summary {
				s += " [" + p.Text + "]"
			}
			out = append(out, s)
		}
		if st.None() != (len(out) == 0) {
			t.Errorf("%+v: None %v with %q", c, st.None(), out)
		}
		return out
	}
	for _, tc := range []struct {
		c    itemmap.Compaction
		want []string
	}{
		{itemmap.Compaction{ID: "c"}, []string{"compaction_update in_progress"}},
		{itemmap.Compaction{ID: "c", Summary: "part"}, []string{"compaction_summary_chunk part"}},
		{itemmap.Compaction{ID: "c", Status: itemmap.CompactionCompleted, Summary: " whole"}, []string{"compaction_summary_chunk  whole", "compaction_update completed"}},
		{itemmap.Compaction{ID: "c", Summary: "late"}, []string{"compaction_update completed [late]"}},
		{itemmap.Compaction{ID: "d", Status: itemmap.CompactionCompleted, Summary: "all"}, []string{"compaction_update completed [all]"}},
		{itemmap.Compaction{ID: "e", Status: itemmap.CompactionFailed, Summary: "no"}, []string{"compaction_update failed"}},
		{itemmap.Compaction{ID: "e", Summary: "more"}, nil},
		{itemmap.Compaction{ID: "f"}, []string{"compaction_update in_progress"}},
	} {
		if got := lines(tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
	if !cs.Known("c") || cs.Known("g") {
		t.Error("Known")
	}
	if open := cs.Open(); !slices.Equal(open, []string{"f"}) {
		t.Errorf("open %q", open)
	}
	if got := lines(itemmap.Compaction{ID: "f", Status: itemmap.CompactionCompleted}); got != nil {
		t.Errorf("after its cancel: %q", got)
	}
}
