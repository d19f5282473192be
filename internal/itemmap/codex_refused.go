package itemmap

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/jsonline"
)

// A command or patch that codex exec refuses without running it — its exec
// policy forbids it (a rules file's decision "forbidden"), or it needs an
// approval that exec cannot ask for (a "prompt" rule, a call asking to run
// outside the sandbox, a patch writing outside the workspace: exec runs
// with approval policy never) — gets no item in codex exec's JSON: neither
// item.started nor item.completed. Only codex's own log of the thread
// (CODEX_HOME/sessions/…/rollout-…-THREAD.jsonl) has it: the model's call,
// then the refusal codex sent back to the model as the call's output.
// ExecLog reads that log as codex writes it and shows each refused call as
// a tool item with status denied and codex's reason.

// loggedCall is a tool call of the model, as codex's log of an exec thread
// has it.
type loggedCall struct {
	name, args string // the tool and its arguments (a custom tool's input)
	done       bool   // its output was seen
}

// Codex's refusals, as codex 0.169.0 words the output it sends back to the
// model for a call it did not run.
const (
	// A command its exec policy refused: "exec_command failed: CreateProcess
	// { message: "Rejected(\"REASON\")" }", REASON being "`CMD` rejected:
	// WHY" or "approval required by policy, but AskForApproval is set to
	// Never" (both Rust debug strings, one inside the other).
	refusedCreate = ` failed: CreateProcess { message: `
	// A command that asked to run outside the sandbox.
	refusedEscalation = "approval policy is Never; reject command"
	// A patch: "patch rejected: WHY".
	refusedPatch = "patch rejected: "
)

// CodexRefusal reports whether output, the output codex exec sent back to
// the model for a tool call, says codex refused to run the call, and why
// (without the command, which the call names already).
func CodexRefusal(output string) (reason string, ok bool) {
	switch {
	case strings.HasPrefix(output, refusedPatch):
		return strings.TrimSpace(output[len(refusedPatch):]), true
	case strings.HasPrefix(output, refusedEscalation):
		return strings.TrimSpace(output), true
	}
	i := strings.Index(output, refusedCreate)
	if i < 0 || strings.ContainsAny(output[:i], " \n") {
		return "", false
	}
	msg, ok := rustString(output[i+len(refusedCreate):])
	if !ok {
		return "", false
	}
	inner, ok := strings.CutPrefix(msg, "Rejected(")
	if !ok {
		return "", false
	}
	reason, ok = rustString(inner)
	if !ok {
		return "", false
	}
	// "`CMD` rejected: WHY": the command is the call's.
	if strings.HasPrefix(reason, "`") {
		if j := strings.Index(reason, "` rejected: "); j > 0 {
			reason = reason[j+len("` rejected: "):]
		}
	}
	return strings.TrimSpace(reason), reason != ""
}

