package codex

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// captureWork is the working folder of the recordings, as they name it.
const captureWork = "/home/dev/capture/codex-work"

// execPatchRun maps the recorded exec stream patch_rollout as a turn of the
// exec backend does, with rollout (nil: none) as codex's log of the thread
// and work as the working folder, and returns the apply_patch item's
// changes.
func execPatchRun(t *testing.T, rollout []byte, work string) []itemmap.Change {
	t.Helper()
	stream, err := os.ReadFile("../../testdata/codex/exec/patch_rollout.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	stream = bytes.ReplaceAll(stream, []byte(captureWork), []byte(work))
	thread := gjson.GetBytes(stream, "thread_id").String()
	home := t.TempDir()
	if rollout != nil {
		dir := filepath.Join(home, "sessions", "2026", "12", "01")
		os.MkdirAll(dir, 0o755)
		rollout = bytes.ReplaceAll(rollout, []byte(captureWork), []byte(work))
		if err := os.WriteFile(filepath.Join(dir, "rollout-2026-12-01T04-18-20-"+thread+".jsonl"), rollout, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := New(Options{Options: backend.Options{Env: []string{"CODEX_HOME=" + home}, Dir: work}, Transport: TransportExec})
	m := itemmap.NewCodex(itemmap.SequentialIDs())
	var out []itemmap.Change
	for line := range bytes.SplitSeq(stream, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		b.execFileChange(m, line)
		r := m.Line(line)
		if r.Session != nil {
			b.thread = r.Session.ID
		}
		for _, c := range r.Changes {
			if c.Item.String("name") == codexPatchName {
				out = append(out, c)
			}
		}
	}
	return out
}

const codexPatchName = "apply_patch"

// recordedRollout is the recorded log of the patch_rollout thread, without
// its lines that contain drop.
func recordedRollout(t *testing.T, drop string) []byte {
	t.Helper()
	data, err := os.ReadFile("../../testdata/codex/exec/patch_rollout.rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if drop == "" {
		return data
	}
	var kept [][]byte
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if !bytes.Contains(l, []byte(drop)) {
			kept = append(kept, l)
		}
	}
	return bytes.Join(kept, []byte("\n"))
}

// viewGolden compares the last view of changes, its paths as the
// recording names them, with testdata/NAME.golden.json.
func viewGolden(t *testing.T, changes []itemmap.Change, work, name string) *itemmap.ToolView {
	t.Helper()
	if len(changes) == 0 || changes[len(changes)-1].Tool == nil {
		t.Fatalf("no view: %+v", changes)
	}
	v := changes[len(changes)-1].Tool
	// The title names the files by their absolute paths (codex exec does
	// not say its folder) and is cut: checked on its own.
	if want := "Edit " + filepath.Join(work, "added.txt") + ", "; !strings.HasPrefix(v.Title, want) {
		t.Errorf("title %q, want it to start with %q", v.Title, want)
	}
	untitled := *v
	untitled.Title = ""
	got, err := json.MarshalIndent(untitled, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(bytes.ReplaceAll(got, []byte(work), []byte(captureWork)), '\n')
	path := filepath.Join("testdata", name+".golden.json")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: view\n%s\nwant\n%s", name, got, want)
	}
	return v
}

// TestExecPatchRolloutLog: the recorded exec stream of a patch that
// updates a file in two hunks, adds one, deletes one and moves one, with
// the recorded log of its thread: the completed item's view has the diffs
// of codex's FileChange event (a hunk each, the added file's text, the
// deleted file's old text, the move).
func TestExecPatchRolloutLog(t *testing.T) {
	work := t.TempDir()
	changes := execPatchRun(t, recordedRollout(t, ""), work)
	v := viewGolden(t, changes, work, "exec_patch_rollout_log")
	if len(v.Diffs) != 5 || v.Diffs[1].OldText == nil || *v.Diffs[1].OldText != "bye\n" {
		t.Errorf("diffs = %+v", v.Diffs)
	}
	for _, c := range changes[:len(changes)-1] {
		if c.Tool != nil && len(c.Tool.Diffs) > 0 {
			t.Errorf("a view before the item completed has diffs: %+v", c.Tool)
		}
	}
	checkItemUnchanged(t, changes)
}

// TestExecPatchRolloutPatch: a log without the FileChange event (codex had
// not written it yet) gives the diffs from the model's apply_patch call,
// its hunks placed in the files as they are after the change; the deleted
// file's old text is not known.
func TestExecPatchRolloutPatch(t *testing.T) {
	work := t.TempDir()
	for name, text := range map[string]string{
		"numbers.txt":  "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\n",
		"added.txt":    "first\nsecond\n",
		"new/name.txt": "alpha\nBETA\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755)
		os.WriteFile(filepath.Join(work, name), []byte(text), 0o644)
	}
	changes := execPatchRun(t, recordedRollout(t, `"FileChange"`), work)
	v := viewGolden(t, changes, work, "exec_patch_rollout_patch")
	log := execPatchRun(t, recordedRollout(t, ""), work)
	lv := log[len(log)-1].Tool
	// The same as the FileChange event's but for the deleted file's text.
	var want []itemmap.Diff
	for _, d := range lv.Diffs {
		if !strings.HasSuffix(d.Path, "gone.txt") {
			want = append(want, d)
		}
	}
	if !reflect.DeepEqual(v.Diffs, want) || !reflect.DeepEqual(v.Locations, lv.Locations) || v.Title != lv.Title || v.Kind != lv.Kind {
		t.Errorf("from the patch: %+v\nfrom the log: %+v", v, lv)
	}
	checkItemUnchanged(t, changes)
}

// TestExecPatchRolloutNone: without a log, with a log that has no
// apply_patch call, or once the log's one call was given to an item, the
// item shows only its files.
func TestExecPatchRolloutNone(t *testing.T) {
	for name, rollout := range map[string][]byte{
		"no log":  nil,
		"no call": recordedRollout(t, `"call_patch_1"`),
	} {
		work := t.TempDir()
		changes := execPatchRun(t, rollout, work)
		v := changes[len(changes)-1].Tool
		if v == nil || len(v.Diffs) != 0 || len(v.Locations) != 4 || v.Locations[2].Line != 0 || v.Title == "" {
			t.Errorf("%s: view = %+v", name, v)
		}
		checkItemUnchanged(t, changes)
	}

	// The same item twice in one thread: the second finds the call used.
	work := t.TempDir()
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "12", "01")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "rollout-x-th.jsonl"), bytes.ReplaceAll(recordedRollout(t, ""), []byte(captureWork), []byte(work)), 0o600)
	b := New(Options{Options: backend.Options{Env: []string{"CODEX_HOME=" + home}, Dir: work}, Transport: TransportExec})
	b.thread = "th"
	line := []byte(`{"type":"item.completed","item":{"id":"item_0","type":"file_change","changes":[{"path":"` + work + `/numbers.txt","kind":"update"},{"path":"` + work + `/added.txt","kind":"add"},{"path":"` + work + `/gone.txt","kind":"delete"},{"path":"` + work + `/old/name.txt","kind":"update"}],"status":"completed"}}`)
	var diffs []int
	for range 2 {
		m := itemmap.NewCodex(itemmap.SequentialIDs())
		m.Line([]byte(`{"type":"turn.started"}`))
		b.execFileChange(m, line)
		r := m.Line(line)
		diffs = append(diffs, len(r.Changes[0].Tool.Diffs))
	}
	if diffs[0] != 5 || diffs[1] != 0 {
		t.Errorf("diffs of the same item twice: %v, want [5 0]", diffs)
	}
}

