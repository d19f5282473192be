package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rivo/uniseg"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/clis"
	"spbridge/internal/codex"
	"spbridge/internal/itemmap"
	"spbridge/internal/session"
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
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: edit, Tool: view})
		done := *view
		done.Diffs = []itemmap.Diff{{Path: "a.go", OldText: &old, NewText: strings.Replace(old, "hello", "hello, world", 1)}}
		edit.Set("status", archive.StatusSucceeded)
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: edit, Tool: &done})
		write := toolItem("Write", "notes.txt")
		wv := &itemmap.ToolView{Kind: itemmap.KindEdit, Title: "Write notes.txt", Diffs: []itemmap.Diff{{Path: "notes.txt", NewText: "one\ntwo\n"}}}
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: write, Tool: wv})
		write.Set("status", archive.StatusSucceeded)
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: write, Tool: wv})
		denied := toolItem("Edit", "b.go")
		dv := &itemmap.ToolView{Kind: itemmap.KindEdit, Title: "Edit b.go", Diffs: []itemmap.Diff{{Path: "b.go", OldText: &old, NewText: ""}}}
		denied.Set("status", archive.StatusDenied)
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: denied, Tool: dv})
	}},
	{"output", func(h *shellHost) {
		a := archive.NewItem(archive.TypeAssistant)
		a.Set("text", "Running the tests")
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: a})
		bash := toolItem("Bash", "go test ./...")
		view := func(out string) *itemmap.ToolView {
			return &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`go test ./...`", Output: out}
		}
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: bash, Tool: view("")})
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: bash, Tool: view("ok  \tspbridge/a\nok  \tspb")})
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: bash, Tool: view("ok  \tspbridge/a\nok  \tspbridge/b\n")})
		bash.Set("status", archive.StatusSucceeded)
		bash.Set("statusText", "exit 0")
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: bash, Tool: view("ok  \tspbridge/a\nok  \tspbridge/b\nPASS\n")})
		// Output that arrives at the end, over the cap.
		big := toolItem("Bash", "yes")
		big.Set("status", archive.StatusFailed)
		big.Set("statusText", "exit 1")
		long := strings.Repeat(strings.Repeat("y", 4999)+"\n", 4)
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: big, Tool: &itemmap.ToolView{Title: "`yes`", Output: long}})
		// A subagent's call under its parent; a tool with no view.
		task := toolItem("Task", "look around")
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: task, Tool: &itemmap.ToolView{Title: "Look around"}})
		child := toolItem("Read", "a.go")
		child.Set("status", archive.StatusSucceeded)
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: child, Tool: &itemmap.ToolView{Title: "Read a.go", ParentID: task.ID()}})
		task.Set("status", archive.StatusSucceeded)
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: task})
		plain := toolItem("shell", "ls")
		plain.Set("status", archive.StatusCancelled)
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: plain})
	}},
	{"plan", func(h *shellHost) {
		todo := toolItem("TodoWrite", "")
		plan := []itemmap.PlanEntry{{Content: "Read the code", Status: itemmap.PlanInProgress}, {Content: "Fix the bug", Status: itemmap.PlanPending}}
		v := &itemmap.ToolView{Kind: itemmap.KindThink, Title: "Update the plan"}
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: todo, Tool: v, Plan: plan})
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: todo, Tool: v, Plan: plan}) // the same: not shown again
		todo.Set("status", archive.StatusSucceeded)
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: todo, Tool: v})
		next := toolItem("TodoWrite", "")
		plan = []itemmap.PlanEntry{{Content: "Read the code", Status: itemmap.PlanCompleted}, {Content: "Fix the bug", Status: itemmap.PlanInProgress}}
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: next, Tool: v, Plan: plan})
	}},
	{"approval", func(h *shellHost) {
		answer := answerOnPrompt(h, "y", "y", "n")
		// Codex asks to run a command outside its sandbox, with the
		// model's justification, in the folder run runs in.
		h.dir = "/w"
		decide(h, itemmap.Approval{ToolName: "shell", Cwd: "/w", Escalated: true,
			Input: json.RawMessage(`{"command":"echo outside > /tmp/out/out.txt","cwd":"/w","reason":"Write a file outside the workspace?"}`)})
		// An edit: its diff in the question, not again once written.
		old := "roses are red\n"
		edit := toolItem("Edit", "poem.txt")
		view := &itemmap.ToolView{Kind: itemmap.KindEdit, Title: "Edit poem.txt", Diffs: []itemmap.Diff{{Path: "poem.txt", OldText: &old, NewText: "roses are blue\n"}}}
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: edit, Tool: view})
		ask := archive.NewItem(archive.TypeToolApproval)
		ask.Set("name", "Edit")
		ask.Set("summary", "poem.txt")
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: ask})
		decide(h, itemmap.Approval{ToolName: "Edit", ToolItemID: edit.ID(), Tool: view,
			Input: json.RawMessage(`{"file_path":"poem.txt","old_string":"roses are red\n","new_string":"roses are blue\n"}`)})
		edit.Set("status", archive.StatusSucceeded)
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: edit, Tool: view})
		// An MCP tool Codex asks about, with the server's question.
		decide(h, itemmap.Approval{ToolName: "docs.search",
			Input: json.RawMessage(`{"query":"sandbox","reason":"Allow the docs server to run tool \"search\"?"}`)})
		<-answer
		// Interrupted: said once, by the turn's end line.
		n := archive.NewItem(archive.TypeNotice)
		n.Set("text", interruptedNotice)
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: n})
		h.turnEnd(&itemmap.TurnEnd{Status: itemmap.TurnInterrupted, Model: "gpt-5", Usage: archive.Usage{Input: "10", Output: "2"}, LastRound: archive.Usage{Input: "10", Output: "2"}})
	}},
	{"codex_approvals", func(h *shellHost) {
		// A real codex app-server stream: a command the model asks to
		// run outside the sandbox, allowed.
		feedCodexRecording(h, filepath.Join("..", "..", "testdata", "codex", "app-server", "command_approval_accept.jsonl"))
	}},
	{"codex_patch_approval", func(h *shellHost) {
		// A patch codex asks about: it writes outside the workspace.
		feedCodexRecording(h, filepath.Join("..", "..", "testdata", "codex", "app-server", "file_change_approval.jsonl"))
	}},
	{"codex_exec_refused", func(h *shellHost) {
		// A real codex exec turn: the calls codex refused come from its
		// log of the thread, as denied tools with codex's reasons.
		feedCodexExecRecording(h, filepath.Join("..", "..", "testdata", "codex", "exec", "refused_commands"))
	}},
	{"thinking", func(h *shellHost) { feedThinking(h) }},
	{"thinking.whole", func(h *shellHost) { h.thinking = true; feedThinking(h) }},
	{"status", func(h *shellHost) {
		// A long command, over several lines, still running: its status
		// line stays on one row however often it is drawn.
		cmd := "for f in $(git ls-files '*.go'); do\n\tgofmt -l \"$f\" && go vet \"./$(dirname \"$f\")\"\ndone"
		run := toolItem("Bash", cmd)
		v := &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`" + cmd + "`"}
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: run, Tool: v})
		for s := range 30 {
			h.drawStatus(at(s))
		}
		jp := toolItem("Bash", "日本語")
		jv := &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`日本語のファイル名をすべて確認してから長いコマンドを実行する`"}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: jp, Tool: jv})
		h.drawStatus(at(31))
	}},
	{"unasked", func(h *shellHost) {
		// A command that runs without a question, right after the
		// model's text: its status line at once (with the tool's name and
		// how long it has run), its [running] line once it ran a second.
		a := archive.NewItem(archive.TypeAssistant)
		a.Set("text", "I will wait for the build.")
		change(h, itemmap.Change{Op: itemmap.OpAdd, Item: a})
		run := toolItem("Bash", "sleep 20")
		v := &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`sleep 20`", Terminal: true}
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: run, Tool: v})
		tick(h, 0)
		tick(h, 1)
		tick(h, 12)
		run.Set("status", archive.StatusSucceeded)
		run.Set("statusText", "exit 0")
		change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: run, Tool: v})
		h.turnEnd(turnEnds[0])
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

