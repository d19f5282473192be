package itemmap

import (
	"bytes"
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
)

// Tool names of codex items, in the panel and in the history.
const (
	codexShellTool = "shell"
	codexPatchTool = "apply_patch"
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
	e.args = jsonObject("command", cmd)
	m.show(e, archive.TypeTool, r, "name", codexShellTool, "summary", summary,
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
	m.show(e, archive.TypeTool, r, "name", codexPatchTool, "summary", firstLine(strings.Join(paths, ", ")),
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
	m.show(e, archive.TypeTool, r, "name", name, "summary", summary,
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
	m.show(e, archive.TypeWebSearch, r, "query", query, "status", status, "results", []any{})
	e.finished = completed
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
