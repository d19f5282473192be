package claude

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
	"spbridge/internal/restore"
)

// claudeImport maps a Claude Code session file. Its user and assistant
// lines are those of `claude -p --output-format stream-json` (the
// assistant's API message one content block a line, the tool results as
// user lines), so they go through the same mapper as a live turn; what the
// stream has and the file does not (a turn's result) is made from the
// file: a turn ends where the user's next message begins, with the usage
// of its API messages and the cost Claude Code recorded after it.
//
// Lines of a subagent (isSidechain) and the CLI's bookkeeping
// (attachments, queue operations, request logs, cost and mode records,
// titles) show nothing. A slash command the user typed shows as their
// message; its output (local-command-stdout) and a compaction as notices.
type claudeImport struct {
	newID itemmap.IDFunc
	rep   *history.Report
	m     *itemmap.Claude
	conv  *archive.Conversation
	turn  history.Turn
	// usage is the turn's API messages' usage, the last line of each
	// message id, in order.
	usage    map[string]archive.Usage
	usageIDs []string
	cost     string // the totalCostUSD Claude Code recorded last in the turn
	lastStop string // the stop_reason of the turn's last assistant line, "" after a tool result
	// agentCalls are the ids of the subagent calls (Agent, Task) seen.
	agentCalls map[string]bool
	// compacted is the notice of a compaction not shown yet: it goes
	// after the /compact that asked for it.
	compacted    string
	afterCompact bool // the user's last line was /compact
	// doc is the line being read, sub a subagent's: their values borrow
	// the lines' bytes, what is kept is copied (String, Raw).
	doc, sub jsonline.Doc
}

func newClaudeImport(newID itemmap.IDFunc, rep *history.Report) *claudeImport {
	return &claudeImport{newID: newID, rep: rep, m: itemmap.NewClaude(newID), conv: &archive.Conversation{},
		usage: map[string]archive.Usage{}, agentCalls: map[string]bool{}}
}

// claudeQuiet are the kinds of Claude Code's lines that show nothing.
var claudeQuiet = map[string]bool{
	"attachment": true, "queue-operation": true, "last-prompt": true, "atis-latch": true,
	"api-request": true, "api-request-shape": true, "api-request-blob": true, "tools-used": true,
	"mode": true, "summary": true, "custom-title": true, "ai-title": true, "file-history-snapshot": true,
	"progress": true, "tag": true, "agent-name": true, "pr-link": true, "permission-mode": true,
	"worktree-state": true, "content-replacement": true,
}

func (ci *claudeImport) Line(line []byte) bool {
	v, ok := parseObject(&ci.doc, line)
	if !ok {
		return false
	}
	l := readClaudeLine(v)
	// The last id the file names: a session that resumed another begins
	// with the other's lines.
	if l.sessionID != "" {
		ci.rep.ID = l.sessionID
	}
	if ci.rep.Cwd == "" {
		ci.rep.Cwd = l.cwd
	}
	switch typ := l.typ; {
	case claudeQuiet[typ]:
		return true
	case typ == "cost-state":
		if l.cost.Type() == gjson.Number {
			ci.cost = l.cost.Raw()
		}
		return true
	case typ == "system":
		ci.system(l)
		return true
	case typ == "user":
		if !l.sidechain {
			ci.user(l, line)
		}
		return true
	case typ == "assistant":
		if !l.sidechain {
			ci.assistant(l, line)
		}
		return true
	}
	return false
}

func (ci *claudeImport) system(l *claudeLine) {
	if l.subtype != "compact_boundary" {
		return
	}
	ci.flushCompacted()
	ci.compacted = "Claude Code compacted the conversation."
	if l.compactMetadata.Get("trigger").String() == "auto" {
		ci.compacted = "Claude Code compacted the conversation (its context was full)."
	}
}

// flushCompacted shows the notice of a compaction not shown yet.
func (ci *claudeImport) flushCompacted() {
	if ci.compacted != "" {
		ci.notice(ci.compacted)
		ci.compacted = ""
	}
}

func (ci *claudeImport) notice(text string) {
	ci.conv.Items = append(ci.conv.Items, archive.ItemFromMap(map[string]any{"id": ci.newID(), "type": archive.TypeNotice, "text": text}))
}

var (
	commandName   = regexp.MustCompile(`<command-name>([^<]*)</command-name>`)
	commandArgs   = regexp.MustCompile(`(?s)<command-args>(.*?)</command-args>`)
	commandStdout = regexp.MustCompile(`(?s)<local-command-stdout>(.*?)</local-command-stdout>`)
)