// feedCodexRecording maps what the codex app-server sent in a recording
// (testdata/codex/app-server) and shows it as run does, each permission
// request answered y on h's terminal.
// feedCodexExecRecording feeds a recorded codex exec turn (name.stdout.jsonl)
// through the exec mapper, with codex's log of the thread
// (name.rollout.jsonl) read first, as when codex logs each step before
// codex exec prints it.
func feedCodexExecRecording(h *shellHost, name string) {
	stream, err := os.ReadFile(name + ".stdout.jsonl")
	if err != nil {
		panic(err)
	}
	log, err := os.ReadFile(name + ".rollout.jsonl")
	if err != nil {
		panic(err)
	}
	m := itemmap.NewCodex(itemmap.SequentialIDs())
	feed := func(r itemmap.Result) {
		for _, c := range r.Changes {
			change(h, c)
		}
		if r.End != nil {
			h.turnEnd(r.End)
		}
	}
	for line := range bytes.Lines(log) {
		feed(m.ExecLog(bytes.TrimSuffix(line, []byte("\n"))))
	}
	for line := range bytes.Lines(stream) {
		feed(m.Line(bytes.TrimSuffix(line, []byte("\n"))))
	}
}

func feedCodexRecording(h *shellHost, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	answers := make([]string, bytes.Count(data, []byte("requestApproval")))
	for i := range answers {
		answers[i] = "y"
	}
	answered := answerOnPrompt(h, answers...)
	defer func() { <-answered }()
	h.dir = "/home/dev/capture/codex-work" // the recording's working folder
	m := itemmap.NewCodexApp(itemmap.SequentialIDs())
	for line := range bytes.Lines(data) {
		var rec struct {
			Dir string
			Msg json.RawMessage
		}
		if json.Unmarshal(line, &rec) != nil || rec.Dir != "out" {
			continue
		}
		r := m.Line(rec.Msg)
		for _, c := range r.Changes {
			change(h, c)
		}
		for _, a := range r.Approvals {
			decide(h, a)
			m.Answered(a.RequestID, true)
		}
		if r.End != nil {
			h.turnEnd(r.End)
		}
	}
}

