package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/money"
	"spbridge/internal/prices"
)

// How `spbridge run` shows what the editor gets: tool titles, diffs,
// command output, the plan and each turn's usage. The functions here only
// format; shellHost (run.go) decides when and where they are written.

// Display limits, as the editor's: a command's output is cut after
// maxShownOutput bytes with "… N bytes more", a diff after maxDiffLines
// lines with "… N lines more".
const (
	maxShownOutput = 16 << 10
	maxDiffLines   = 200
	diffContext    = 3 // unchanged lines kept around a change
)

// SGR colour codes.
const (
	sgrBold   = "1"
	sgrDim    = "2"
	sgrRed    = "31"
	sgrGreen  = "32"
	sgrYellow = "33"
	sgrCyan   = "36"
)

// style paints text with ANSI colours when it is on, and leaves it alone
// when off (piped output, NO_COLOR, --color never).
type style bool

func (s style) paint(sgr, text string) string {
	if !s || text == "" {
		return text
	}
	return "\x1b[" + sgr + "m" + text + "\x1b[0m"
}

// colorOn reports whether output to a stream is coloured: mode is the
// --color flag (auto, always, never), noColor the NO_COLOR variable and
// tty whether the stream is a terminal. As no-color.org asks, any
// non-empty NO_COLOR turns auto off, and the flag overrides it.
func colorOn(mode, noColor string, tty bool) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	return noColor == "" && tty
}

// toolTitle is the line that heads a tool call: the view's title, or the
// tool's name and summary when it has no view.
func toolTitle(it archive.Item, v *itemmap.ToolView) string {
	if v != nil && v.Title != "" {
		return v.Title
	}
	name, summary := it.String("name"), it.String("summary")
	if name == "" || summary == "" {
		return name + summary
	}
	return name + ": " + summary
}

// statusStyle is the colour of an item status.
func statusStyle(status string) string {
	switch status {
	case archive.StatusSucceeded, itemmap.TurnCompleted:
		return sgrGreen
	case archive.StatusRunning:
		return sgrCyan
	case archive.StatusCancelled, itemmap.TurnInterrupted:
		return sgrYellow
	}
	return sgrRed
}

// indentLines prefixes each line of s with indent, and with the line's
// own start when s begins mid-line (atStart false).
func indentLines(s, indent string, atStart bool) string {
	var b strings.Builder
	for len(s) > 0 {
		if atStart {
			b.WriteString(indent)
		}
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		atStart = true
	}
	return b.String()
}

// cutBytes cuts s to at most n bytes on a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// formatDiff is d as unified-diff lines under a line naming the file,
// each line prefixed with indent: removed lines "-" (red), added "+"
// (green), unchanged " " with at most diffContext of them around a
// change; a new file is all "+".
func formatDiff(d itemmap.Diff, indent string, st style) string {
	var b strings.Builder
	head := d.Path
	if d.OldText == nil {
		head += " (new file)"
	}
	b.WriteString(indent + st.paint(sgrBold, head) + "\n")
	var old []string
	if d.OldText != nil {
		old = splitLines(*d.OldText)
	}
	ops := lineDiff(old, splitLines(d.NewText))
	shown, hidden := 0, 0
	gap := false
	for i, op := range ops {
		if op.kind == ' ' && !nearChange(ops, i) {
			gap = true
			continue
		}
		if shown == maxDiffLines {
			hidden++
			continue
		}
		if gap && shown > 0 {
			b.WriteString(indent + st.paint(sgrDim, "⋮") + "\n")
		}
		gap = false
		line := string(op.kind) + op.text
		switch op.kind {
		case '-':
			line = st.paint(sgrRed, line)
		case '+':
			line = st.paint(sgrGreen, line)
		}
		b.WriteString(indent + line + "\n")
		shown++
	}
	if hidden > 0 {
		b.WriteString(indent + st.paint(sgrDim, fmt.Sprintf("… %d %s more", hidden, plural(hidden, "line", "lines"))) + "\n")
	}
	return b.String()
}

// nearChange reports whether ops[i] is within diffContext lines of a
// removed or added line.
func nearChange(ops []diffOp, i int) bool {
	for j := max(0, i-diffContext); j <= min(len(ops)-1, i+diffContext); j++ {
		if ops[j].kind != ' ' {
			return true
		}
	}
	return false
}

// splitLines splits text into lines without their newlines; a final
// newline ends the last line rather than starting an empty one.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// diffOp is one line of a line diff: kind ' ' (in both), '-' (old only)
// or '+' (new only).
type diffOp struct {
	kind byte
	text string
}

