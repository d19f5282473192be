package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// displayCases are turns fed to the terminal display change by change.
var displayCases = []struct {
	name string
	feed func(h *shellHost)
}{
	{"edit", func(h *shellHost) {
		old := "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"
		edit := toolItem("Edit", "a.go")
		view := &itemmap.ToolView{Kind: itemmap.KindEdit, Title: "Edit a.go", Locations: []itemmap.Location{{Path: "a.go"}}}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: edit, Tool: view})
		done := *view
		done.Diffs = []itemmap.Diff{{Path: "a.go", OldText: &old, NewText: strings.Replace(old, "hello", "hello, world", 1)}}
		edit.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: edit, Tool: &done})
		write := toolItem("Write", "notes.txt")
		wv := &itemmap.ToolView{Kind: itemmap.KindEdit, Title: "Write notes.txt", Diffs: []itemmap.Diff{{Path: "notes.txt", NewText: "one\ntwo\n"}}}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: write, Tool: wv})
		write.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: write, Tool: wv})
		denied := toolItem("Edit", "b.go")
		dv := &itemmap.ToolView{Kind: itemmap.KindEdit, Title: "Edit b.go", Diffs: []itemmap.Diff{{Path: "b.go", OldText: &old, NewText: ""}}}
		denied.Set("status", archive.StatusDenied)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: denied, Tool: dv})
	}},
	{"output", func(h *shellHost) {
		a := archive.NewItem(archive.TypeAssistant)
		a.Set("text", "Running the tests")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
		bash := toolItem("Bash", "go test ./...")
		view := func(out string) *itemmap.ToolView {
			return &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`go test ./...`", Output: out}
		}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: bash, Tool: view("")})
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: bash, Tool: view("ok  \tspbridge/a\nok  \tspb")})
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: bash, Tool: view("ok  \tspbridge/a\nok  \tspbridge/b\n")})
		bash.Set("status", archive.StatusSucceeded)
		bash.Set("statusText", "exit 0")
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: bash, Tool: view("ok  \tspbridge/a\nok  \tspbridge/b\nPASS\n")})
		// Output that arrives at the end, over the cap.
		big := toolItem("Bash", "yes")
		big.Set("status", archive.StatusFailed)
		big.Set("statusText", "exit 1")
		long := strings.Repeat(strings.Repeat("y", 4999)+"\n", 4)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: big, Tool: &itemmap.ToolView{Title: "`yes`", Output: long}})
		// A subagent's call under its parent; a tool with no view.
		task := toolItem("Task", "look around")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: task, Tool: &itemmap.ToolView{Title: "Look around"}})
		child := toolItem("Read", "a.go")
		child.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: child, Tool: &itemmap.ToolView{Title: "Read a.go", ParentID: task.ID()}})
		task.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: task})
		plain := toolItem("shell", "ls")
		plain.Set("status", archive.StatusCancelled)
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: plain})
	}},
	{"plan", func(h *shellHost) {
		todo := toolItem("TodoWrite", "")
		plan := []itemmap.PlanEntry{{Content: "Read the code", Status: itemmap.PlanInProgress}, {Content: "Fix the bug", Status: itemmap.PlanPending}}
		v := &itemmap.ToolView{Kind: itemmap.KindThink, Title: "Update the plan"}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: todo, Tool: v, Plan: plan})
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: todo, Tool: v, Plan: plan}) // the same: not shown again
		todo.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: todo, Tool: v})
		next := toolItem("TodoWrite", "")
		plan = []itemmap.PlanEntry{{Content: "Read the code", Status: itemmap.PlanCompleted}, {Content: "Fix the bug", Status: itemmap.PlanInProgress}}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: next, Tool: v, Plan: plan})
	}},
	{"turnend", func(h *shellHost) {
		for _, end := range turnEnds {
			h.turnEnd(end)
		}
	}},
}

// turnEnds: Claude reporting its cost and window, Codex on a priced
// model, a model neither table knows.
var turnEnds = []*itemmap.TurnEnd{
	{Status: itemmap.TurnCompleted, Model: "claude-sonnet-4-5", CostUSD: "0.0123456", ContextWindow: 1_000_000,
		Usage:     archive.Usage{Input: "12", Output: "345", CacheRead: "20480", CacheWrite: "1024"},
		LastRound: archive.Usage{Input: "6", Output: "200", CacheRead: "10240", CacheWrite: "512"}},
	{Status: itemmap.TurnInterrupted, Model: "gpt-5",
		Usage:     archive.Usage{Input: "1000", Output: "100"},
		LastRound: archive.Usage{Input: "1000", Output: "100"}},
	{Status: itemmap.TurnFailed, Model: "local-model", Usage: archive.Usage{Input: "5", Output: "0"}, LastRound: archive.Usage{Input: "5", Output: "0"}},
}

