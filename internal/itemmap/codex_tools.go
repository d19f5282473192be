package itemmap

import (
	"bytes"
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
)

// Tool names of codex items, in the panel and in the history.
const (
	codexShellTool = "shell"
	codexPatchTool = "apply_patch"
	codexImageTool = "view_image"
)

// CodexShellTool and CodexPatchTool are codex's command and file change
// as the panel, the history and an approval name them.
const (
	CodexShellTool = codexShellTool
	CodexPatchTool = codexPatchTool
)

// codexStatus reads a codex item's status: whether it ended, and how.
// A completed event ends the item whatever its status says.
func codexStatus(status string, completed bool) (ended bool, result string) {
	switch status {
	case "completed":
		return true, archive.StatusSucceeded
	case "failed":
		return true, archive.StatusFailed
	case "declined":
		return true, archive.StatusDenied
	}
	if completed {
		return true, archive.StatusSucceeded
	}
	return false, archive.StatusRunning
}

// command maps a command_execution item.
func (m *Codex) command(e *codexEntry, it gjson.Result, completed bool, r *Result) {
	full := it.Get("command").String()
	cmd := unwrapCommand(full)
	out := it.Get("aggregated_output").String()
	exit := it.Get("exit_code")
	ended, status := codexStatus(it.Get("status").String(), completed)
	statusText := ""
	if ended {
		switch {
		case status == archive.StatusDenied:
			statusText = "denied"
		case exit.Type == gjson.Number:
			n := int(exit.Int())
			statusText = exitText(n)
			if n != 0 && status == archive.StatusSucceeded {
				status = archive.StatusFailed
			}
		case status == archive.StatusFailed:
			statusText = "error"
		default:
			statusText = "done"
		}
	}
	summary := firstLine(cmd)
	var detail []string
	if summary != cmd {
		detail = append(detail, "command:\n"+truncate(cmd, maxDetailArgs))
	}
	if out != "" {
		detail = append(detail, "output:\n"+truncate(out, maxDetailOutput))
	}
	if !ended && out == "" && e.stream != nil {
		// What streamed so far; the final output replaces it.
		out = e.stream.String()
	}
	v := commandView(cmd, out)
	m.actionsView(v, it.Get("command_actions"))
	if ended && exit.Type == gjson.Number {
		n := int(exit.Int())
		v.ExitCode = &n
	}
	e.args = jsonObject("command", cmd)
	m.showTool(e, archive.TypeTool, r, v, "name", codexShellTool, "summary", summary,
		"status", status, "statusText", statusText, "detail", orNil(strings.Join(detail, "\n\n")))
	m.startTool(e, codexShellTool)
	e.output = out
	if ended {
		m.endTool(e, out, status != archive.StatusSucceeded)
	}
}

// fileChange maps a file_change item: the paths it changed, and the diffs
// when codex gives them.
func (m *Codex) fileChange(e *codexEntry, it gjson.Result, completed bool, r *Result) {
	changes := it.Get("changes")
	var paths, lines []string
	for _, c := range changes.Array() {
		p := c.Get("path").String()
		kind := c.Get("kind")
		if kind.IsObject() {
			kind = kind.Get("type")
		}
		paths = append(paths, p)
		line := joinNonEmpty(" ", kind.String(), p)
		if mv := c.Get("kind.move_path").String(); mv != "" {
			line += " → " + mv
		}
		for _, key := range []string{"diff", "unified_diff"} {
			if d := c.Get(key).String(); d != "" {
				line += "\n" + strings.TrimSuffix(d, "\n")
				break
			}
		}
		lines = append(lines, line)
	}
	ended, status := codexStatus(it.Get("status").String(), completed)
	statusText := ""
	if ended {
		switch status {
		case archive.StatusSucceeded:
			statusText = plural(len(paths), "file")
		case archive.StatusDenied:
			statusText = "denied"
		default:
			statusText = "error"
		}
	}
	text := strings.Join(lines, "\n")
	detail := ""
	if text != "" {
		detail = "changes:\n" + truncate(text, maxDetailOutput)
	}
	raw := "[]"
	if changes.IsArray() {
		raw = changes.Raw
	}
	e.args = `{"changes":` + raw + `}`
	view := changes
	if fv, ok := m.turn.fileViews[e.id]; ok {
		// What the exec thread's own log says the change was: the view
		// only.
		view = gjson.Parse(fv)
	}
	m.showTool(e, archive.TypeTool, r, m.changeView(view),
		"name", codexPatchTool, "summary", firstLine(strings.Join(paths, ", ")),
		"status", status, "statusText", statusText, "detail", orNil(detail))
	m.startTool(e, codexPatchTool)
	if ended {
		m.endTool(e, text, status != archive.StatusSucceeded)
	}
}

