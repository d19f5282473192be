package itemmap

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
)

// ExecCall tells the mapper that the exec tool item id (its codex item id
// in this turn) ran the model's call callID, as codex's own log of the
// thread shows (an apply_patch call whose files are the item's). ExecHistory
// pairs them so.
func (m *Codex) ExecCall(id, callID string) {
	if id == "" || callID == "" {
		return
	}
	t := m.ensureTurn()
	if e := t.byID[id]; e != nil {
		e.execCall = callID
		return
	}
	if t.execCalls == nil {
		t.execCalls = make(map[string]string)
	}
	t.execCalls[id] = callID
}

// rolloutStep is one item of the model's conversation in codex's log of a
// thread: an assistant message, a tool call or a tool's output.
type rolloutStep struct {
	text string   // a message's text
	rc   *rawCall // a call's or an output's
	out  bool     // the output of rc
	e    *codexEntry
}

// ExecHistory rebuilds the history of the exec turn that ended last (end)
// from the model's own items of that turn, as codex's log of the thread
// (CODEX_HOME/sessions/…/rollout-…-THREAD.jsonl) holds them: items are the
// payloads of its response_item lines for the turn, in order. Each tool
// call the model made is then in the history as it produced it (its name,
// call_id, arguments or input byte for byte) and its result is the output
// codex sent back to the model, in the order they were sent, as on the
// app-server transport (see Codex); the assistant's text is the text the
// turn showed. An exec tool item the log has no call for stays in the
// neutral form, before the next step of the turn the log has; missing
// counts them. ok is false when end is not the end of the turn that ended
// last.
func (m *Codex) ExecHistory(end *TurnEnd, items [][]byte) (history []archive.Message, missing int, ok bool) {
	t := m.last
	if t == nil || end == nil || t.end != end {
		return nil, 0, false
	}
	var steps []rolloutStep
	byCall := make(map[string]*rawCall)
	call := func(id string) *rawCall {
		rc := byCall[id]
		if rc == nil {
			rc = &rawCall{id: id}
			byCall[id] = rc
		}
		return rc
	}
	for _, b := range items {
		it := gjson.ParseBytes(b)
		callID := it.Get("call_id").String()
		switch typ := it.Get("type").String(); typ {
		case "message":
			if it.Get("role").String() != "assistant" {
				continue
			}
			var parts []string
			for _, c := range it.Get("content").Array() {
				if c.Get("type").String() == "output_text" {
					parts = append(parts, c.Get("text").String())
				}
			}
			if text := strings.Join(parts, ""); text != "" {
				steps = append(steps, rolloutStep{text: text})
			}
		case "function_call", "custom_tool_call", "local_shell_call":
			if callID == "" || call(callID).hasCall {
				continue
			}
			rc := call(callID)
			rc.hasCall, rc.name = true, it.Get("name").String()
			switch typ {
			case "function_call":
				rc.args = it.Get("arguments").String()
			case "custom_tool_call":
				rc.args = it.Get("input").String()
			default:
				rc.name, rc.args = "local_shell", it.Get("action").Raw
			}
			if ns := it.Get("namespace").String(); ns != "" {
				rc.namespace = ns
			}
			steps = append(steps, rolloutStep{rc: rc})
		case "function_call_output", "custom_tool_call_output":
			if callID == "" || call(callID).hasOutput {
				continue
			}
			rc := call(callID)
			out := it.Get("output")
			text := out.Raw
			if out.Type == gjson.String {
				text = out.String()
			}
			var images []Image
			if out.IsArray() {
				if tx, ims, ok := outputImages(out); ok {
					text, images = tx, ims
				}
			}
			rc.hasOutput, rc.output, rc.images = true, text, images
			steps = append(steps, rolloutStep{rc: rc, out: true})
		}
	}
	// An output whose call is not in the items (the log's part read began
	// after it) has no place: left out, as the call is.
	kept := steps[:0]
	for _, s := range steps {
		if s.rc == nil || s.rc.hasCall {
			kept = append(kept, s)
		}
	}
	steps = kept

	// Pair the turn's messages and tool items with the log's, in order.
	at := make(map[*codexEntry]int) // an entry's step in the log
	next := 0                       // messages are paired in order
	used := make(map[*rawCall]bool)
	for _, e := range t.entries {
		e.rc = nil
		switch {
		case e.kind == codexMessage && e.logged:
			for i := next; i < len(steps); i++ {
				if steps[i].rc == nil && steps[i].text == e.text {
					steps[i].e, at[e], next = e, i, i+1
					break
				}
			}
		case e.tool != "":
			if i := t.pairCall(e, steps, used); i >= 0 {
				rc := steps[i].rc
				used[rc] = true
				e.rc, rc.entry, at[e] = rc, e, i
			}
		}
	}

	// The log's items in order and, before each, the turn's steps the log
	// does not have that came before the first step the log has after
	// them.
	before := make(map[int][]codexStep)
	following := len(steps)
	for _, s := range slices.Backward(t.log) {
		if i, ok := at[s.e]; ok && s.e != nil {
			following = min(following, i)
			continue
		}
		if s.kind == stepRawCall || s.kind == stepRawResult {
			continue // the app-server's: not on exec
		}
		if s.kind == stepCall {
			missing++
		}
		before[following] = append(before[following], s)
	}
	var log []codexStep
	for i := 0; i <= len(steps); i++ {
		slices.Reverse(before[i]) // gathered from the end
		log = append(log, before[i]...)
		if i == len(steps) {
			break
		}
		s := steps[i]
		switch {
		case s.rc == nil && s.e != nil:
			log = append(log, codexStep{e: s.e, kind: stepText})
		case s.rc == nil:
			// A message the turn did not show (its text as shown is
			// kept where the turn had it): left out, so that no text is
			// in the history twice.
		case s.rc.entry != nil && !s.out:
			log = append(log, codexStep{e: s.rc.entry, kind: stepCall})
		case s.rc.entry != nil:
			log = append(log, codexStep{e: s.rc.entry, kind: stepResult})
		case !s.out:
			log = append(log, codexStep{rc: s.rc, kind: stepRawCall})
		default:
			log = append(log, codexStep{rc: s.rc, kind: stepRawResult})
		}
	}
	nt := &codexTurn{entries: t.entries, raw: make(map[string]*rawCall), log: log}
	return nt.history(), missing, true
}

