//go:build linux

package codex

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// execHistoryReplies is the script of the exec_history recording: a turn
// with a message and a command whose arguments have odd bytes, a patch, a
// plan, a failing command and a final message; then a resumed turn with a
// command.
func execHistoryReplies() []fakeapi.ResponsesReply {
	return []fakeapi.ResponsesReply{
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Looking first."),
			{Type: "function_call", Name: "exec_command", CallID: "call_odd", ArgumentsText: oddArgs}}},
		{Items: []fakeapi.OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch", Input: "*** Begin Patch\n*** Add File: notes.txt\n+a note\n*** End Patch\n"}}},
		{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "update_plan", CallID: "call_plan", ArgumentsText: `{"plan":[{"step":"look","status":"completed"}] }`}}},
		{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_fail", ArgumentsText: failArgs}}},
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem("All done.")}},
		{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_second", ArgumentsText: `{"cmd":"echo second"}`}}},
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Second done.")}},
	}
}

// TestE2EExecHistory runs two turns of the real codex exec: each turn's
// history holds the model's own calls (name, call_id, argument bytes, the
// plan call exec shows no tool for) and, as their results, the outputs the
// fake API received, with no notice. With -record it keeps what codex exec
// printed and codex's log of the thread in testdata.
func TestE2EExecHistory(t *testing.T) {
	b, srv := realCodex(t, TransportExec, execHistoryReplies()...)
	// What codex exec prints, through a wrapper.
	stdout := filepath.Join(t.TempDir(), "stdout.jsonl")
	wrapper := filepath.Join(t.TempDir(), "codex")
	os.WriteFile(wrapper, []byte("#!/bin/bash\nset -o pipefail\n'"+b.Opts.Program+"' \"$@\" | tee -a '"+stdout+"'\n"), 0o755)
	b.Opts.Program = wrapper
	var ends []*itemmap.TurnEnd
	var items []archive.Item
	for _, msg := range []string{"look around", "once more"} {
		h := &approver{streaming: make(chan struct{})}
		end := b.Turn(context.Background(), backend.Message{Text: msg}, h)
		if end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %q: %s", msg, end.Status)
		}
		ends = append(ends, end)
		items = append(items, h.items...)
	}
	for _, it := range items {
		if it.Type() == archive.TypeNotice {
			t.Errorf("notice: %s", it.String("text"))
		}
	}
	sent := map[string]string{}
	for _, r := range srv.Requests() {
		gjson.GetBytes(r.Body, "input").ForEach(func(_, it gjson.Result) bool {
			if typ := it.Get("type").String(); typ == "function_call_output" || typ == "custom_tool_call_output" {
				sent[it.Get("call_id").String()] = it.Get("output").String()
			}
			return true
		})
	}
	want := [][]struct{ id, name, args string }{
		{{"call_odd", "exec_command", oddArgs}, {"call_patch", "apply_patch", "*** Begin Patch\n*** Add File: notes.txt\n+a note\n*** End Patch\n"},
			{"call_plan", "update_plan", `{"plan":[{"step":"look","status":"completed"}] }`}, {"call_fail", "exec_command", failArgs}},
		{{"call_second", "exec_command", `{"cmd":"echo second"}`}},
	}
	for n, end := range ends {
		checkExecHistory(t, end.History, want[n], sent)
	}
	if !*record {
		return
	}
	work, home := b.Opts.Dir, b.codexHomeDir()
	keepExecRecording(t, stdout, home, "testdata/exec_history", func(data []byte) []byte {
		data = bytes.ReplaceAll(data, []byte(home), []byte("/home/dev/capture/codex-home"))
		return bytes.ReplaceAll(data, []byte(work), []byte(captureWork))
	})
}

// keepExecRecording writes a recorded codex exec run as dst.stdout.jsonl
// (its output, read from stdout) and dst.rollout.jsonl (the one log of its
// thread under the codex home), each through rewrite.
func keepExecRecording(t *testing.T, stdout, home, dst string, rewrite func([]byte) []byte) {
	t.Helper()
	out, err := os.ReadFile(stdout)
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("session logs: %v", logs)
	}
	rollout, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{dst + ".stdout.jsonl": out, dst + ".rollout.jsonl": rollout} {
		if err := os.WriteFile(name, rewrite(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkExecHistory checks that history has the calls want, in that order,
// each as the model made it, and as its result what the fake API received
// for it (sent, by call_id).
func checkExecHistory(t *testing.T, history []archive.Message, want []struct{ id, name, args string }, sent map[string]string) {
	t.Helper()
	var calls []archive.Block
	results := map[string]archive.Block{}
	for _, m := range history {
		for _, b := range m.Content {
			switch b.Type() {
			case archive.BlockToolCall:
				calls = append(calls, b)
			case archive.BlockToolResult:
				results[b.String("callID")] = b
			}
		}
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls in the history, want %d: %v", len(calls), len(want), history)
	}
	for i, w := range want {
		c := calls[i]
		if c.String("id") != w.id || c.String("name") != w.name || c.String("arguments") != w.args {
			t.Errorf("call %d: %s %s %q, want %s %s %q", i, c.String("id"), c.String("name"), c.String("arguments"), w.id, w.name, w.args)
		}
		r, ok := results[w.id]
		if !ok || sent[w.id] == "" || r.String("content") != sent[w.id] {
			t.Errorf("result of %s: %q, want %q (what the API got)", w.id, r.String("content"), sent[w.id])
		}
		if isErr := r.Bool("isError"); isErr != (w.id == "call_fail") {
			t.Errorf("result of %s: isError %v", w.id, isErr)
		}
	}
}