// maxDiffCells bounds the table of the longest common subsequence; past
// it the changed middle shows as all removed, then all added.
const maxDiffCells = 4 << 20

// lineDiff is a shortest-edit line diff of old and new: the common
// prefix and suffix, and a longest common subsequence of the middle.
func lineDiff(old, new []string) []diffOp {
	var ops []diffOp
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		ops = append(ops, diffOp{' ', old[p]})
		p++
	}
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	a, b := old[p:len(old)-s], new[p:len(new)-s]
	if len(a) > 0 && len(b) > 0 && (len(a)+1)*(len(b)+1) <= maxDiffCells {
		// lcs[i][j] is the length of a longest common subsequence of a[i:]
		// and b[j:].
		w := len(b) + 1
		lcs := make([]int32, (len(a)+1)*w)
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
				} else {
					lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(a) && j < len(b) {
			switch {
			case a[i] == b[j]:
				ops = append(ops, diffOp{' ', a[i]})
				i, j = i+1, j+1
			case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
				ops = append(ops, diffOp{'-', a[i]})
				i++
			default:
				ops = append(ops, diffOp{'+', b[j]})
				j++
			}
		}
		a, b = a[i:], b[j:]
	}
	for _, l := range a {
		ops = append(ops, diffOp{'-', l})
	}
	for _, l := range b {
		ops = append(ops, diffOp{'+', l})
	}
	for _, l := range new[len(new)-s:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// planMark is how a plan entry's status shows.
func planMark(status string, st style) string {
	switch status {
	case itemmap.PlanCompleted:
		return st.paint(sgrGreen, "[x]")
	case itemmap.PlanInProgress:
		return st.paint(sgrYellow, "[>]")
	}
	return "[ ]"
}

// formatPlan is the plan, one entry a line under a "Plan" line.
func formatPlan(plan []itemmap.PlanEntry, st style) string {
	var b strings.Builder
	b.WriteString(st.paint(sgrBold, "Plan") + "\n")
	for _, e := range plan {
		text := e.Content
		if e.Status == itemmap.PlanCompleted {
			text = st.paint(sgrDim, text)
		}
		b.WriteString("  " + planMark(e.Status, st) + " " + text + "\n")
	}
	return b.String()
}

// turnCost is a turn's cost: as the CLI reported it, else estimated from
// the price table, else unknown (kind archive.CostUnknown, no dollars).
func turnCost(end *itemmap.TurnEnd) (kind string, usd json.Number) {
	if end.CostUSD != "" {
		return archive.CostReported, end.CostUSD
	}
	if !usageZero(end.Usage) {
		if est, ok := prices.Estimate(end.Model, end.Usage); ok {
			return archive.CostEstimated, est
		}
	}
	return archive.CostUnknown, ""
}

// contextUse is the tokens in context after the turn's last request
// (its input, cache reads and writes, and output) and the model's context
// window (as the CLI reported it, else from the bundled table; 0 when
// neither knows it).
func contextUse(end *itemmap.TurnEnd) (used, size int64) {
	lr := end.LastRound
	used = tokenCount(lr.Input) + tokenCount(lr.CacheRead) + tokenCount(lr.CacheWrite) + tokenCount(lr.Output)
	size = end.ContextWindow
	if size <= 0 {
		size, _ = prices.ContextWindow(end.Model)
	}
	return used, max(size, 0)
}

// tokenCount is a token count as a number, 0 when absent or not a count.
func tokenCount(n json.Number) int64 {
	v, err := n.Int64()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func usageZero(u archive.Usage) bool {
	return tokenCount(u.Input)+tokenCount(u.Output)+tokenCount(u.CacheRead)+tokenCount(u.CacheWrite) == 0
}

// thousands is n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// formatTurnEnd is the line that ends a turn: how it ended, its tokens
// (cache reads and writes when any), the context in use after it with
// the model's window when known, and its cost. On a terminal width
// columns wide (0: unknown, one line) it is wrapped to fit: between its
// parts where they fit a row, else between words, each row after the
// first indented under the first's text.
func formatTurnEnd(end *itemmap.TurnEnd, st style, width int) string {
	parts := []string{"turn " + end.Status}
	painted := []string{"turn " + st.paint(statusStyle(end.Status), end.Status)}
	add := func(p string) {
		parts = append(parts, p)
		painted = append(painted, p)
	}
	u := end.Usage
	tok := "tokens " + thousands(tokenCount(u.Input)) + " in / " + thousands(tokenCount(u.Output)) + " out"
	if r, w := tokenCount(u.CacheRead), tokenCount(u.CacheWrite); r+w > 0 {
		tok += " (cache " + thousands(r) + " read, " + thousands(w) + " written)"
	}
	add(tok)
	if used, size := contextUse(end); size > 0 && used > 0 {
		pct := float64(used) * 100 / float64(size)
		prec := 0
		if pct < 10 {
			prec = 1
		}
		add(fmt.Sprintf("context %s / %s (%.*f%%)", thousands(used), thousands(size), prec, pct))
	}
	switch kind, usd := turnCost(end); kind {
	case archive.CostUnknown:
		add("cost unknown")
	default:
		add("cost " + money.Text(usd) + " (" + kind + ")")
	}
	const lead, indent, sep = "── ", "   ", " · "
	if width <= 0 || uniseg.StringWidth(lead+strings.Join(parts, sep)) <= width {
		return st.paint(sgrDim, lead) + strings.Join(painted, st.paint(sgrDim, sep)) + "\n"
	}
	// The pieces to lay out: each part whole when it fits a row, else
	// word by word; the first piece of a part follows a " · ".
	type piece struct{ text, painted, join string }
	var pieces []piece
	for i, p := range parts {
		join := sep
		if i == 0 {
			join = ""
		}
		if uniseg.StringWidth(indent+p) <= width {
			pieces = append(pieces, piece{p, painted[i], join})
			continue
		}
		for j, w := range strings.Split(p, " ") {
			if j > 0 {
				join = " "
			}
			pieces = append(pieces, piece{w, w, join})
		}
	}
	var b strings.Builder
	b.WriteString(st.paint(sgrDim, lead))
	col := uniseg.StringWidth(lead)
	for i, p := range pieces {
		w := uniseg.StringWidth(p.text)
		if i > 0 && col+uniseg.StringWidth(p.join)+w > width {
			b.WriteString("\n" + indent)
			col = uniseg.StringWidth(indent)
		} else if p.join == sep {
			b.WriteString(st.paint(sgrDim, sep))
			col += uniseg.StringWidth(sep)
		} else {
			b.WriteString(p.join)
			col += uniseg.StringWidth(p.join)
		}
		b.WriteString(p.painted)
		col += w
	}
	return b.String() + "\n"
}

// turnEndJSON is the record `run --json` writes after each turn.
func turnEndJSON(end *itemmap.TurnEnd) map[string]any {
	m := map[string]any{
		"type":           "turnEnd",
		"status":         end.Status,
		"usage":          usageJSON(end.Usage),
		"lastRoundUsage": usageJSON(end.LastRound),
	}
	if end.Model != "" {
		m["model"] = end.Model
	}
	if used, size := contextUse(end); size > 0 {
		m["contextWindow"] = size
		m["contextUsed"] = used
	}
	kind, usd := turnCost(end)
	cost := map[string]any{"kind": kind}
	if usd != "" {
		cost["usd"] = money.JSON(usd)
	}
	m["cost"] = cost
	return m
}

// usageJSON is a usage's token counts by name, leaving out the absent.
func usageJSON(u archive.Usage) map[string]any {
	m := map[string]any{}
	for _, f := range []struct {
		name string
		n    json.Number
	}{{"input", u.Input}, {"output", u.Output}, {"cacheRead", u.CacheRead}, {"cacheWrite", u.CacheWrite}} {
		if _, err := f.n.Int64(); err == nil {
			m[f.name] = f.n
		}
	}
	return m
}

// maxPromptInput caps a tool's input as the prompt shows it.
const maxPromptInput = 1 << 10

// formatApproval is the question for a, a request of a CLI whose tool
// vocabulary is tools, on one line: the command to run (saying when it
// would run outside the sandbox), or the edit's title and diffs, or the
// tool's input, and the reason the request gives; then the choices, "a"
// saying what it would allow, always (no "a" when a has nothing to scope
// it by: always "").
func formatApproval(a itemmap.Approval, tools backend.Tools, always string, st style) string {
	var b strings.Builder
	b.WriteString(st.paint(sgrBold, "Allow "+a.ToolName+"?"))
	reason := approvalReason(a)
	why := ""
	if reason != "" {
		why = " " + st.paint(sgrDim, "— "+oneLine(cutBytes(reason, maxPromptInput)))
	}
	switch cmd := backend.ApprovalCommand(a); {
	case cmd != "":
		b.WriteString(" Run " + st.paint(sgrCyan, "`"+cmd+"`"))
		if escalates(a, tools) {
			b.WriteString(" " + st.paint(sgrYellow, "outside the sandbox"))
		}
		b.WriteString(why + "\n")
	case a.Tool != nil && len(a.Tool.Diffs) > 0:
		b.WriteString(" " + a.Tool.Title)
		if escalates(a, tools) {
			b.WriteString(" " + st.paint(sgrYellow, "outside the sandbox"))
		}
		b.WriteString(why + "\n")
		for _, d := range a.Tool.Diffs {
			b.WriteString(formatDiff(d, "    ", st))
		}
	default:
		in := strings.TrimSpace(string(withoutReason(a.Input)))
		if cut := cutBytes(in, maxPromptInput); cut != in {
			in = cut + "…"
		}
		if a.Tool != nil && a.Tool.Title != "" && a.Tool.Title != a.ToolName {
			b.WriteString(" " + a.Tool.Title)
		}
		if in != "{}" || reason == "" {
			b.WriteString(" " + in)
		}
		b.WriteString(why + "\n")
	}
	if always == "" {
		b.WriteString("  y: once · n: no [y/N] ")
		return b.String()
	}
	fmt.Fprintf(&b, "  y: once · a: always, %s in this run · n: no [y/a/N] ", always)
	return b.String()
}

// statusLine is the status line shown while the agent works: what it
// does and for how long, on one row of a terminal width columns wide.
// Control characters (a command's newlines and tabs) show as spaces, and
// the line is cut with "…" to width-1 columns, so that it never wraps:
// a wrapped line would leave rows behind at each redraw. The cut takes
// from what it does, never from the "(Ns)" counter at its end, unless the
// counter alone does not fit. width 0 means unknown: the line is not cut.
func statusLine(status string, secs, width int) string {
	head, counter := "… "+oneLine(status), fmt.Sprintf(" (%ds)", secs)
	if width <= 0 {
		return head + counter
	}
	room := width - 1 - uniseg.StringWidth(counter)
	if room < uniseg.StringWidth("… x…") {
		return cutWidth(head+counter, width-1)
	}
	return cutWidth(head, room) + counter
}

// toolLabel names a tool call on the status line: the tool's name and
// the call's title ("Bash `sleep 20`"), the title alone when it names the
// tool already or the name is an MCP tool's (mcp__server__tool: its title
// says server and tool).
func toolLabel(it archive.Item, title string) string {
	name := it.String("name")
	switch {
	case name == "":
		return title
	case title == "", strings.Contains(title, name), strings.HasPrefix(name, "mcp__"):
		return cmp.Or(title, name)
	}
	return name + " " + title
}

// oneLine is s with each run of control characters (newlines, tabs,
// escapes) replaced by a space.
func oneLine(s string) string {
	var b strings.Builder
	ctl := false
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			if !ctl {
				b.WriteByte(' ')
			}
			ctl = true
			continue
		}
		ctl = false
		b.WriteRune(r)
	}
	return b.String()
}

