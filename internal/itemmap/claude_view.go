package itemmap

import (
	"spbridge/internal/jsonline"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// claudeKind is the kind of a Claude Code tool, by name.
func claudeKind(name string) string {
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		return KindExecute
	case "Read", "NotebookRead":
		return KindRead
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return KindEdit
	case "Glob", "Grep", "LS", "ToolSearch":
		return KindSearch
	case "WebFetch", "WebSearch":
		return KindFetch
	case "Task", "Agent", "TodoWrite":
		return KindThink
	case "ExitPlanMode":
		return KindSwitchMode
	}
	return KindOther
}

// claudeDefaultTitle is a tool's title before its input is known.
func claudeDefaultTitle(name string) string {
	switch name {
	case "Bash":
		return "Terminal"
	case "ExitPlanMode":
		return "Ready to code?"
	case "TodoWrite":
		return "Update the plan"
	}
	if server, tool, ok := mcpName(name); ok {
		return server + ": " + tool
	}
	return name
}

// mcpName splits an MCP tool's name, mcp__<server>__<tool>.
func mcpName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok
}

// inputView is how a call of tool name with input in is presented before
// its result: its kind, title, the files it works on and, for an edit,
// the change it asks to make.
func (m *Claude) inputView(name string, in gjson.Result, parent string) *ToolView {
	v := &ToolView{Kind: claudeKind(name), Title: claudeDefaultTitle(name), ParentID: parent}
	str := func(k string) string { return in.Get(k).String() }
	rel := func(p string) string { return m.relPath(p) }
	loc := func(p string, line int) {
		if p != "" {
			v.Locations = append(v.Locations, Location{Path: p, Line: line})
		}
	}
	switch name {
	case "Bash":
		v.Terminal = true
		if c := firstLine(str("command")); c != "" {
			v.Title = "`" + c + "`"
		}
		v.Description = str("description")
	case "Read":
		p := str("file_path")
		v.Title = "Read " + rel(p)
		line := int(in.Get("offset").Int())
		if n := in.Get("limit").Int(); line > 0 && n > 0 {
			v.Title += " (lines " + strconv.Itoa(line) + "–" + strconv.Itoa(line+int(n)-1) + ")"
		} else if line > 0 {
			v.Title += " (from line " + strconv.Itoa(line) + ")"
		}
		loc(p, line)
	case "Write":
		p := str("file_path")
		v.Title = "Write " + rel(p)
		loc(p, 0)
		if c := in.Get("content"); c.Exists() {
			v.Diffs = []Diff{{Path: p, NewText: c.String()}}
		}
	case "Edit":
		p := str("file_path")
		v.Title = "Edit " + rel(p)
		loc(p, 0)
		if o := in.Get("old_string"); o.Exists() {
			old := o.String()
			v.Diffs = []Diff{{Path: p, OldText: &old, NewText: str("new_string")}}
		}
	case "MultiEdit":
		p := str("file_path")
		v.Title = "Edit " + rel(p)
		loc(p, 0)
		for _, e := range in.Get("edits").Array() {
			old := e.Get("old_string").String()
			v.Diffs = append(v.Diffs, Diff{Path: p, OldText: &old, NewText: e.Get("new_string").String()})
		}
	case "NotebookEdit":
		p := str("notebook_path")
		v.Title = "Edit " + rel(p)
		switch str("edit_mode") {
		case "delete":
			v.Title = "Delete a cell of " + rel(p)
		case "insert":
			v.Title = "Insert a cell into " + rel(p)
		}
		loc(p, 0)
	case "Glob":
		v.Title = "Find " + str("pattern")
		if p := str("path"); p != "" {
			v.Title += " in " + rel(p)
			loc(p, 0)
		}
	case "Grep":
		v.Title = "Search " + quote(str("pattern"))
		if p := str("path"); p != "" {
			v.Title += " in " + rel(p)
			loc(p, 0)
		} else if g := str("glob"); g != "" {
			v.Title += " in " + g
		}
	case "LS":
		p := str("path")
		v.Title = "List " + rel(p)
		loc(p, 0)
	case "WebFetch":
		v.Title = "Fetch " + firstLine(str("url"))
	case "WebSearch":
		v.Title = "Search the web for " + quote(firstLine(str("query")))
	case "Task", "Agent":
		if d := firstLine(str("description")); d != "" {
			v.Title = d
		}
	case "ToolSearch":
		v.Title = "Find tools " + quote(firstLine(str("query")))
	case "TodoWrite", "ExitPlanMode":
	default:
		if s := toolSummary(name, in); s != "" {
			v.Title += ": " + s
		}
	}
	return v
}

// resultView is v brought up to date with a call's result: what an edit
// changed (per hunk, as Claude Code reports it in the line's
// tool_use_result) and where, and what a command printed (out, when the
// call ran: not refused or stopped before it could).
func resultView(name string, v *ToolView, out string, ran bool, structured jsonline.Value) *ToolView {
	nv := *v
	switch name {
	case "Bash":
		if ran {
			nv.Output = out
		}
	case "Write", "Edit", "MultiEdit":
		p := structured.Get("filePath").String()
		if p == "" && len(v.Diffs) > 0 {
			p = v.Diffs[0].Path
		}
		if p == "" {
			break
		}
		if structured.Get("type").String() == "create" && structured.Get("originalFile").Type() == gjson.Null {
			nv.Diffs = []Diff{{Path: p, NewText: structured.Get("content").String()}}
			nv.Locations = []Location{{Path: p, Line: 1}}
			break
		}
		if diffs, line := patchDiffs(p, structured.Get("structuredPatch")); len(diffs) > 0 {
			nv.Diffs = diffs
			nv.Locations = []Location{{Path: p, Line: line}}
		}
	case "NotebookEdit":
		p := structured.Get("notebook_path").String()
		if o, u := structured.Get("original_file"), structured.Get("updated_file"); p != "" && u.Exists() {
			d := Diff{Path: p, NewText: u.String()}
			if o.Exists() && !o.IsNull() {
				old := o.String()
				d.OldText = &old
			}
			nv.Diffs = []Diff{d}
		}
	}
	return &nv
}

