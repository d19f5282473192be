package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rivo/uniseg"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// runningWidths are the terminal widths the running-command tests try: the
// narrowest run supports, a common one, and either side of a turn-end
// line 101 columns long.
var runningWidths = []int{40, 80, 100, 101}

// TestRunUnaskedCommand: a command that runs without a question right
// after the model's text (the line of text still open) shows at once on
// the status line, with the tool's name and how long it has run, at every
// width down to 40 columns with the counter kept; after a second its
// [running] line is printed; the turn's end line fits the width.
func TestRunUnaskedCommand(t *testing.T) {
	for _, width := range runningWidths {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			buf := &termBuffer{asked: make(chan struct{}, 16)}
			h := &shellHost{out: buf, errw: buf, width: func() int { return width },
				now: func() time.Time { return testEpoch }, turnStart: testEpoch}
			a := archive.NewItem(archive.TypeAssistant)
			a.Set("text", "I will wait for the build to finish before I go on.")
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: a})
			cmd := "sleep 20 && make -C build all install DESTDIR=/tmp/staging"
			run := toolItem("Bash", cmd)
			v := &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`" + cmd + "`", Terminal: true}
			h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: run, Tool: v})
			for _, secs := range []int{0, 1, 12} {
				tick(h, secs)
				rows := screen(buf.String(), width)
				last := rows[len(rows)-1]
				if !strings.HasPrefix(last, "… running Bash `sleep 20") || !strings.HasSuffix(last, fmt.Sprintf(" (%ds)", secs)) || uniseg.StringWidth(last) >= width {
					t.Errorf("after %ds the last row is %q, want the command's status line with (%ds), under %d columns; screen:\n%s", secs, last, secs, width, strings.Join(rows, "\n"))
				}
				if secs == 0 && strings.Contains(buf.String(), "[running]") {
					t.Errorf("a [running] line at once: %q", buf.String())
				}
				if secs > 0 && !strings.Contains(strings.Join(rows, ""), "tool `"+cmd+"` [running]") {
					t.Errorf("after %ds no [running] line; screen:\n%s", secs, strings.Join(rows, "\n"))
				}
			}
			run.Set("status", archive.StatusSucceeded)
			run.Set("statusText", "exit 0")
			h.Change(itemmap.Change{Op: itemmap.OpUpdate, Item: run, Tool: v})
			h.turnEnd(turnEnds[0])
			rows := screen(buf.String(), width)
			checkRows(t, rows, width)
			if got := strings.Count(buf.String(), "[running]"); got != 1 {
				t.Errorf("%d [running] lines, want 1: %q", got, buf.String())
			}
		})
	}
}

// checkRows fails t when a row of the final screen is wider than the
// terminal or is what is left of a status line.
func checkRows(t *testing.T, rows []string, width int) {
	t.Helper()
	stale := regexp.MustCompile(`^… |\(\d+s\)$`)
	for i, row := range rows {
		if uniseg.StringWidth(row) > width {
			t.Errorf("row %d is %d columns: %q", i, uniseg.StringWidth(row), row)
		}
		if stale.MatchString(row) {
			t.Errorf("row %d is left of a status line: %q\nscreen:\n%s", i, row, strings.Join(rows, "\n"))
		}
	}
}

// TestRunTurnEndFits: the turn's end line is as long as the terminal is
// wide, or wrapped at its parts to fit: 101 columns on one row at 101, on
// two rows at 100, each row at most the width, at every width down to 40.
func TestRunTurnEndFits(t *testing.T) {
	end := &itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "claude-sonnet-4-5", CostUSD: "0.0123456",
		Usage: archive.Usage{Input: "12", Output: "345", CacheRead: "480", CacheWrite: "1024"}}
	line := formatTurnEnd(end, false, 0)
	if w := uniseg.StringWidth(strings.TrimSuffix(line, "\n")); w != 101 {
		t.Fatalf("the test's turn-end line is %d columns, want 101: %q", w, line)
	}
	for width := 40; width <= 120; width++ {
		got := formatTurnEnd(end, false, width)
		rows := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		for _, r := range rows {
			if uniseg.StringWidth(r) > width {
				t.Errorf("width %d: a row of %d columns: %q", width, uniseg.StringWidth(r), r)
			}
		}
		if screened := screen(got, width); len(screened) != len(rows) {
			t.Errorf("width %d: %d rows on the screen, %d written", width, len(screened), len(rows))
		}
		switch {
		case width >= 101 && len(rows) != 1:
			t.Errorf("width %d: %d rows, want 1: %q", width, len(rows), got)
		case width < 101 && len(rows) < 2:
			t.Errorf("width %d: one row, want it wrapped: %q", width, got)
		}
		// The same words in the same order.
		if words(got) != words(line) {
			t.Errorf("width %d: %q is not %q wrapped", width, got, line)
		}
	}
	if got, want := formatTurnEnd(end, false, 100), "── turn completed · tokens 12 in / 345 out (cache 480 read, 1,024 written)\n   cost $0.01235 (reported)\n"; got != want {
		t.Errorf("at 100 columns:\n%s\nwant:\n%s", got, want)
	}
}