// mcpCall maps an mcp_tool_call item. The panel names the tool
// "server.tool"; the history "mcp__server__tool", as Claude Code names MCP
// tools, so that the name is one a model API accepts.
func (m *Codex) mcpCall(e *codexEntry, it gjson.Result, completed bool, r *Result) {
	server, tool := it.Get("server").String(), it.Get("tool").String()
	name := joinNonEmpty(".", server, tool)
	args := it.Get("arguments")
	argsRaw := "{}"
	if args.Exists() && args.Type != gjson.Null {
		argsRaw = args.Raw
	}
	summary := toolSummary("", args)
	if summary == "" && argsRaw != "{}" {
		summary = firstLine(compactJSON(argsRaw))
	}
	out := toolResultText(it.Get("result.content"))
	if sc := it.Get("result.structured_content"); out == "" && sc.Exists() && sc.Type != gjson.Null {
		out = sc.Raw
	}
	errMsg := it.Get("error.message").String()
	ended, status := codexStatus(it.Get("status").String(), completed)
	if ended && errMsg != "" && status == archive.StatusSucceeded {
		status = archive.StatusFailed
	}
	if status == archive.StatusFailed && errMsg != "" {
		out = joinNonEmpty("\n", errMsg, out)
	}
	statusText := ""
	if ended {
		switch status {
		case archive.StatusSucceeded:
			statusText = plural(countLines(out), "line")
		case archive.StatusDenied:
			statusText = "denied"
		default:
			statusText = "error"
		}
	}
	var detail []string
	if argsRaw != "{}" {
		detail = append(detail, "arguments:\n"+truncate(prettyJSON(argsRaw), maxDetailArgs))
	}
	if out != "" {
		detail = append(detail, "output:\n"+truncate(out, maxDetailOutput))
	}
	e.args = argsRaw
	v := &ToolView{Kind: KindOther, Title: joinNonEmpty(": ", server, tool)}
	m.showTool(e, archive.TypeTool, r, v, "name", name, "summary", summary,
		"status", status, "statusText", statusText, "detail", orNil(strings.Join(detail, "\n\n")))
	m.startTool(e, "mcp__"+server+"__"+tool)
	if ended {
		m.endTool(e, out, status != archive.StatusSucceeded)
	}
}

// webSearch maps a web_search item. Codex runs the search on the model
// API's side and reports only the query: no results, and nothing for the
// history.
func (m *Codex) webSearch(e *codexEntry, it gjson.Result, completed bool, r *Result) {
	query := it.Get("query").String()
	for _, p := range []string{"action.query", "action.queries.0"} {
		if query != "" {
			break
		}
		query = it.Get(p).String()
	}
	status := archive.StatusRunning
	if completed {
		status = archive.StatusSucceeded
	}
	v := &ToolView{Kind: KindFetch, Title: "Search the web"}
	if q := firstLine(query); q != "" {
		v.Title += " for " + quote(q)
	}
	m.showTool(e, archive.TypeWebSearch, r, v, "query", query, "status", status, "results", []any{})
	e.finished = completed
}

// imageView maps an image_view item (the app-server's imageView: the
// model looked at an image file). Codex reports only the file's path; the
// image itself went to the model.
func (m *Codex) imageView(e *codexEntry, it gjson.Result, completed bool, r *Result) {
	p := it.Get("path").String()
	status, statusText := archive.StatusRunning, ""
	if completed {
		status, statusText = archive.StatusSucceeded, "done"
	}
	v := &ToolView{Kind: KindRead, Title: "View " + relTo(m.cwd, p), Images: e.images}
	if p != "" {
		v.Locations = []Location{{Path: p}}
	}
	if completed && len(e.images) > 0 {
		statusText = imagesText(len(e.images))
	}
	e.args = jsonObject("path", p)
	m.showTool(e, archive.TypeTool, r, v, "name", codexImageTool, "summary", firstLine(relTo(m.cwd, p)),
		"status", status, "statusText", statusText)
	m.startTool(e, codexImageTool)
	if completed {
		m.endTool(e, "", false)
	}
}