var toolN int

func toolItem(name, summary string) archive.Item {
	toolN++
	it := archive.ItemFromMap(map[string]any{"id": "tool-" + string(rune('a'+toolN)), "type": archive.TypeTool,
		"name": name, "summary": summary, "status": archive.StatusRunning, "statusText": ""})
	return it
}

// TestRunDisplay: the terminal display of diffs, command output, the plan
// and the turn's end line, piped (plain) and with --color always, against
// testdata/display (go test -update rewrites them).
func TestRunDisplay(t *testing.T) {
	for _, tc := range displayCases {
		for _, color := range []bool{false, true} {
			name := tc.name
			if color {
				name += ".color"
			}
			t.Run(name, func(t *testing.T) {
				toolN = 0
				var buf bytes.Buffer
				h := &shellHost{out: &buf, errw: &buf, outStyle: style(color), errStyle: style(color)}
				tc.feed(h)
				golden := filepath.Join("testdata", "display", name+".txt")
				if *update {
					if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got := buf.String(); got != string(want) {
					t.Errorf("display %s:\n%s\nwant:\n%s", name, got, want)
				}
				if !color && strings.Contains(buf.String(), "\x1b") {
					t.Errorf("plain display %s has escape sequences", name)
				}
			})
		}
	}
}

// TestRunTurnEndJSON: `run --json` ends each turn with a turnEnd record.
func TestRunTurnEndJSON(t *testing.T) {
	want := []string{
		`{"contextUsed":10958,"contextWindow":1000000,"cost":{"kind":"reported","usd":0.0123456},"lastRoundUsage":{"cacheRead":10240,"cacheWrite":512,"input":6,"output":200},"model":"claude-sonnet-4-5","status":"completed","type":"turnEnd","usage":{"cacheRead":20480,"cacheWrite":1024,"input":12,"output":345}}`,
		`{"contextUsed":1100,"contextWindow":400000,"cost":{"kind":"estimated","usd":0.00225},"lastRoundUsage":{"input":1000,"output":100},"model":"gpt-5","status":"interrupted","type":"turnEnd","usage":{"input":1000,"output":100}}`,
		`{"cost":{"kind":"unknown"},"lastRoundUsage":{"input":5,"output":0},"model":"local-model","status":"failed","type":"turnEnd","usage":{"input":5,"output":0}}`,
	}
	var buf bytes.Buffer
	h := &shellHost{out: &buf, json: true}
	for _, end := range turnEnds {
		h.turnEnd(end)
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("turnEnd lines:\n%s", buf.String())
	}
	for i := range want {
		if got[i] != want[i] || !json.Valid([]byte(got[i])) {
			t.Errorf("turnEnd line %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestColorOn(t *testing.T) {
	for _, tc := range []struct {
		mode, noColor string
		tty, want     bool
	}{
		{"auto", "", true, true},
		{"auto", "", false, false},
		{"auto", "1", true, false},
		{"auto", "0", true, false}, // any non-empty value
		{"always", "1", false, true},
		{"never", "", true, false},
	} {
		if got := colorOn(tc.mode, tc.noColor, tc.tty); got != tc.want {
			t.Errorf("colorOn(%q, %q, %v) = %v, want %v", tc.mode, tc.noColor, tc.tty, got, tc.want)
		}
	}
}

func TestRunLineDiff(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"a\nb\nc\n", "a\nB\nc\n", " a-b+B c"},
		{"", "x\ny\n", "+x+y"},
		{"a\nb\n", "", "-a-b"},
		{"a\nb\nc\nd\n", "b\nc\nd\ne\n", "-a b c d+e"},
	} {
		var b strings.Builder
		for _, op := range lineDiff(splitLines(tc.old), splitLines(tc.new)) {
			b.WriteString(string(op.kind) + op.text)
		}
		if b.String() != tc.want {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", tc.old, tc.new, b.String(), tc.want)
		}
	}
}