// feedThinking streams a thinking item, then the reply.
func feedThinking(h *shellHost) {
	th := archive.NewItem(archive.TypeThinking)
	th.Set("text", "")
	change(h, itemmap.Change{Op: itemmap.OpAdd, Item: th})
	th.Set("text", "The user wants the title larger.")
	change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: th, Delta: "The user wants the title larger."})
	th.Set("text", "The user wants the title larger.\nThe title is in poster.svg.")
	change(h, itemmap.Change{Op: itemmap.OpUpdate, Item: th, Delta: "\nThe title is in poster.svg."})
	a := archive.NewItem(archive.TypeAssistant)
	a.Set("text", "I made the title larger.")
	change(h, itemmap.Change{Op: itemmap.OpAdd, Item: a})
}

// change shows c, then draws the status line as the ticker would (on a
// terminal: when h has a width).
// decide answers a permission request as a session does for run: no
// grant yet, so h is asked.
func decide(h *shellHost, a itemmap.Approval) backend.Decision {
	return new(session.Grants).Decide(context.Background(), a, []string{h.dir}, h.vocab, h)
}

func change(h *shellHost, c itemmap.Change) {
	h.Change(c)
	if h.width == nil {
		return // the coloured variant: the bytes without a status line
	}
	h.mu.Lock()
	h.drawStatus(at(20))
	h.mu.Unlock()
}

// testEpoch is when the display cases' turns begin and their calls start
// (their shellHost's clock).
var testEpoch = time.Date(2026, 12, 3, 19, 0, 0, 0, time.UTC)

// at is secs seconds after testEpoch.
func at(secs int) time.Time { return testEpoch.Add(time.Duration(secs) * time.Second) }

// tick does what the turn's ticker does secs seconds after testEpoch: the
// [running] lines that are due, and the status line on a terminal.
func tick(h *shellHost, secs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.showRunning(at(secs))
	if h.width != nil {
		h.drawStatus(at(secs))
	}
}

