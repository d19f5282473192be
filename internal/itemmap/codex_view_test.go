package itemmap

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// appChanges maps a recorded app-server session and returns every change.
func appChanges(t *testing.T, name string) ([]Change, []Approval) {
	t.Helper()
	stream, _ := appServerSession(t, "../../testdata/codex/app-server/"+name+".jsonl")
	m := NewCodexApp(SequentialIDs())
	var changes []Change
	var approvals []Approval
	for line := range bytes.SplitSeq(stream, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		r := m.Line(line)
		checkResult(t, r)
		changes = append(changes, r.Changes...)
		approvals = append(approvals, r.Approvals...)
	}
	return changes, approvals
}

func ptr(s string) *string { return &s }

func TestCodexAppFileChangeView(t *testing.T) {
	changes, _ := appChanges(t, "file_change_two_hunks")
	var last *ToolView
	for _, c := range changes {
		if c.Item.String("name") == codexPatchTool && c.Tool != nil {
			last = c.Tool
		}
	}
	const p = "/home/dev/capture/codex-work/numbers.txt"
	want := &ToolView{Kind: KindEdit, Title: "Edit numbers.txt",
		Locations: []Location{{Path: p, Line: 2}},
		Diffs: []Diff{
			{Path: p, OldText: ptr("one\ntwo\nthree"), NewText: "one\nTWO\nthree"},
			{Path: p, OldText: ptr("ten\neleven\ntwelve"), NewText: "ten\nELEVEN\ntwelve"},
		}}
	if !reflect.DeepEqual(last, want) {
		t.Errorf("view = %+v, want %+v", last, want)
	}
}

func TestCodexChangeViewKinds(t *testing.T) {
	m := NewCodex(SequentialIDs())
	m.cwd = "/w"
	tests := []struct {
		changes string
		kind    string
		title   string
		diffs   []Diff
		locs    []Location
	}{
		{`[{"path":"/w/a","kind":{"type":"add"},"diff":"hi\n"}]`, KindEdit, "Edit a",
			[]Diff{{Path: "/w/a", NewText: "hi\n"}}, []Location{{Path: "/w/a", Line: 1}}},
		{`[{"path":"/w/a","kind":{"type":"delete"},"diff":"old\n"}]`, KindDelete, "Delete a",
			[]Diff{{Path: "/w/a", OldText: ptr("old\n")}}, []Location{{Path: "/w/a"}}},
		{`[{"path":"/w/a","kind":{"type":"update","move_path":"/w/b"},"diff":"@@ -3 +3 @@\n-x\n+y\n"}]`, KindMove, "Move a → b",
			[]Diff{{Path: "/w/b", OldText: ptr("x"), NewText: "y"}}, []Location{{Path: "/w/b", Line: 3}}},
		{`[{"path":"/w/a","kind":"update"},{"path":"/w/b","kind":"delete"}]`, KindEdit, "Edit a, b",
			nil, []Location{{Path: "/w/a"}, {Path: "/w/b"}}},
	}
	for _, tt := range tests {
		v := m.changeView(gjson.Parse(tt.changes))
		if v.Kind != tt.kind || v.Title != tt.title || !reflect.DeepEqual(v.Diffs, tt.diffs) || !reflect.DeepEqual(v.Locations, tt.locs) {
			t.Errorf("changeView(%s) = %+v, want kind %s, title %q, diffs %+v, locations %+v", tt.changes, v, tt.kind, tt.title, tt.diffs, tt.locs)
		}
	}
}

func TestCodexAppOutputDeltas(t *testing.T) {
	changes, _ := appChanges(t, "command_output_deltas")
	var deltas []string
	var views []*ToolView
	for _, c := range changes {
		if c.Item.String("name") != codexShellTool || c.Tool == nil {
			continue
		}
		views = append(views, c.Tool)
		if c.OutputDelta != "" {
			deltas = append(deltas, c.OutputDelta)
			if !strings.HasSuffix(c.Tool.Output, c.OutputDelta) {
				t.Errorf("output %q does not end with the delta %q", c.Tool.Output, c.OutputDelta)
			}
		}
	}
	if want := []string{"got tick 1\n", "got tick 2\n", "got tick 3\n", "end\n"}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	last := views[len(views)-1]
	if last.Output != "start\ngot tick 1\ngot tick 2\ngot tick 3\nend\n" || last.ExitCode == nil || *last.ExitCode != 0 || !last.Terminal || last.Kind != KindExecute {
		t.Errorf("last view = %+v", last)
	}
	if want := "`echo start; while read -r line; do echo \"got $line\"; done < ticks.fifo; echo end`"; last.Title != want {
		t.Errorf("title = %q, want %q", last.Title, want)
	}
}