// patchDiffs reads a structuredPatch (hunks of {oldStart, newStart,
// lines: [" ctx", "-old", "+new"]}) as one diff per hunk, and the first
// changed line of the file after the change.
func patchDiffs(path string, patch jsonline.Value) ([]Diff, int) {
	var diffs []Diff
	first := 0
	for _, h := range patch.Array() {
		var old, nw []string
		line := int(h.Get("newStart").Int())
		changed := false
		for _, l := range h.Get("lines").Array() {
			s := l.String()
			if s == "" {
				continue
			}
			switch s[0] {
			case ' ':
				old, nw = append(old, s[1:]), append(nw, s[1:])
				if !changed {
					line++
				}
			case '-':
				old = append(old, s[1:])
				changed = true
			case '+':
				nw = append(nw, s[1:])
				changed = true
			}
		}
		o := strings.Join(old, "\n")
		diffs = append(diffs, Diff{Path: path, OldText: &o, NewText: strings.Join(nw, "\n")})
		if first == 0 {
			first = max(line, 1)
		}
	}
	return diffs, first
}

// todoPlan reads TodoWrite's todos ({content, status, activeForm}) as a
// plan.
func todoPlan(todos gjson.Result) []PlanEntry {
	plan := []PlanEntry{}
	for _, t := range todos.Array() {
		status := t.Get("status").String()
		switch status {
		case PlanPending, PlanInProgress, PlanCompleted:
		default:
			status = PlanPending
		}
		plan = append(plan, PlanEntry{Content: t.Get("content").String(), Status: status, Priority: t.Get("priority").String()})
	}
	return plan
}

// relPath is p relative to the CLI's working folder when it lies inside
// it (for titles), else p.
func (m *Claude) relPath(p string) string {
	if m.cwd == "" || len(p) <= len(m.cwd)+1 || !strings.HasPrefix(p, m.cwd) {
		return p
	}
	if c := p[len(m.cwd)]; c == '/' || c == '\\' {
		return p[len(m.cwd)+1:]
	}
	return p
}

// subagent maps a line of a subagent's own (one with parent_tool_use_id):
// its tool calls show as calls of their own under the Task/Agent call that
// started it, and are not part of this conversation's history. While that
// call runs (a foreground subagent) each shows as it starts. A background
// subagent's lines come after its call returned, mostly after the turn's
// result and so in the next turn's stream: each of its calls shows once its
// result is in, whole, in the turn running then.
func (m *Claude) subagent(ev *claudeEvent, parentID string, r *Result) {
	t := m.turn
	switch ev.Get("type").String() {
	case "assistant":
		var parentItem string
		foreground := false
		if t != nil {
			if p, ok := t.tools[parentID]; ok && !p.done && !p.item.IsZero() {
				parentItem, foreground = p.item.ID(), true
			}
		}
		if !foreground {
			if parentItem = m.agents[parentID]; parentItem == "" {
				return
			}
		}
		for _, c := range ev.Get("message.content").Array() {
			if c.Get("type").String() != "tool_use" {
				continue
			}
			input := c.Get("input").Raw()
			if input == "" {
				input = "{}"
			}
			if !foreground {
				if m.bgCalls == nil {
					m.bgCalls = make(map[string]bgCall)
				}
				m.bgCalls[c.Get("id").String()] = bgCall{name: c.Get("name").String(), input: input, parent: parentItem}
				continue
			}
			tool := m.startTool(c.Get("id").String(), c.Get("name").String(), parentItem, r)
			if !tool.done {
				m.setToolInput(tool, input, r)
			}
		}
	case "user":
		for _, c := range ev.Get("message.content").Array() {
			if c.Get("type").String() != "tool_result" {
				continue
			}
			id := c.Get("tool_use_id").String()
			var tool *claudeTool
			if t != nil {
				if tt, ok := t.tools[id]; ok && tt.child && !tt.done {
					tool = tt
				}
			}
			if bc, ok := m.bgCalls[id]; ok && tool == nil {
				delete(m.bgCalls, id)
				m.ensureTurn()
				tool = m.startTool(id, bc.name, bc.parent, r)
				m.setToolInput(tool, bc.input, r)
			}
			if tool != nil {
				out, images := m.toolResultContent(c.Get("content"))
				m.toolResult(tool, out, images, c.Get("is_error").Bool(), ev.Get("tool_use_result"), r)
			}
		}
	}
}

// contextWindow is the model's context window as a result line reports it
// (modelUsage: {model: {contextWindow}}), the largest when it names
// several models and model is not among them; 0 when it reports none.
func contextWindow(ev *claudeEvent, model string) int64 {
	mu := ev.Get("modelUsage").Result()
	if n := mu.Get(gjson.Escape(model) + ".contextWindow").Int(); model != "" && n > 0 {
		return n
	}
	var best int64
	mu.ForEach(func(_, v gjson.Result) bool {
		best = max(best, v.Get("contextWindow").Int())
		return true
	})
	return best
}

func quote(s string) string { return `"` + s + `"` }
