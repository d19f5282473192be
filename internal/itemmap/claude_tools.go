package itemmap

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"spbridge/internal/jsonline"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
)

// Claude Code tools shown as items of their own type.
var claudeSpecialTools = map[string]string{
	"WebSearch":       archive.TypeWebSearch,
	"AskUserQuestion": archive.TypeQuestions,
	"ExitPlanMode":    archive.TypeDirections,
}

// startTool makes the item of a tool call as soon as the CLI names it;
// parent is the item id of the call it runs under ("" for the
// conversation's own calls).
func (m *Claude) startTool(id, name, parent string, r *Result) *claudeTool {
	t := m.turn
	if tool, ok := t.tools[id]; ok {
		return tool
	}
	tool := &claudeTool{id: id, name: name, special: claudeSpecialTools[name], child: parent != ""}
	if slices.Contains(claudeFolderTools, name) {
		m.folderMoved = true // asked about or not, run or not
	}
	tool.view = &ToolView{Kind: claudeKind(name), Title: claudeDefaultTitle(name), ParentID: parent}
	switch tool.special {
	case archive.TypeWebSearch:
		tool.item = m.newItem(archive.TypeWebSearch)
		tool.item.Set("query", "")
		tool.item.Set("status", archive.StatusRunning)
	case archive.TypeQuestions, archive.TypeDirections:
		// Shown once the input (the questions, the plan) is known.
	default:
		tool.item = m.newItem(archive.TypeTool)
		tool.item.Set("name", name)
		tool.item.Set("summary", "")
		tool.item.Set("status", archive.StatusRunning)
		tool.item.Set("statusText", "")
	}
	t.tools[id] = tool
	t.order = append(t.order, id)
	if parent == "" && (name == "Agent" || name == "Task") && !tool.item.IsZero() {
		if m.agents == nil {
			m.agents = make(map[string]string)
		}
		m.agents[id] = tool.item.ID()
	}
	if !tool.item.IsZero() {
		m.toolChange(r, OpAdd, tool)
	}
	return tool
}

// toolChange reports a change of a tool's item with its view.
func (m *Claude) toolChange(r *Result, op Op, tool *claudeTool) {
	r.Changes = append(r.Changes, Change{Op: op, Item: tool.item, Tool: tool.view})
}

// setToolInput shows a tool call's arguments once they are known.
func (m *Claude) setToolInput(tool *claudeTool, input string, r *Result) {
	if tool.input == input {
		return
	}
	tool.input = input
	in := gjson.Parse(input)
	tool.view = m.inputView(tool.name, in, tool.view.ParentID)
	switch tool.special {
	case archive.TypeWebSearch:
		tool.item.Set("query", in.Get("query").String())
		m.toolChange(r, OpUpdate, tool)
	case archive.TypeQuestions:
		// Its result gives each question its answer (withAnswers).
		if tool.item.IsZero() {
			tool.item = m.newItem(archive.TypeQuestions)
			tool.item.Set("questions", questionsFrom(in))
			m.add(r, tool.item)
			break
		}
		tool.item.Set("questions", questionsFrom(in))
		r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: tool.item})
	case archive.TypeDirections:
		tool.item = m.newItem(archive.TypeDirections)
		tool.item.Set("text", in.Get("plan").String())
		m.toolChange(r, OpAdd, tool)
		tool.done = true
	default:
		tool.item.Set("summary", toolSummary(tool.name, in))
		tool.item.Set("detail", "arguments:\n"+truncate(prettyJSON(input), maxDetailArgs))
		m.toolChange(r, OpUpdate, tool)
		if tool.name == "TodoWrite" {
			r.Changes[len(r.Changes)-1].Plan = todoPlan(in.Get("todos"))
		}
	}
}