func TestCodexAppPlan(t *testing.T) {
	changes, _ := appChanges(t, "plan_updates")
	var plans [][]PlanEntry
	for _, c := range changes {
		if c.Plan != nil {
			plans = append(plans, c.Plan)
		}
	}
	want := [][]PlanEntry{
		{{Content: "Read the code", Status: PlanInProgress}, {Content: "Write the fix", Status: PlanPending}, {Content: "Run the tests", Status: PlanPending}},
		{{Content: "Read the code", Status: PlanCompleted}, {Content: "Write the fix", Status: PlanCompleted}, {Content: "Run the tests", Status: PlanInProgress}},
	}
	if !reflect.DeepEqual(plans, want) {
		t.Errorf("plans = %+v, want %+v", plans, want)
	}
}

func TestCodexExecTodoPlan(t *testing.T) {
	m := NewCodex(SequentialIDs())
	r := m.Line([]byte(`{"type":"item.started","item":{"id":"item_1","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`))
	if len(r.Changes) != 1 {
		t.Fatalf("%d changes, want 1", len(r.Changes))
	}
	want := []PlanEntry{{Content: "a", Status: PlanCompleted}, {Content: "b", Status: PlanPending}}
	if !reflect.DeepEqual(r.Changes[0].Plan, want) {
		t.Errorf("plan = %+v, want %+v", r.Changes[0].Plan, want)
	}
}

func TestCodexAppImageView(t *testing.T) {
	changes, _ := appChanges(t, "view_image")
	var last *ToolView
	for _, c := range changes {
		if c.Tool != nil {
			last = c.Tool
		}
	}
	const p = "/home/dev/capture/codex-work/red.png"
	want := &ToolView{Kind: KindRead, Title: "View red.png", Locations: []Location{{Path: p}}}
	if !reflect.DeepEqual(last, want) {
		t.Errorf("view = %+v, want %+v", last, want)
	}
}

func TestCodexAppApprovalView(t *testing.T) {
	_, approvals := appChanges(t, "file_change_approval")
	if len(approvals) != 1 || approvals[0].Tool == nil {
		t.Fatalf("approvals = %+v, want one with a view", approvals)
	}
	want := []Diff{{Path: "/home/dev/capture/outside/patched.txt", NewText: "hello\n"}}
	if got := approvals[0].Tool.Diffs; !reflect.DeepEqual(got, want) {
		t.Errorf("approval diffs = %+v, want %+v", got, want)
	}
}

// TestCodexAppCommandActions: a command codex parsed as a read, a listing
// or a search is titled and kinded by it; one it did not recognize keeps
// its command as its title.
func TestCodexAppCommandActions(t *testing.T) {
	changes, _ := appChanges(t, "command_actions")
	views := map[string]*ToolView{} // by summary, the last view
	for _, c := range changes {
		if c.Item.String("name") == codexShellTool && c.Tool != nil {
			views[c.Item.String("summary")] = c.Tool
		}
	}
	for _, tc := range []struct{ cmd, kind, title, loc string }{
		{"cat notes.txt", KindRead, "Read notes.txt", "/home/dev/capture/codex-work/notes.txt"},
		{"ls src", KindSearch, "List src", ""},
		{"rg -n TODO src", KindSearch, `Search "TODO" in src`, ""},
	} {
		v := views[tc.cmd]
		if v == nil {
			t.Errorf("no view of %q", tc.cmd)
			continue
		}
		var loc string
		if len(v.Locations) > 0 {
			loc = v.Locations[0].Path
		}
		if v.Kind != tc.kind || v.Title != tc.title || loc != tc.loc || !v.Terminal {
			t.Errorf("%q: kind %q title %q location %q, want %q %q %q", tc.cmd, v.Kind, v.Title, loc, tc.kind, tc.title, tc.loc)
		}
	}
	changes, _ = appChanges(t, "command_output_deltas")
	for _, c := range changes {
		if c.Tool != nil && c.Item.String("name") == codexShellTool && (c.Tool.Kind != KindExecute || !strings.HasPrefix(c.Tool.Title, "`")) {
			t.Errorf("an unknown action's view: %q %q", c.Tool.Kind, c.Tool.Title)
		}
	}
}