// answerOnPrompt gives h a terminal on which answers are typed, each
// once the question before it was written, and echoed as a terminal
// does; the channel is closed after the last.
func answerOnPrompt(h *shellHost, answers ...string) <-chan struct{} {
	pr, pw := io.Pipe()
	h.ask = bufio.NewReader(pr)
	term := h.errw.(*termBuffer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, a := range answers {
			<-term.asked
			term.Buffer.Write([]byte(a + "\n")) // the terminal's echo
			pw.Write([]byte(a + "\n"))
		}
	}()
	return done
}

// termBuffer is what the display wrote, telling asked each time a
// question ends.
type termBuffer struct {
	bytes.Buffer
	asked chan struct{}
}

func (b *termBuffer) Write(p []byte) (int, error) {
	n, err := b.Buffer.Write(p)
	if bytes.HasSuffix(p, []byte("[y/a/N] ")) || bytes.HasSuffix(p, []byte("[y/N] ")) {
		b.asked <- struct{}{}
	}
	return n, err
}

var toolN int

func toolItem(name, summary string) archive.Item {
	toolN++
	it := archive.ItemFromMap(map[string]any{"id": "tool-" + string(rune('a'+toolN)), "type": archive.TypeTool,
		"name": name, "summary": summary, "status": archive.StatusRunning, "statusText": ""})
	return it
}

// everyTool is the tool vocabulary of every CLI: the display cases ask
// about the tools of more than one.
func everyTool() backend.Tools {
	var all backend.Tools
	for _, c := range clis.All {
		all.Commands = append(all.Commands, c.Tools.Commands...)
		all.Edits = append(all.Edits, c.Tools.Edits...)
		all.Reads = append(all.Reads, c.Tools.Reads...)
		all.Patches = append(all.Patches, c.Tools.Patches...)
		all.AskedOutside = append(all.AskedOutside, c.Tools.AskedOutside...)
	}
	return all
}

// TestRunDisplay: the terminal display of diffs, command output, the
// plan, permission questions, thinking, the status line and the turn's
// end line, against testdata/display (go test -update rewrites them): as
// a terminal 40 and 110 columns wide shows it at the end (NAME.40.txt,
// NAME.110.txt; a status line is drawn after each change and cleared by
// the next), and the bytes written with --color always (NAME.color.txt).
// No row but the last (the status line of a turn still running) may be a
// status line or what is left of one.
func TestRunDisplay(t *testing.T) {
	stale := regexp.MustCompile(`^… |\(\d+s\)$`)
	for _, tc := range displayCases {
		for _, variant := range []string{"40", "110", "color"} {
			name := tc.name + "." + variant
			t.Run(name, func(t *testing.T) {
				toolN = 0
				buf := &termBuffer{asked: make(chan struct{}, 16)}
				color := variant == "color"
				h := &shellHost{out: buf, errw: buf, outStyle: style(color), errStyle: style(color), vocab: everyTool(),
					now: func() time.Time { return testEpoch }, turnStart: testEpoch}
				width, _ := strconv.Atoi(variant)
				if !color {
					h.width = func() int { return width }
				}
				tc.feed(h)
				got := buf.String()
				if !color {
					rows := screen(got, width)
					for i, row := range rows {
						if uniseg.StringWidth(row) > width {
							t.Errorf("row %d is %d columns: %q", i, uniseg.StringWidth(row), row)
						}
						if i < len(rows)-1 && stale.MatchString(row) {
							t.Errorf("row %d is left of a status line: %q", i, row)
						}
					}
					got = strings.Join(rows, "\n") + "\n"
				}
				golden := filepath.Join("testdata", "display", name+".txt")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("display %s:\n%s\nwant:\n%s", name, got, want)
				}
				if !color && strings.Contains(buf.String(), "\x1b") {
					t.Errorf("plain display %s has escape sequences", name)
				}
			})
		}
	}
}