// checkItemUnchanged: the diffs are the view's only: the completed item
// (what is saved) is the one codex exec's report alone gives.
func checkItemUnchanged(t *testing.T, changes []itemmap.Change) {
	t.Helper()
	it := changes[len(changes)-1].Item
	detail := it.String("detail")
	if it.String("status") != "succeeded" || it.String("statusText") != "4 files" ||
		strings.Contains(detail, "@@") || strings.Contains(detail, "ELEVEN") || strings.Contains(detail, "bye") {
		t.Errorf("the item changed: %v", it.Map())
	}
}

// TestExecPatchRolloutLate: when codex logs its FileChange event only
// after it printed the item, the item first shows the patch's diffs, and
// the next line brings a view update with the event's (the deleted file's
// old text too).
func TestExecPatchRolloutLate(t *testing.T) {
	work := t.TempDir()
	for name, text := range map[string]string{
		"numbers.txt":  "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\n",
		"added.txt":    "first\nsecond\n",
		"new/name.txt": "alpha\nBETA\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755)
		os.WriteFile(filepath.Join(work, name), []byte(text), 0o644)
	}
	stream, err := os.ReadFile("../../testdata/codex/exec/patch_rollout.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	stream = bytes.ReplaceAll(stream, []byte(captureWork), []byte(work))
	thread := gjson.GetBytes(stream, "thread_id").String()
	full := bytes.ReplaceAll(recordedRollout(t, ""), []byte(captureWork), []byte(work))
	early := bytes.ReplaceAll(recordedRollout(t, `"FileChange"`), []byte(captureWork), []byte(work))
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "12", "01")
	os.MkdirAll(dir, 0o755)
	log := filepath.Join(dir, "rollout-2026-12-01T04-18-20-"+thread+".jsonl")
	os.WriteFile(log, early, 0o600)

	b := New(Options{Options: backend.Options{Env: []string{"CODEX_HOME=" + home}, Dir: work}, Transport: TransportExec})
	m := itemmap.NewCodex(itemmap.SequentialIDs())
	var views []*itemmap.ToolView
	var completedAt, lateAt int
	for i, line := range bytes.Split(bytes.TrimSpace(stream), []byte("\n")) {
		late := b.execLatePatch(m)
		for _, c := range late.Changes {
			views = append(views, c.Tool)
			lateAt = i
		}
		b.execFileChange(m, line)
		r := m.Line(line)
		if r.Session != nil {
			b.thread = r.Session.ID
		}
		for _, c := range r.Changes {
			if c.Item.String("name") == codexPatchName && c.Item.String("status") == "succeeded" {
				views = append(views, c.Tool)
				completedAt = i
				os.WriteFile(log, full, 0o600) // codex logs the event now
			}
		}
	}
	if len(views) != 2 || lateAt != completedAt+1 {
		t.Fatalf("views %+v (completed at line %d, late at %d), want the completion's and the next line's", views, completedAt, lateAt)
	}
	if len(views[0].Diffs) != 4 || len(views[1].Diffs) != 5 || views[1].Diffs[1].OldText == nil || *views[1].Diffs[1].OldText != "bye\n" {
		t.Errorf("diffs from the patch %+v, then from the event %+v", views[0].Diffs, views[1].Diffs)
	}
	if late := b.execLatePatch(m); len(late.Changes) != 0 || b.patchLate != nil {
		t.Errorf("a second late update: %+v", late)
	}
}