// toolResult records a tool's result on its item.
// images are the images the result holds (a Read of a picture): the item
// names them, its view carries them.
func (m *Claude) toolResult(tool *claudeTool, out string, images []Image, isErr bool, structured jsonline.Value, r *Result) {
	t := m.turn
	ran := !t.denyIDs[tool.id] && !(isErr && (strings.HasPrefix(out, "[Request interrupted by user") || strings.HasPrefix(out, claudeRejected)))
	tool.view = resultView(tool.name, tool.view, out, ran, structured)
	if len(images) > 0 {
		tool.view.Images = images
		if s := imagesDetail(images); out == "" {
			out = s
		} else {
			out += "\n" + s
		}
	}
	if tool.special == archive.TypeQuestions {
		// The questions item has no status: its result only answers it.
		tool.done = true
		if !isErr && !tool.item.IsZero() && withAnswers(tool.item, structured.Result(), out) {
			r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: tool.item})
		}
		return
	}
	switch {
	case tool.special == archive.TypeWebSearch:
		status := archive.StatusSucceeded
		if isErr {
			status = archive.StatusFailed
		}
		tool.item.Set("status", status)
		tool.item.Set("results", searchResults(structured.Result(), out))
		tool.done = true
		m.toolChange(r, OpUpdate, tool)
	case isErr && strings.HasPrefix(out, "[Request interrupted by user"):
		// An interrupt during the tool: Claude Code stopped it.
		t.aborted = true
		m.finishTool(tool, archive.StatusCancelled, "cancelled", out, r)
	case t.denyIDs[tool.id]:
		m.finishTool(tool, archive.StatusDenied, "denied", out, r)
	case isErr && strings.HasPrefix(out, claudeRejected) && t.allowIDs[tool.id]:
		// The host allowed the call: a rejection after that is how
		// Claude Code reports an interrupt that stopped it.
		m.finishTool(tool, archive.StatusCancelled, "cancelled", out, r)
	case isErr && strings.HasPrefix(out, claudeRejected):
		// A refusal, unless the interrupt note follows (user).
		t.rejected = append(t.rejected, tool)
		m.finishTool(tool, archive.StatusDenied, "denied", out, r)
	case isErr:
		m.finishTool(tool, archive.StatusFailed, failedStatusText(tool.name, out), out, r)
	case len(images) > 0:
		m.finishTool(tool, archive.StatusSucceeded, imagesText(len(images)), out, r)
	default:
		m.finishTool(tool, archive.StatusSucceeded, succeededStatusText(tool.name, out, structured), out, r)
	}
}

// finishTool ends a tool item with status, statusText and its output.
func (m *Claude) finishTool(tool *claudeTool, status, statusText, out string, r *Result) {
	tool.done = true
	if tool.item.IsZero() || tool.special == archive.TypeQuestions {
		return
	}
	if tool.special == archive.TypeWebSearch {
		if status == archive.StatusDenied || status == archive.StatusCancelled || status == archive.StatusFailed {
			tool.item.Set("status", status)
			m.toolChange(r, OpUpdate, tool)
		}
		return
	}
	tool.item.Set("status", status)
	tool.item.Set("statusText", statusText)
	if out != "" {
		// detail, "output:" and the output as truncate gives it, built
		// in one piece (the output may be tens of kilobytes).
		detail := tool.item.String("detail")
		var b strings.Builder
		b.Grow(len(detail) + len("\n\noutput:\n") + min(len(out), maxDetailOutput+40))
		b.WriteString(detail)
		if detail != "" {
			b.WriteString("\n\n")
		}
		b.WriteString("output:\n")
		writeTruncated(&b, out, maxDetailOutput)
		tool.item.Set("detail", b.String())
	}
	m.toolChange(r, OpUpdate, tool)
}

// claudeRejected begins the result Claude Code gives a call it did not
// run: refused, or stopped by an interrupt.
const claudeRejected = "The user doesn't want to proceed"

// interruptedRejections turns the calls this turn recorded as refused (by
// the rejection text alone, no host denied them) into cancelled ones: the
// CLI said the rejection was an interrupt.
func (m *Claude) interruptedRejections(r *Result) {
	t := m.turn
	for _, tool := range t.rejected {
		if tool.item.String("status") == archive.StatusDenied && !t.denyIDs[tool.id] {
			tool.item.Set("status", archive.StatusCancelled)
			tool.item.Set("statusText", "cancelled")
			m.toolChange(r, OpUpdate, tool)
		}
	}
	t.rejected = nil
}

var exitCodeRE = regexp.MustCompile(`(?i)exit code (-?\d+)`)

func failedStatusText(name, out string) string {
	if name == "Bash" {
		if m := exitCodeRE.FindStringSubmatch(firstLine(out)); m != nil {
			return "exit " + m[1]
		}
	}
	return "error"
}