// pairCall finds the log's call that the exec tool item e ran, among the
// calls of steps not used yet, and returns its step (-1 when there is
// none): the call ExecCall named, else the first call of the item's tool
// whose command (a command), tool (an MCP call) or kind (a patch) is the
// item's.
func (t *codexTurn) pairCall(e *codexEntry, steps []rolloutStep, used map[*rawCall]bool) int {
	want := e.execCall
	if want == "" {
		want = t.execCalls[e.id]
	}
	item := gjson.Parse(e.raw)
	for i, s := range steps {
		rc := s.rc
		if rc == nil || s.out || used[rc] {
			continue
		}
		if want != "" {
			if rc.id == want {
				return i
			}
			continue
		}
		switch e.kind {
		case codexCommand:
			if sameCommand(rc, unwrapCommand(item.Get("command").String())) {
				return i
			}
		case codexFiles:
			if rc.name == codexPatchTool {
				return i
			}
		case codexMCP:
			tool, server := item.Get("tool").String(), item.Get("server").String()
			if rc.name == tool && (rc.namespace == "" || strings.Contains(rc.namespace, server)) {
				return i
			}
		}
	}
	return -1
}

// sameCommand reports whether the model's call rc runs cmd (a command
// item's command, without codex's shell wrapper): exec_command's cmd, or
// the shell tools' command (a string, or an argv whose shell wrapper is
// left out).
func sameCommand(rc *rawCall, cmd string) bool {
	args := gjson.Parse(rc.args)
	switch rc.name {
	case "exec_command":
		return args.Get("cmd").String() == cmd
	case "shell_command":
		return args.Get("command").String() == cmd
	case "shell", "local_shell":
		c := args.Get("command")
		if c.Type == gjson.String {
			return c.String() == cmd
		}
		var argv []string
		for _, a := range c.Array() {
			argv = append(argv, a.String())
		}
		if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
			return argv[2] == cmd
		}
		return strings.Join(argv, " ") == cmd
	}
	return false
}