// cutWidth cuts s to at most cols terminal columns, ending it with "…"
// when cut; wide characters count two columns.
func cutWidth(s string, cols int) string {
	if cols <= 0 {
		return ""
	}
	if uniseg.StringWidth(s) <= cols {
		return s
	}
	var b strings.Builder
	used := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		w := g.Width()
		if used+w > cols-1 {
			break
		}
		b.WriteString(g.Str())
		used += w
	}
	return b.String() + "…"
}

// approvalReason is the reason a permission request gives: Codex's is
// the model's justification for the call (or an MCP server's question).
func approvalReason(a itemmap.Approval) string {
	var in struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(a.Input, &in)
	return strings.TrimSpace(in.Reason)
}

// withoutReason is a request's input without the reason, which the
// question shows on its own.
func withoutReason(input json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil || m["reason"] == nil {
		return input
	}
	delete(m, "reason")
	out, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return out
}

// escalates reports whether a asks to run outside the sandbox: it says so
// (Approval.Escalated), or its tool is one the CLI asks about only then
// (Tools.AskedOutside: Codex's file change, asked about only when it
// writes outside the sandbox's writable folders).
func escalates(a itemmap.Approval, tools backend.Tools) bool {
	return a.Escalated || slices.Contains(tools.AskedOutside, a.ToolName)
}