// screen is what a terminal width columns wide shows after text: its
// rows, without trailing blanks. It wraps a row when a character comes
// past the last column (as xterm does), moves back to the row's start at
// \r, to the next row's at \n, tabs to the next multiple of 8, erases the
// rest of the row at ESC [ K and ignores the other escape sequences.
func screen(text string, width int) []string {
	var rows [][]string // cells: one grapheme each, "" behind a wide one
	r, c := 0, 0
	cell := func() {
		for len(rows) <= r {
			rows = append(rows, nil)
		}
		for len(rows[r]) < width {
			rows[r] = append(rows[r], " ")
		}
	}
	put := func(g string, w int) {
		if c+w > width {
			r, c = r+1, 0
		}
		cell()
		rows[r][c] = g
		for i := 1; i < w; i++ {
			rows[r][c+i] = ""
		}
		c += w
	}
	for len(text) > 0 {
		switch text[0] {
		case '\r':
			c = 0
			text = text[1:]
			continue
		case '\n':
			r, c = r+1, 0
			cell()
			text = text[1:]
			continue
		case '\t':
			for n := 8 - c%8; n > 0 && c < width; n-- {
				put(" ", 1)
			}
			text = text[1:]
			continue
		case 0x1b:
			end := strings.IndexFunc(text[2:], func(r rune) bool { return r >= 0x40 && r <= 0x7e })
			if end < 0 {
				return nil
			}
			if text[2+end] == 'K' {
				cell()
				for i := min(c, width); i < width; i++ {
					rows[r][i] = " "
				}
			}
			text = text[3+end:]
			continue
		}
		g, rest, w, _ := uniseg.FirstGraphemeClusterInString(text, -1)
		put(g, max(w, 1))
		text = rest
	}
	out := make([]string, len(rows))
	for i, row := range rows {
		out[i] = strings.TrimRight(strings.Join(row, ""), " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// TestRunStatusLine: a status line fits the width it is given, on one
// row, a command's newlines and tabs as spaces, cut with "…".
func TestRunStatusLine(t *testing.T) {
	for _, tc := range []struct {
		status string
		width  int
		want   string
	}{
		{"thinking", 40, "… thinking (3s)"},
		{"running `go test ./...`", 0, "… running `go test ./...` (3s)"},
		{"running `go test ./... && go vet ./... && staticcheck ./...`", 40, "… running `go test ./... && go ve… (3s)"},
		{"running `a\n\tb`", 40, "… running `a b` (3s)"},
		{"running `日本語日本語日本語日本語日本語`", 20, "… running `日… (3s)"},
		{"running `go test ./...`", 13, "… runn… (3s)"},
		{"running `go test ./...`", 9, "… runni…"}, // no room for the counter
		{"x", 3, "……"},
	} {
		got := statusLine(tc.status, 3, tc.width)
		if got != tc.want {
			t.Errorf("statusLine(%q, %d) = %q, want %q", tc.status, tc.width, got, tc.want)
		}
		if tc.width > 0 && uniseg.StringWidth(got) >= tc.width {
			t.Errorf("statusLine(%q, %d) is %d columns", tc.status, tc.width, uniseg.StringWidth(got))
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

// TestRunGrantFolder: run's "a" on a command allows it again in its
// folder only (not in another, nor outside the sandbox), and the question
// says the folder, relative to the one run runs in.
func TestRunGrantFolder(t *testing.T) {
	buf := &termBuffer{asked: make(chan struct{}, 16)}
	h := &shellHost{out: buf, errw: buf, dir: "/w", vocab: codex.Plugin.Tools}
	answered := answerOnPrompt(h, "a", "n", "n")
	shell := func(dir string, escalated bool) itemmap.Approval {
		in, _ := json.Marshal(map[string]string{"command": "rm -f *", "cwd": dir})
		return itemmap.Approval{ToolName: "shell", Input: in, Cwd: dir, Escalated: escalated}
	}
	var got []bool
	var grants session.Grants // the session's
	for _, a := range []itemmap.Approval{shell("/w/build", false), shell("/w/build", false), shell("/elsewhere", false), shell("/w/build", true)} {
		got = append(got, grants.Decide(context.Background(), a, []string{h.dir}, h.vocab, h).Allow)
	}
	<-answered
	out := buf.String()
	if want := []bool{true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("allowed %v, want %v", got, want)
	}
	if n := strings.Count(out, "[y/a/N]"); n != 3 {
		t.Errorf("%d questions, want 3 (the second rm -f * in build allowed by a): %q", n, out)
	}
	for _, want := range []string{"a: always, `rm -f *` in build in this run", "a: always, `rm -f *` in /elsewhere in this run",
		"a: always, `rm -f *` in build, also outside the sandbox in this run"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in %q", want, out)
		}
	}
}