// rustString reads the Rust debug-formatted string that s starts with ("…",
// with \" \\ \n \t \r \' \0 and \u{…} escapes) and returns its text.
func rustString(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), true
		case '\\':
			i++
			if i >= len(s) {
				return "", false
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'u':
				end := strings.IndexByte(s[i:], '}')
				if !strings.HasPrefix(s[i:], "u{") || end < 0 {
					return "", false
				}
				n, err := strconv.ParseUint(s[i+2:i+end], 16, 32)
				if err != nil {
					return "", false
				}
				b.WriteRune(rune(n))
				i += end
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// ExecLog reads one line of codex's own log of the exec thread (a rollout
// line, as codex wrote it during the turn) and shows a command or patch
// codex refused without running it as a denied tool item: its command (or
// files) as summary, codex's reason as statusText (its first line) and
// detail. The item runs the model's call (ExecHistory pairs them by the
// call's id), whose result is the refusal as the model got it. Give each
// line of the turn's part of the log once, in order, as codex writes them
// (lines before the turn's must not be given; lines given before the turn
// starts wait for it).
//
// The items keep the turn's order though codex may log a refusal before
// codex exec prints the message the model wrote before the call: the log
// is read up to its first assistant message that codex exec has not
// printed yet, and the lines after it wait until it has (or the turn
// ends).
func (m *Codex) ExecLog(line []byte) Result {
	var r Result
	if !bytes.Contains(line, []byte(`"response_item"`)) || jsonline.TooDeep(line) || !gjson.ValidBytes(line) {
		return r
	}
	if gjson.GetBytes(line, "type").String() != "response_item" {
		return r
	}
	line = bytes.Clone(line)
	t := m.turn
	if t == nil || len(t.logWaiting) > 0 {
		m.logWait(line, &r)
		return r
	}
	m.logLine(line, false, &r)
	return r
}

// maxLogWaiting is the most bytes of log lines that wait for codex exec's
// output; beyond it they are read as they are.
const maxLogWaiting = 16 << 20

// logWait keeps line until the turn starts (m.preLog) or codex exec prints
// the message the waiting lines follow (the turn's logWaiting).
func (m *Codex) logWait(line []byte, r *Result) {
	if m.turn == nil {
		if m.preLogSize+len(line) <= maxLogWaiting {
			m.preLog = append(m.preLog, line)
			m.preLogSize += len(line)
		}
		return
	}
	t := m.turn
	t.logWaiting = append(t.logWaiting, line)
	t.logWaitSize += len(line)
	if t.logWaitSize > maxLogWaiting {
		m.drainLog(true, r)
	}
}

// drainLog reads the log lines that wait: those given before the turn
// started, then those after an assistant message codex exec had not
// printed, up to the next such message; all of them when force is set
// (the turn ends).
func (m *Codex) drainLog(force bool, r *Result) {
	t := m.turn
	if t == nil {
		return
	}
	if len(m.preLog) > 0 {
		t.logWaiting = append(m.preLog, t.logWaiting...)
		t.logWaitSize += m.preLogSize
		m.preLog, m.preLogSize = nil, 0
	}
	for len(t.logWaiting) > 0 {
		line := t.logWaiting[0]
		if !m.logLine(line, force, r) {
			return
		}
		t.logWaiting[0] = nil
		t.logWaiting = t.logWaiting[1:]
		t.logWaitSize -= len(line)
	}
	t.logWaiting, t.logWaitSize = nil, 0
}

// logLine reads one response_item line of the log in a turn. It reports
// false, reading nothing, for an assistant message codex exec has not
// printed yet (unless force is set): the line must wait.
func (m *Codex) logLine(line []byte, force bool, r *Result) bool {
	t := m.turn
	p := gjson.GetBytes(line, "payload")
	callID := p.Get("call_id").String()
	switch p.Get("type").String() {
	case "message":
		if p.Get("role").String() != "assistant" {
			return true
		}
		if !force && t.logMsgs >= t.shownMsgs {
			if len(t.logWaiting) == 0 {
				t.logWaiting = [][]byte{line}
				t.logWaitSize = len(line)
			}
			return false
		}
		t.logMsgs++
	case "function_call":
		name, args := p.Get("name").String(), p.Get("arguments").String()
		if name == codexPatchTool {
			args = gjson.Get(args, "input").String()
		}
		t.logCall(callID, name, args)
	case "custom_tool_call":
		t.logCall(callID, p.Get("name").String(), p.Get("input").String())
	case "local_shell_call":
		t.logCall(callID, "local_shell", p.Get("action").Raw)
	case "function_call_output", "custom_tool_call_output":
		c := t.logged[callID]
		out := p.Get("output")
		if c == nil || c.done || out.Type != gjson.String {
			return true
		}
		c.done = true
		if reason, ok := CodexRefusal(out.String()); ok {
			m.refused(callID, c, out.String(), reason, r)
		}
	}
	return true
}

// logCall notes a call of the log, the first time its id is seen.
func (t *codexTurn) logCall(callID, name, args string) {
	if callID == "" {
		return
	}
	if t.logged == nil {
		t.logged = make(map[string]*loggedCall)
	}
	if t.logged[callID] == nil {
		t.logged[callID] = &loggedCall{name: name, args: args}
	}
}

// refused shows the call callID, which codex refused with output (reason
// read from it), as a denied tool item.
func (m *Codex) refused(callID string, c *loggedCall, output, reason string, r *Result) {
	t := m.turn
	e := &codexEntry{id: "refused:" + callID, execCall: callID}
	var v *ToolView
	var name, summary string
	var detail []string
	if c.name == codexPatchTool {
		changes := []refusedChange{}
		var paths []string
		for _, f := range patchFiles(c.args) {
			changes = append(changes, refusedChange{Path: f[1], Kind: f[0]})
			paths = append(paths, f[1])
			detail = append(detail, f[0]+" "+f[1])
		}
		if len(detail) > 0 {
			detail = []string{"changes:\n" + truncate(strings.Join(detail, "\n"), maxDetailOutput)}
		}
		e.kind, name, summary = codexFiles, codexPatchTool, firstLine(strings.Join(paths, ", "))
		js := encodeJSON(changes)
		e.args = `{"changes":` + js + `}`
		v = m.changeView(gjson.Parse(js))
	} else {
		cmd, ok := loggedCommand(c)
		if !ok {
			return // not a command: codex's refusals are of commands and patches
		}
		e.kind, name, summary = codexCommand, codexShellTool, firstLine(cmd)
		if summary != cmd {
			detail = append(detail, "command:\n"+truncate(cmd, maxDetailArgs))
		}
		e.args = jsonObject("command", cmd)
		v = commandView(cmd, "")
	}
	detail = append(detail, "refused by codex:\n"+truncate(reason, maxDetailOutput))
	t.byID[e.id] = e
	t.entries = append(t.entries, e)
	m.showTool(e, archive.TypeTool, r, v, "name", name, "summary", summary,
		"status", archive.StatusDenied, "statusText", refusalText(reason), "detail", strings.Join(detail, "\n\n"))
	m.startTool(e, name)
	m.endTool(e, output, true)
}

// refusalText is a refusal's reason as a tool's statusText: one line, and
// codex's two refusals for want of an approval said as what happened
// (codex's own words stay in the detail).
func refusalText(reason string) string {
	switch {
	case strings.HasPrefix(reason, refusedEscalation):
		return "it asked to run outside the sandbox, which codex exec cannot approve"
	case reason == "approval required by policy, but AskForApproval is set to Never":
		return "its exec policy asks for an approval, which codex exec cannot give"
	}
	return firstLine(reason)
}

// loggedCommand is the command a shell tool's call runs (exec_command's
// cmd, shell_command's command, shell's and local_shell's argv without
// the shell around it).
func loggedCommand(c *loggedCall) (string, bool) {
	args := gjson.Parse(c.args)
	switch c.name {
	case "exec_command":
		cmd := args.Get("cmd")
		return cmd.String(), cmd.Type == gjson.String
	case "shell_command":
		cmd := args.Get("command")
		return cmd.String(), cmd.Type == gjson.String
	case "shell", "local_shell":
		cmd := args.Get("command")
		if cmd.Type == gjson.String {
			return cmd.String(), true
		}
		var argv []string
		for _, a := range cmd.Array() {
			argv = append(argv, a.String())
		}
		if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
			return argv[2], true
		}
		return strings.Join(argv, " "), len(argv) > 0
	}
	return "", false
}

// patchFiles lists the files of a patch in codex's format, each as its
// kind (add, delete, update) and path as the patch names it.
func patchFiles(patch string) [][2]string {
	var out [][2]string
	for l := range strings.SplitSeq(patch, "\n") {
		l = strings.TrimSuffix(l, "\r")
		for _, h := range [][2]string{{"*** Add File: ", "add"}, {"*** Delete File: ", "delete"}, {"*** Update File: ", "update"}} {
			if p, ok := strings.CutPrefix(l, h[0]); ok && strings.TrimSpace(p) != "" {
				out = append(out, [2]string{h[1], strings.TrimSpace(p)})
			}
		}
	}
	return out
}

// refusedChange is one file of a refused patch, as an exec file_change item
// names it.
type refusedChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// encodeJSON encodes v without escaping <, > and &.
func encodeJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