// TestCodexFormQuestions: an MCP form's fields of choices and yes or no
// are questions; one that needs typed input is left out unless the form
// requires it; the answers give the form's content, or decline it.
func TestCodexFormQuestions(t *testing.T) {
	form := gjson.Parse(`{"mode":"form","message":"Pick","requestedSchema":{"type":"object","required":["color"],"properties":{
		"color":{"type":"string","title":"Color","oneOf":[{"const":"r","title":"Red"},{"const":"b","title":"Blue"}]},
		"note":{"type":"string"},"n":{"type":"number","title":"N"},"ok":{"type":"boolean"}}}}`)
	qs, ok := formQuestions(form)
	if !ok || len(qs) != 2 || qs[0].text != "Color" || qs[1].text != "ok" || !qs[0].required || qs[1].required {
		t.Fatalf("formQuestions = %+v, %v", qs, ok)
	}
	for _, bad := range []string{
		`{"mode":"form","requestedSchema":{"required":["note"],"properties":{"note":{"type":"string"}}}}`,
		`{"mode":"url","url":"https://example.com"}`,
		`{"mode":"form","requestedSchema":{"properties":{}}}`,
	} {
		if _, ok := formQuestions(gjson.Parse(bad)); ok {
			t.Errorf("formQuestions(%s) ok", bad)
		}
	}
	a := NewCodexApp(SequentialIDs())
	for _, tc := range []struct {
		answers map[string]string
		want    string
	}{
		{map[string]string{"Color": "Blue", "ok": "No"}, `{"action":"accept","content":{"color":"b","ok":false}}`},
		{map[string]string{"ok": "Yes"}, `{"action":"decline","content":null}`},
		{nil, `{"action":"decline","content":null}`},
	} {
		a.ask("7", "", "elicitation", qs)
		res, _, ok := a.AnswerQuestions("7", tc.answers, nil)
		got, _ := json.Marshal(res)
		if !ok || string(got) != tc.want {
			t.Errorf("AnswerQuestions(%v) = %s, %v, want %s", tc.answers, got, ok, tc.want)
		}
	}
	if _, _, ok := a.AnswerQuestions("7", nil, nil); ok {
		t.Error("a request answered twice")
	}
}

// TestCodexUserInputNotes: a requestUserInput question says whether it
// takes the user's own words (isOther, in the Approval's input); an answer
// with a note is codex's [label, "user_note: …"], the questions item
// keeping the label.
func TestCodexUserInputNotes(t *testing.T) {
	a := NewCodexApp(SequentialIDs())
	p := gjson.Parse(`{"questions":[{"id":"c","question":"Color?","isOther":true,"options":[{"label":"Red"},{"label":"Blue"}]},` +
		`{"id":"s","question":"Size?","options":[{"label":"S"}]}]}`)
	r := a.askUser("9", "call", p)
	if len(r.Approvals) != 1 {
		t.Fatalf("approvals %v", r.Approvals)
	}
	in := gjson.GetBytes(r.Approvals[0].Input, "questions")
	if in.Get("0.isOther").Raw != "true" || in.Get("1.isOther").Raw != "false" {
		t.Errorf("input %s: want isOther true, then false", r.Approvals[0].Input)
	}
	res, ch, ok := a.AnswerQuestions("9", map[string]string{"Color?": "Blue", "Size?": "S"}, map[string]string{"Color?": "navy"})
	got, _ := json.Marshal(res)
	if want := `{"answers":{"c":{"answers":["Blue","user_note: navy"]},"s":{"answers":["S"]}}}`; !ok || string(got) != want {
		t.Errorf("AnswerQuestions = %s, %v, want %s", got, ok, want)
	}
	if len(ch.Changes) != 1 || gjson.Get(mustJSON(ch.Changes[0].Item.Get("questions")), "0.answer").String() != "Blue" {
		t.Errorf("the questions item: %+v", ch.Changes)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