// toolImages shows the images a tool (codex item id) returned on its item
// and view, once: the same images again change nothing.
func (m *Codex) toolImages(id string, images []Image, r *Result) {
	e := m.turn.byID[id]
	if e == nil || e.item.IsZero() || e.view == nil || sameImages(e.images, images) {
		return
	}
	e.images = images
	v := *e.view
	v.Images = images
	fields := []any{"detail", "output:\n" + imagesDetail(images)}
	if e.item.String("status") == archive.StatusSucceeded {
		fields = append(fields, "statusText", imagesText(len(images)))
	}
	m.showTool(e, archive.TypeTool, r, &v, fields...)
}

// sameImages reports whether a and b are the same images.
func sameImages(a, b []Image) bool {
	return slices.EqualFunc(a, b, func(x, y Image) bool {
		return x.MimeType == y.MimeType && bytes.Equal(x.Data, y.Data)
	})
}

// todoList shows a todo list (exec's todo_list; the app-server's plan
// updates, given the same form by CodexApp) as a directions item, one
// "[x] step" or "[ ] step" line a step, and hands out the plan with each
// step's status: an entry's status when it has one (the app-server's
// pending, inProgress, completed), else completed or pending by its
// completed flag (exec, which cannot tell in progress from pending).
func (m *Codex) todoList(e *codexEntry, items gjson.Result, r *Result) {
	plan := []PlanEntry{}
	for _, step := range items.Array() {
		status := PlanPending
		switch s := step.Get("status").String(); {
		case s == "inProgress" || s == PlanInProgress:
			status = PlanInProgress
		case s == PlanCompleted || s == "" && step.Get("completed").Bool():
			status = PlanCompleted
		}
		plan = append(plan, PlanEntry{Content: step.Get("text").String(), Status: status})
	}
	n := len(r.Changes)
	m.show(e, archive.TypeDirections, r, "text", todoText(items))
	switch {
	case len(r.Changes) > n:
		r.Changes[len(r.Changes)-1].Plan = plan
	case !reflect.DeepEqual(plan, e.plan):
		// Only a status the text does not show changed.
		r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: e.item, Plan: plan})
	}
	e.plan = plan
}

// showTool shows a tool's item as show does, with v as its view: the
// change show made carries it; when show changed nothing but the view
// differs from the one handed out last, an update carries it.
func (m *Codex) showTool(e *codexEntry, typ string, r *Result, v *ToolView, fields ...any) {
	n := len(r.Changes)
	m.show(e, typ, r, fields...)
	switch {
	case len(r.Changes) > n:
		r.Changes[len(r.Changes)-1].Tool = v
	case v != nil && !reflect.DeepEqual(v, e.view):
		r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: e.item, Tool: v})
	}
	e.view = v
}

// commandOutput grows the output of a running command (item id) by what it
// printed, as the app-server streams it: the change carries the view with
// the output so far and the delta alone; the item is not changed.
func (m *Codex) commandOutput(id, delta string, r *Result) {
	t := m.turn
	if t == nil || delta == "" {
		return
	}
	e := t.byID[id]
	if e == nil || e.kind != codexCommand || e.finished || e.item.IsZero() || e.view == nil {
		return
	}
	if e.stream == nil {
		e.stream = &strings.Builder{}
	}
	e.stream.WriteString(delta)
	v := *e.view
	v.Output = e.stream.String()
	e.view, e.output = &v, v.Output
	r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: e.item, Tool: &v, OutputDelta: delta})
}

// commandView is how a command shows: the command (without the shell
// around it) as its title, and its output.
func commandView(cmd, out string) *ToolView {
	v := &ToolView{Kind: KindExecute, Title: "Terminal", Terminal: true, Output: out}
	if c := firstLine(cmd); c != "" {
		v.Title = "`" + c + "`"
	}
	return v
}