func (ci *claudeImport) user(l *claudeLine, line []byte) {
	if text, ok := claudePrompt(l); ok {
		ci.endTurn()
		ci.flushCompacted()
		ci.begin(text, l)
		return
	}
	content := l.message.Get("content")
	var text string
	if !content.IsArray() {
		text = content.String()
	} else {
		for _, b := range content.Array() {
			if b.Get("type").String() == "text" {
				text += b.Get("text").String()
			}
		}
	}
	switch {
	case l.compactSummary || l.meta:
		return
	case commandName.MatchString(text):
		// A slash command the user typed: their message, which went to
		// the CLI rather than the model.
		ci.endTurn()
		cmd := commandName.FindStringSubmatch(text)[1]
		if a := commandArgs.FindStringSubmatch(text); a != nil && strings.TrimSpace(a[1]) != "" {
			cmd += " " + strings.TrimSpace(a[1])
		}
		it := archive.ItemFromMap(map[string]any{"id": ci.newID(), "type": archive.TypeUser, "text": cmd})
		ci.conv.Items = append(ci.conv.Items, it)
		ci.rep.Turns++
		compacted := ci.compacted != ""
		ci.flushCompacted()
		ci.turn.First = len(ci.conv.Items)
		ci.afterCompact = compacted
		return
	case commandStdout.MatchString(text):
		out := strings.TrimSpace(commandStdout.FindStringSubmatch(text)[1])
		if out != "" && !(ci.afterCompact && strings.HasPrefix(out, "Compacted")) {
			ci.notice(out)
		}
		ci.afterCompact = false
		return
	}
	if !content.IsArray() {
		return // a task notification, a reminder: the CLI's own message
	}
	ci.lastStop = ""
	ci.flushCompacted()
	for _, b := range content.Array() {
		if id := b.Get("tool_use_id").String(); b.Get("type").String() == "tool_result" && ci.agentCalls[id] {
			ci.subagent(id, l.toolUseResult.Get("agentId").String())
		}
	}
	ci.feed(renameKey(line, l.toolUseResult, "toolUseResult", "tool_use_result"))
}

// subagent feeds the lines of the subagent that call id ran (its file,
// subagents/agent-<agent>.jsonl beside the session's) to the mapper as
// the stream gives a subagent's lines, before the call's result: its
// calls show under the call, and stay out of the history.
func (ci *claudeImport) subagent(id, agent string) {
	delete(ci.agentCalls, id)
	if agent == "" || strings.ContainsAny(agent, `/\.`) {
		return
	}
	dir := strings.TrimSuffix(ci.rep.Path, ".jsonl")
	f, size, err := history.OpenRegular(filepath.Join(dir, "subagents", "agent-"+agent+".jsonl"))
	if err != nil {
		return
	}
	defer f.Close()
	prefix := []byte(`{"parent_tool_use_id":` + strconv.Quote(id) + `,`)
	lr := history.NewLineReader(io.NewSectionReader(f, 0, size))
	for {
		line, ok := lr.Next()
		if !ok {
			return
		}
		line = bytes.TrimSpace(line)
		v, ok := parseObject(&ci.sub, line)
		if !ok {
			continue
		}
		l := readClaudeLine(v)
		if l.typ != "assistant" && l.typ != "user" {
			continue
		}
		if l.typ == "user" {
			line = renameKey(line, l.toolUseResult, "toolUseResult", "tool_use_result")
		}
		ci.feed(append(slices.Clone(prefix), line[1:]...))
	}
}

// begin starts a turn with the user's message text (and the images of the
// line's content).
func (ci *claudeImport) begin(text string, l *claudeLine) {
	ci.rep.Turns++
	msg := archive.Message{Role: "user"}
	full := ""
	var images []archive.Block
	if c := l.message.Get("content"); c.Type() == gjson.String {
		full = c.String()
	} else {
		var parts []string
		for _, b := range c.Array() {
			switch b.Get("type").String() {
			case "text":
				parts = append(parts, b.Get("text").String())
			case "image":
				data, err := base64.StdEncoding.DecodeString(b.Get("source.data").View())
				if err != nil || b.Get("source.type").String() != "base64" {
					continue
				}
				if ib, err := archive.NewImageBlock(b.Get("source.media_type").String(), data); err == nil {
					images = append(images, ib)
				}
			}
		}
		full = strings.Join(parts, "\n\n")
	}
	// A session spbridge began after a reopen: the CLI was told the
	// conversation so far before the user's words, which alone are kept.
	full, _ = restore.Split(full)
	if text == "[image]" && full == "" {
		text = ""
	} else {
		text = full
	}
	msg.Content = append([]archive.Block{archive.NewTextBlock(text)}, images...)
	it := archive.ItemFromMap(map[string]any{"id": ci.newID(), "type": archive.TypeUser, "text": text})
	if len(images) > 0 {
		it.Set("hasImage", true)
	}
	ci.conv.Items = append(ci.conv.Items, it)
	ci.turn = history.Turn{User: &msg, First: len(ci.conv.Items), Active: true}
}