func succeededStatusText(name, out string, structured jsonline.Value) string {
	switch name {
	case "Bash":
		if structured.Get("interrupted").Bool() {
			return "interrupted"
		}
		return "exit 0"
	case "Read":
		if n := structured.Get("file.numLines"); n.Exists() {
			return plural(int(n.Int()), "line")
		}
	case "Glob":
		if n := structured.Get("numFiles"); n.Exists() {
			return plural(int(n.Int()), "file")
		}
	case "Grep":
		if n := structured.Get("numLines"); n.Exists() && n.Int() > 0 {
			return plural(int(n.Int()), "line")
		}
		if n := structured.Get("numFiles"); n.Exists() {
			return plural(int(n.Int()), "file")
		}
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return "done"
	}
	return plural(countLines(out), "line")
}

// toolSummary is a short line saying what a tool call does: the command,
// the file, the pattern.
func toolSummary(name string, in gjson.Result) string {
	pick := func(keys ...string) string {
		for _, k := range keys {
			if s := in.Get(k).String(); s != "" {
				return firstLine(s)
			}
		}
		return ""
	}
	switch name {
	case "Bash":
		return pick("command")
	case "Read", "Write", "Edit", "MultiEdit":
		return pick("file_path")
	case "NotebookEdit":
		return pick("notebook_path")
	case "Glob", "Grep":
		s := pick("pattern")
		if p := in.Get("path").String(); p != "" && s != "" {
			s += " in " + firstLine(p)
		}
		return s
	case "LS":
		return pick("path")
	case "WebFetch":
		return pick("url")
	case "WebSearch":
		return pick("query")
	case "Task", "Agent":
		return pick("description", "prompt")
	case "TodoWrite":
		if todos := in.Get("todos"); todos.IsArray() {
			return plural(len(todos.Array()), "todo")
		}
	}
	return pick("command", "file_path", "path", "pattern", "url", "query", "description", "name")
}

// questionsFrom reads AskUserQuestion's input: each question and its
// options' labels.
func questionsFrom(in gjson.Result) []any {
	out := []any{}
	for _, q := range in.Get("questions").Array() {
		opts := []any{}
		for _, o := range q.Get("options").Array() {
			if o.Type == gjson.String {
				opts = append(opts, o.String())
			} else if l := o.Get("label").String(); l != "" {
				opts = append(opts, l)
			}
		}
		out = append(out, map[string]any{"question": q.Get("question").String(), "options": opts})
	}
	return out
}

// withAnswers gives each question of a questions item the answer the
// user chose, as "answer": from the result's structured answers (an
// object of question to answer), else from its text, which Claude Code
// writes as `"question"="answer"` pairs. It reports whether any question
// got an answer.
func withAnswers(it archive.Item, structured gjson.Result, out string) bool {
	answers := map[string]string{}
	structured.Get("answers").ForEach(func(k, v gjson.Result) bool {
		answers[k.String()] = v.String()
		return true
	})
	if len(answers) == 0 {
		for _, m := range answerPair.FindAllStringSubmatch(out, -1) {
			answers[m[1]] = m[2]
		}
	}
	qs, _ := it.Get("questions").([]any)
	if len(answers) == 0 || len(qs) == 0 {
		return false
	}
	next := make([]any, 0, len(qs))
	for _, q := range qs {
		qm, ok := q.(map[string]any)
		if !ok {
			next = append(next, q)
			continue
		}
		qm = maps.Clone(qm)
		if text, _ := qm["question"].(string); answers[text] != "" {
			qm["answer"] = answers[text]
		}
		next = append(next, qm)
	}
	it.Set("questions", next)
	return true
}

// answerPair is one `"question"="answer"` of an AskUserQuestion result.
var answerPair = regexp.MustCompile(`"([^"]*)"="([^"]*)"`)

// searchResults collects every {title, url} a web search returned, from the
// structured result when there is one, else from the text.
func searchResults(structured gjson.Result, out string) []any {
	results := []any{}
	seen := map[string]bool{}
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.IsObject():
			if u := v.Get("url").String(); u != "" && !seen[u] {
				seen[u] = true
				results = append(results, map[string]any{"title": v.Get("title").String(), "url": u})
				return
			}
			v.ForEach(func(_, x gjson.Result) bool { walk(x); return true })
		case v.IsArray():
			v.ForEach(func(_, x gjson.Result) bool { walk(x); return true })
		}
	}
	walk(structured)
	if len(results) == 0 && validJSON(out) {
		walk(gjson.Parse(out))
	}
	return results
}

// prettyJSON indents JSON for display; text that is not JSON is kept.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}