// actionsView titles a command by what codex parsed it to do (the
// app-server's commandActions): "Read a.go", "List src", `Search "TODO" in
// src`, joined by ", " when it does several things; its kind is read when
// it only reads, search when it lists or searches too. A command with an
// action codex did not recognize keeps its own title and kind.
func (m *Codex) actionsView(v *ToolView, acts gjson.Result) {
	list := acts.Array()
	if len(list) == 0 {
		return
	}
	var titles []string
	var locs []Location
	kind := KindRead
	for _, a := range list {
		path := a.Get("path").String()
		shown := relTo(m.cwd, path)
		switch a.Get("type").String() {
		case "read":
			name := a.Get("name").String()
			if shown != "" && shown != path {
				name = shown // the path in the working folder says more than the name
			}
			if name == "" {
				name = shown
			}
			titles = append(titles, "Read "+name)
			if path != "" {
				locs = append(locs, Location{Path: path})
			}
		case "listFiles":
			kind = KindSearch
			if shown == "" {
				shown = "files"
			}
			titles = append(titles, "List "+shown)
		case "search":
			kind = KindSearch
			t := "Search"
			if q := a.Get("query").String(); q != "" {
				t += " " + strconv.Quote(q)
			}
			if shown != "" {
				t += " in " + shown
			}
			titles = append(titles, t)
		default:
			return
		}
	}
	v.Kind, v.Title, v.Locations = kind, strings.Join(titles, ", "), locs
}

// changeView is how a file_change shows: the files it changes (a moved
// file by its new path, with the first changed line when the hunks say
// it) and, when codex gives the changes (the app-server does, exec does
// not), one diff per hunk of an update, the new text of an added file
// (old text nil), the old text of a deleted one. Its kind is delete when
// every change deletes, move when every change moves, else edit.
func (m *Codex) changeView(changes gjson.Result) *ToolView {
	v := &ToolView{Kind: KindEdit}
	var names []string
	deletes, moves, n := 0, 0, 0
	for _, c := range changes.Array() {
		n++
		p := c.Get("path").String()
		kind := c.Get("kind")
		movePath := c.Get("move_path").String()
		if kind.IsObject() {
			movePath = kind.Get("move_path").String()
			kind = kind.Get("type")
		}
		diff := c.Get("diff").String()
		if diff == "" {
			diff = c.Get("unified_diff").String()
		}
		target := p
		switch {
		case kind.String() == "delete":
			deletes++
			names = append(names, relTo(m.cwd, p))
			if diff != "" {
				v.Diffs = append(v.Diffs, Diff{Path: p, OldText: &diff})
			}
		case kind.String() == "add":
			names = append(names, relTo(m.cwd, p))
			if diff != "" {
				v.Diffs = append(v.Diffs, Diff{Path: p, NewText: diff})
			}
		default:
			if movePath != "" {
				moves++
				target = movePath
				names = append(names, relTo(m.cwd, p)+" → "+relTo(m.cwd, movePath))
			} else {
				names = append(names, relTo(m.cwd, p))
			}
		}
		line := 0
		if kind.String() == "add" {
			line = 1
		} else if kind.String() != "delete" && diff != "" {
			var diffs []Diff
			diffs, line = unifiedDiffs(target, diff)
			v.Diffs = append(v.Diffs, diffs...)
		}
		if target != "" {
			v.Locations = append(v.Locations, Location{Path: target, Line: line})
		}
	}
	verb := "Edit"
	switch {
	case n > 0 && deletes == n:
		v.Kind, verb = KindDelete, "Delete"
	case n > 0 && moves == n:
		v.Kind, verb = KindMove, "Move"
	}
	v.Title = verb
	if len(names) > 0 {
		v.Title += " " + firstLine(strings.Join(names, ", "))
	}
	return v
}

// unifiedDiffs reads the hunks of a unified diff ("@@ -1,3 +1,3 @@" and
// their " ", "-", "+" lines; file headers, if any, skipped) as one diff of
// path per hunk, its old text the context and removed lines, its new text
// the context and added lines; and the first changed line of the file
// after the change (0 when there is no hunk).
func unifiedDiffs(path, diff string) ([]Diff, int) {
	var diffs []Diff
	first := 0
	var old, nw []string
	in, changed, placed, line := false, false, false, 0
	flush := func() {
		if !in {
			return
		}
		o := strings.Join(old, "\n")
		diffs = append(diffs, Diff{Path: path, OldText: &o, NewText: strings.Join(nw, "\n")})
		if first == 0 && placed {
			first = max(line, 1)
		}
		old, nw, in, changed = nil, nil, false, false
	}
	for l := range strings.SplitSeq(strings.TrimSuffix(diff, "\n"), "\n") {
		if strings.HasPrefix(l, "@@") {
			flush()
			// A bare "@@" does not say where the hunk is.
			in, line, placed = true, hunkNewStart(l), strings.Contains(l, " +")
			continue
		}
		if !in || l == "" {
			continue
		}
		switch l[0] {
		case ' ':
			old, nw = append(old, l[1:]), append(nw, l[1:])
			if !changed {
				line++
			}
		case '-':
			old, changed = append(old, l[1:]), true
		case '+':
			nw, changed = append(nw, l[1:]), true
		}
	}
	flush()
	return diffs, first
}

