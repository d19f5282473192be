package itemmap

import (
	"bytes"
	"strings"
	"testing"
)

// deepLines are lines that nest far too deep: validating one recursively
// overflows the stack.
func deepLines() map[string][]byte {
	open := bytes.Repeat([]byte("["), 10<<20)
	return map[string][]byte{
		"brackets":  open,
		"in field":  append([]byte(`{"type":"assistant","a":`), open...),
		"in method": append([]byte(`{"jsonrpc":"2.0","method":"item/started","params":{"item":`), open...),
	}
}

// TestDeepLineSkipped feeds each mapper a 10 MB line of "[" inside a turn:
// the line is skipped with a notice, and the turn goes on.
func TestDeepLineSkipped(t *testing.T) {
	mappers := map[string]struct {
		m      interface{ Line([]byte) Result }
		start  string
		finish string
	}{
		"claude": {NewClaude(SequentialIDs()),
			`{"type":"system","subtype":"init","session_id":"s","model":"m"}`,
			`{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"s"}`},
		"codex": {NewCodex(SequentialIDs()),
			`{"type":"turn.started"}`,
			`{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`},
		"codex app-server": {NewCodexApp(SequentialIDs()),
			`{"jsonrpc":"2.0","method":"turn/started","params":{"turn":{"id":"t"}}}`,
			`{"jsonrpc":"2.0","method":"turn/completed","params":{"turn":{"id":"t","status":"completed"}}}`},
	}
	for name, mm := range mappers {
		mm.m.Line([]byte(mm.start))
		for kind, line := range deepLines() {
			r := mm.m.Line(line)
			if !r.Skipped || len(r.Changes) != 1 || r.End != nil {
				t.Fatalf("%s, %s: %+v", name, kind, r)
			}
			text := r.Changes[0].Item.String("text")
			if !strings.HasPrefix(text, "Skipped a line of ") || !strings.Contains(text, "nested deeper than 1000 levels") {
				t.Errorf("%s, %s: notice %q", name, kind, text)
			}
			checkResult(t, r)
		}
		if r := mm.m.Line([]byte(mm.finish)); r.End == nil || r.End.Status != TurnCompleted {
			t.Errorf("%s: the turn did not go on: %+v", name, r)
		}
	}
}

// TestInvalidObjectNotice: a line that starts as an object and is not JSON
// is skipped with a notice; other lines that are not JSON are skipped
// silently.
func TestInvalidObjectNotice(t *testing.T) {
	for name, m := range map[string]interface{ Line([]byte) Result }{
		"claude": NewClaude(SequentialIDs()), "codex": NewCodex(SequentialIDs()), "codex app-server": NewCodexApp(SequentialIDs()),
	} {
		r := m.Line([]byte(`{"broken":`))
		if !r.Skipped || len(r.Changes) != 1 || !strings.HasSuffix(r.Changes[0].Item.String("text"), "bytes from "+map[string]string{
			"claude": "Claude Code", "codex": "codex", "codex app-server": "codex"}[name]+" that is not valid JSON.") {
			t.Errorf("%s: %+v", name, r)
		}
		if r := m.Line([]byte("plain text")); !r.Skipped || len(r.Changes) != 0 {
			t.Errorf("%s: plain text gave %+v", name, r)
		}
	}
}

// TestDeepToolOutput: text a tool printed that nests too deep is shown as
// text, not read as JSON.
func TestDeepToolOutput(t *testing.T) {
	if validJSON(strings.Repeat("[", 10<<20)) {
		t.Error("validJSON accepts a 10 MB line of [")
	}
	if !validJSON(`{"a":[1]}`) {
		t.Error("validJSON refuses valid JSON")
	}
	if text, detail := codexErrorText(`{"a":` + strings.Repeat("[", 10<<20)); detail != "" || !strings.HasPrefix(text, `{"a":[[[`) {
		t.Errorf("codexErrorText of a deep body = %.20q, %.20q", text, detail)
	}
}