// words is s's words, but the separators "·", each after one space.
func words(s string) string {
	var w []string
	for _, f := range strings.Fields(s) {
		if f != "·" {
			w = append(w, f)
		}
	}
	return strings.Join(w, " ")
}

// TestRunUnaskedRecorded: the commands of real CLI streams that run
// without a question (Claude Code allowing Bash by --allowedTools, two at
// once after its text; Codex running a command in its sandbox after its
// text) show on the status line with the tool's name and their time from
// the moment they start, and get their [running] line after a second, at
// every width down to 40 columns.
func TestRunUnaskedRecorded(t *testing.T) {
	for _, rec := range []struct {
		name, path string
		want       []string // the status lines' beginnings, in order
	}{
		{"claude", filepath.Join("..", "..", "testdata", "claude", "parallel_tools.stdout.jsonl"),
			[]string{"… running Bash `echo one`", "… running Bash `echo two` and 1 more"}},
		{"codex", filepath.Join("..", "..", "testdata", "codex", "app-server", "command_approval_accept.jsonl"),
			[]string{"… running shell `echo inside > in.txt && cat in.txt`", "… running shell `echo outside > /home/dev/capture/outside/out.txt`"}},
	} {
		for _, width := range runningWidths {
			t.Run(fmt.Sprint(rec.name, "/", width), func(t *testing.T) {
				buf := &termBuffer{asked: make(chan struct{}, 16)}
				h := &shellHost{out: buf, errw: buf, width: func() int { return width }, vocab: everyTool(),
					now: func() time.Time { return testEpoch }, turnStart: testEpoch}
				var seen []string
				checked := map[*toolShown]bool{}
				check := func() {
					h.mu.Lock()
					n := len(h.running)
					var newest *toolShown
					if n > 0 {
						newest = h.running[n-1]
					}
					h.mu.Unlock()
					if newest == nil || !newest.ready || checked[newest] {
						return
					}
					checked[newest] = true
					for _, secs := range []int{0, 3} {
						tick(h, secs)
						rows := screen(buf.String(), width)
						last := rows[len(rows)-1]
						if !strings.HasSuffix(last, fmt.Sprintf(" (%ds)", secs)) || uniseg.StringWidth(last) >= width {
							t.Errorf("the status line %q has no (%ds) or is not under %d columns", last, secs, width)
						}
						if secs == 0 {
							seen = append(seen, last)
						}
					}
					if !strings.Contains(buf.String(), "[running]") {
						t.Errorf("no [running] line after 3s: %q", buf.String())
					}
				}
				switch rec.name {
				case "claude":
					feedClaudeLines(t, h, rec.path, check)
				default:
					feedCodexLines(t, h, rec.path, check)
				}
				if len(seen) != len(rec.want) {
					t.Fatalf("status lines %q, want %d", seen, len(rec.want))
				}
				for i, s := range seen {
					// Cut at the width, so compare what is left of it.
					head := strings.TrimSuffix(strings.TrimSuffix(s, " (0s)"), "…")
					if !strings.HasPrefix(rec.want[i], head) || len(head) < len("… running ") {
						t.Errorf("status line %q, want the beginning of %q", s, rec.want[i])
					}
					if width >= 80 && !strings.HasPrefix(s, rec.want[i]) {
						t.Errorf("status line %q, want %q", s, rec.want[i])
					}
				}
				checkRows(t, screen(buf.String(), width), width)
			})
		}
	}
}

// feedClaudeLines maps a recorded Claude Code stream and shows it as run
// does, calling after once each line's changes are shown.
func feedClaudeLines(t *testing.T, h *shellHost, path string, after func()) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := itemmap.NewClaude(itemmap.SequentialIDs())
	for line := range bytes.Lines(data) {
		r := m.Line(bytes.TrimSuffix(line, []byte("\n")))
		for _, c := range r.Changes {
			h.Change(c)
		}
		after()
		if r.End != nil {
			h.turnEnd(r.End)
		}
	}
}

// feedCodexLines is feedCodexRecording calling after once each line's
// changes are shown.
func feedCodexLines(t *testing.T, h *shellHost, path string, after func()) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	answers := make([]string, bytes.Count(data, []byte("requestApproval")))
	for i := range answers {
		answers[i] = "y"
	}
	answered := answerOnPrompt(h, answers...)
	defer func() { <-answered }()
	h.dir = "/home/dev/capture/codex-work"
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
			h.Change(c)
		}
		if len(r.Approvals) == 0 {
			after()
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