// hunkNewStart is the new file's start line in a hunk header
// "@@ -a,b +c,d @@", 0 when it has none.
func hunkNewStart(header string) int {
	_, rest, ok := strings.Cut(header, " +")
	if !ok {
		return 0
	}
	end := strings.IndexAny(rest, ", ")
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.Atoi(rest[:end])
	return n
}

// relTo is p relative to the working folder cwd when it lies inside it
// (for titles), else p.
func relTo(cwd, p string) string {
	if cwd == "" || len(p) <= len(cwd)+1 || !strings.HasPrefix(p, cwd) {
		return p
	}
	if c := p[len(cwd)]; c == '/' || c == '\\' {
		return p[len(cwd)+1:]
	}
	return p
}

// todoText is a todo_list's steps, one a line: "[x] done", "[ ] to do".
func todoText(items gjson.Result) string {
	var b strings.Builder
	for i, step := range items.Array() {
		if i > 0 {
			b.WriteByte('\n')
		}
		if step.Get("completed").Bool() {
			b.WriteString("[x] ")
		} else {
			b.WriteString("[ ] ")
		}
		b.WriteString(step.Get("text").String())
	}
	return b.String()
}

// jsonObject encodes {key: value} without escaping <, > and &.
func jsonObject(key, value string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{key: value}); err != nil {
		return "{}"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// compactJSON removes insignificant space from JSON; text that is not JSON
// is kept.
func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// unwrapCommand returns the command codex ran without the shell around it.
// Codex reports a command as the argv it ran, quoted as a shell would read
// it: `/bin/bash -lc 'ls -la'`, `bash -lc "python3 -c \"print('b')\""`.
// When the program is a shell (bash, sh, zsh, dash) with -c, -lc or -cl and
// one more argument, that argument is the command, with its quotes
// removed. Anything else is returned as it is.
func unwrapCommand(cmd string) string {
	prog, rest, ok := strings.Cut(cmd, " ")
	if !ok {
		return cmd
	}
	switch path.Base(prog) {
	case "bash", "sh", "zsh", "dash":
	default:
		return cmd
	}
	flag, rest, ok := strings.Cut(strings.TrimLeft(rest, " "), " ")
	if !ok {
		return cmd
	}
	switch flag {
	case "-c", "-lc", "-cl":
	default:
		return cmd
	}
	word, ok := shellWord(strings.Trim(rest, " "))
	if !ok || word == "" {
		return cmd
	}
	return word
}

// shellWord reads s as exactly one shell word made of single-quoted,
// double-quoted and plain parts, and returns it unquoted. It fails on more
// than one word, and on anything a shell would expand.
func shellWord(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			i++
			closed := false
			for i < len(s) && !closed {
				switch c := s[i]; c {
				case '"':
					closed = true
					i++
				case '\\':
					if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
						if s[i+1] != '\n' {
							b.WriteByte(s[i+1])
						}
						i += 2
						continue
					}
					b.WriteByte(c)
					i++
				case '$', '`':
					return "", false
				default:
					b.WriteByte(c)
					i++
				}
			}
			if !closed {
				return "", false
			}
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			if s[i+1] != '\n' {
				b.WriteByte(s[i+1])
			}
			i += 2
		case plainWordByte(c):
			b.WriteByte(c)
			i++
		default:
			return "", false
		}
	}
	return b.String(), true
}

// plainWordByte reports whether c stands for itself outside quotes.
func plainWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-_./:=@%+,", c) >= 0 || c >= 0x80
}

// orNil is s, or nil (no field) when s is empty.
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// exitText is the statusText of a command that exited with code n.
func exitText(n int) string { return "exit " + strconv.Itoa(n) }
