package claude

import (
	"encoding/json"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/codex"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
	"spbridge/internal/restore"
)

const (
	claudeFixture = "testdata/history/claude/projects/-work-project/ca0632fd-a8b0-4a1c-9271-caa77e5d4c40.jsonl"
	claudeStopped = "testdata/history/claude-interrupt/projects/-work-project/06c063d3-5368-41f8-87b9-778f42872b06.jsonl"
)

// stores are the stores an import tells a file's CLI among: Claude
// Code's and the Codex CLI's, as the table has them.
var stores = []history.Store{History, codex.History}

// dirs names the stores' folders ("" for a store's own).
func dirs(claudeDir, codexHome string) map[string]string {
	return map[string]string{"claude": claudeDir, "codex": codexHome}
}

// TestImportGolden: each recorded session imports to its golden
// conversation.json (historytest.Golden), and the backend told by the
// content is the one that wrote it.
func TestImportGolden(t *testing.T) {
	historytest.Golden(t, stores, []historytest.Case{
		{Name: "claude", Backend: "claude", Path: claudeFixture},
		{Name: "claude-interrupt", Backend: "claude", Path: claudeStopped},
	}, *update)
}

// TestImportClaude: the recorded Claude Code session's turns, tools (a
// failed one failed), subagent call, compaction, images, usage, cost and
// model.
func TestImportClaude(t *testing.T) {
	conv, rep := historytest.Import(t, stores, "claude", claudeFixture)
	got := strings.Join(historytest.Kinds(conv), "\n")
	for _, want := range []string{
		"user Say hello\nthinking The user greets me; I greet back.\nassistant Hello! How can I help?",
		"tool Bash succeeded\ntool Write succeeded\ntool Edit succeeded\ntool Bash failed\ntool Read succeeded",
		"user Ask a helper\ntool Agent succeeded\ntool Bash succeeded", // the subagent's own call under it
		"user /compact\nnotice Claude Code compacted the conversation.\nuser Anything else?\nassistant Nothing else.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("items lack\n%s\nin\n%s", want, got)
		}
	}
	if rep.Turns != 6 || rep.ID != "ca0632fd-a8b0-4a1c-9271-caa77e5d4c40" || rep.Cwd != "/work/project" {
		t.Errorf("report %+v", rep)
	}
	if conv.Provider != "claude-code" || conv.Model != "claude-opus-5-5" || conv.EstimatedCost.Kind != archive.CostReported ||
		conv.EstimatedCost.Dollars == "" || conv.Usage.Input == "" || conv.Usage.Input == "0" {
		t.Errorf("provider %q model %q cost %+v usage %+v", conv.Provider, conv.Model, conv.EstimatedCost, conv.Usage)
	}
	// The history: the user's messages with their images, the calls and
	// results as the CLI recorded them (the failed one an error), the
	// picture the Read returned after its result; the subagent's call is
	// not the conversation's.
	var images, errs, calls int
	for _, m := range conv.History {
		for _, b := range m.Content {
			switch b.Type() {
			case archive.BlockImage:
				images++
				if len(b.ImageData()) == 0 {
					t.Error("image block without its bytes")
				}
			case archive.BlockToolResult:
				if b.Bool("isError") {
					errs++
					if b.String("content") != "Exit code 3\nfailing" {
						t.Errorf("failed result %q", b.String("content"))
					}
				}
			case archive.BlockToolCall:
				calls++
			}
		}
	}
	if images != 2 || errs != 1 || calls != 6 {
		t.Errorf("history: %d images, %d errors, %d calls", images, errs, calls)
	}
	for _, it := range conv.Items {
		if it.Type() == archive.TypeUser && it.String("text") == "What colour is this?" && !it.Bool("hasImage") {
			t.Error("the message with an image is not marked hasImage")
		}
	}
}

// TestImportClaudeInterrupt: the turn Claude Code recorded as interrupted
// while its command ran ends interrupted, the command stopped; the next
// message is a turn of its own.
func TestImportClaudeInterrupt(t *testing.T) {
	conv, rep := historytest.Import(t, stores, "claude", claudeStopped)
	got := strings.Join(historytest.Kinds(conv), "\n")
	want := "user Wait for me\nassistant Waiting a while.\ntool Bash cancelled\nnotice Interrupted.\nuser Never mind\nassistant Stopped, as you asked."
	if got != want || rep.Turns != 2 {
		t.Errorf("items\n%s\nwant\n%s", got, want)
	}
}

// TestResumedSession: a session that resumed another as a fork is listed
// under its own id (its file's, which claude --resume opens) beside the
// first, and imports with the first one's turns before its own.
func TestResumedSession(t *testing.T) {
	opts := history.Options{Stores: stores, Backend: "claude", Dirs: dirs("testdata/history/claude-fork", "")}
	got, err := history.List(opts)
	if err != nil || len(got) != 2 {
		t.Fatalf("%s %v", historytest.Describe(got), err)
	}
	ids := map[string]bool{got[0].ID: true, got[1].ID: true}
	if !ids["3cdf0d34-ea70-404f-8d93-6a4a68f4a2e6"] || !ids["5a725827-2930-4cf8-99a8-6122e69908fb"] {
		t.Errorf("ids %v", ids)
	}
	e, err := history.Find(opts, "3cdf0d34-ea70-404f-8d93-6a4a68f4a2e6")
	if err != nil {
		t.Fatal(err)
	}
	conv, rep, err := history.Import(e, history.ImportOptions{Stores: stores})
	if err != nil {
		t.Fatal(err)
	}
	if k := strings.Join(historytest.Kinds(conv), "\n"); k != "user Remember the number 7\nassistant I will remember 7.\nuser What was the number?\nassistant It was 7." ||
		rep.ID != e.ID || rep.Turns != 2 {
		t.Errorf("%s\n%+v", k, rep)
	}
}

// TestRestoredSessionWords: a session spbridge began after a reopen (its
// first message the restore prefix, then the user's words) is listed and
// imported by the user's words alone, in its item and its history
// message; its lastRoundUsage is its last assistant message's usage.
func TestRestoredSessionWords(t *testing.T) {
	dir := t.TempDir()
	prefix := restore.Prefix([]archive.Item{archive.ItemFromMap(map[string]any{"id": "u", "type": "user", "text": "earlier\n\nwords"})}, nil)
	content, _ := json.Marshal(prefix + "my own\n\nwords")
	historytest.Write(t, dir, "projects/-w/5cb15913-241e-471f-becf-e54204cba130.jsonl",
		`{"type":"user","sessionId":"5cb15913-241e-471f-becf-e54204cba130","cwd":"/w","message":{"role":"user","content":`+string(content)+`}}`+"\n"+
			`{"type":"assistant","sessionId":"5cb15913-241e-471f-becf-e54204cba130","message":{"id":"m1","model":"claude-x","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}}`+"\n")
	es, err := history.List(history.Options{Stores: stores, Backend: "claude", Dirs: dirs(dir, "")})
	if err != nil || len(es) != 1 || es[0].Title != "my own words" {
		t.Fatalf("%s %v", historytest.Describe(es), err)
	}
	conv, _ := historytest.Import(t, stores, "claude", es[0].Path)
	if conv.Items[0].String("text") != "my own\n\nwords" || conv.History[0].Content[0].String("text") != "my own\n\nwords" {
		t.Errorf("item %q history %q", conv.Items[0].String("text"), conv.History[0].Content[0].String("text"))
	}
	// The last request's usage is the last assistant message's, as
	// recorded.
	if u := conv.LastRoundUsage; u.Input != "10" || u.Output != "2" {
		t.Errorf("lastRoundUsage %+v", u)
	}
}