func (ci *claudeImport) assistant(l *claudeLine, line []byte) {
	msg := l.message
	if model := msg.Get("model").String(); model != "" && model != "<synthetic>" {
		ci.turn.Model = model
	}
	if id := msg.Get("id").String(); id != "" && msg.Get("usage").IsObject() {
		if _, seen := ci.usage[id]; !seen {
			ci.usageIDs = append(ci.usageIDs, id)
		}
		ci.usage[id] = apiUsage(msg.Get("usage"))
	}
	ci.lastStop = msg.Get("stop_reason").String()
	ci.turn.Active = true
	ci.flushCompacted()
	for _, c := range msg.Get("content").Array() {
		if c.Get("type").String() == "tool_use" && (c.Get("name").String() == "Agent" || c.Get("name").String() == "Task") {
			ci.agentCalls[c.Get("id").String()] = true
		}
	}
	ci.feed(renameKey(line, l.apiError, "isApiErrorMessage", "is_api_error_message"))
}

// apiUsage reads an Anthropic API usage object.
func apiUsage(u jsonline.Value) archive.Usage {
	n := func(key string) json.Number {
		if x := u.Get(key); x.Type() == gjson.Number {
			return json.Number(x.Raw())
		}
		return ""
	}
	return archive.Usage{Input: n("input_tokens"), Output: n("output_tokens"),
		CacheRead: n("cache_read_input_tokens"), CacheWrite: n("cache_creation_input_tokens")}
}

func (ci *claudeImport) feed(line []byte) {
	r := ci.m.Line(line)
	history.ApplyResult(ci.conv, r)
	if r.End != nil {
		history.EndTurn(ci.conv, &ci.turn, r.End, Provider)
	}
}

// endTurn ends the turn in progress: completed when the model's last
// message ended it, interrupted when it stopped in the middle (a tool
// without its result, a result the model never answered).
func (ci *claudeImport) endTurn() {
	if !ci.turn.Active && !ci.m.InTurn() && ci.turn.User == nil {
		return
	}
	var usage, last archive.Usage
	for _, id := range ci.usageIDs {
		usage = usage.Add(ci.usage[id])
	}
	if n := len(ci.usageIDs); n > 0 {
		// The turn's last request: its last assistant message's usage,
		// as the file recorded it.
		last = ci.usage[ci.usageIDs[n-1]]
	}
	var r itemmap.Result
	switch ci.lastStop {
	case "end_turn", "stop_sequence", "max_tokens", "refusal":
		res := map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": ci.rep.ID,
			"usage": map[string]any{"input_tokens": num(usage.Input), "output_tokens": num(usage.Output),
				"cache_read_input_tokens": num(usage.CacheRead), "cache_creation_input_tokens": num(usage.CacheWrite)}}
		if ci.cost != "" {
			res["total_cost_usd"] = json.Number(ci.cost)
		}
		line, _ := json.Marshal(res)
		r = ci.m.Line(line)
	default:
		r = ci.m.Finish(true, "", "")
	}
	history.ApplyResult(ci.conv, r)
	if r.End != nil {
		if len(ci.usageIDs) > 0 {
			// The file's usage rules: the mapper's own count of an
			// unfinished turn reads streamed events a file does not hold.
			cost := r.End.Usage.ReportedCost
			r.End.Usage, r.End.LastRound = usage, last
			r.End.Usage.ReportedCost = cost
		}
		history.EndTurn(ci.conv, &ci.turn, r.End, Provider)
	} else if ci.turn.User != nil {
		history.EndTurn(ci.conv, &ci.turn, &itemmap.TurnEnd{Status: itemmap.TurnInterrupted, Usage: usage, LastRound: last}, Provider)
	}
	ci.turn = history.Turn{First: len(ci.conv.Items)}
	clear(ci.usage)
	ci.usageIDs, ci.cost, ci.lastStop = nil, "", ""
}

func num(n json.Number) json.Number {
	if n == "" {
		return "0"
	}
	return n
}

func (ci *claudeImport) Finish() *archive.Conversation {
	ci.endTurn()
	ci.flushCompacted()
	return ci.conv
}

// renameKey returns line with its top-level key from (whose value is val)
// renamed to, as the stream-json lines the mapper reads name it; line
// itself when it has no such key.
func renameKey(line []byte, val jsonline.Value, from, to string) []byte {
	if !val.Exists() || val.Offset() <= 0 {
		return line
	}
	key := []byte(`"` + from + `"`)
	// The key ends before the value, past a colon and spaces.
	i := val.Offset() - 1
	for i > 0 && (line[i] == ' ' || line[i] == ':' || line[i] == '\t') {
		i--
	}
	start := i + 1 - len(key)
	if start < 0 || string(line[start:i+1]) != string(key) {
		return line
	}
	out := make([]byte, 0, len(line)+len(to)-len(from))
	out = append(out, line[:start]...)
	out = append(out, '"')
	out = append(out, to...)
	out = append(out, '"')
	return append(out, line[i+1:]...)
}
