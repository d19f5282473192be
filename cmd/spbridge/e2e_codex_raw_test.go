package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// TestE2ECodexToolCallBytes: on the app-server transport the saved history
// keeps a tool call as the model produced it (its tool name, call_id and
// argument bytes: odd spacing, key order, escapes) and, as its result, the
// output codex sent back to the model; in both turns of one process.
func TestE2ECodexToolCallBytes(t *testing.T) {
	t.Parallel()
	first := "{ \"yield_time_ms\" :5000,\n  \"cmd\":\"printf 'x  y\\\\n'\\u003e/dev/null;   echo odd\" , \"workdir\":\".\\/\"}"
	second := `{"cmd":"exit 4"   }`
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_e2e_odd", ArgumentsText: first}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Ran it.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_e2e_fails", ArgumentsText: second}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("It failed.")}})
	e.run(nil, "--backend", "codex", "--codex-transport", "app-server", "run the odd one", "and the failing one")
	if e.code != 0 {
		e.fail("exit %d", e.code)
	}
	// What codex sent back to the model, by call_id.
	sent := map[string]string{}
	for _, r := range srv.Requests() {
		gjson.GetBytes(r.Body, "input").ForEach(func(_, it gjson.Result) bool {
			if it.Get("type").String() == "function_call_output" {
				sent[it.Get("call_id").String()] = it.Get("output").String()
			}
			return true
		})
	}
	want := map[string]struct {
		args  string
		isErr bool
	}{"call_e2e_odd": {first, false}, "call_e2e_fails": {second, true}}

	// conversation.json as written, read without spbridge's decoder.
	data, err := os.ReadFile(filepath.Join(e.pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	calls, results := map[string]gjson.Result{}, map[string]gjson.Result{}
	gjson.GetBytes(data, "history").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case archive.BlockToolCall:
				calls[b.Get("id").String()] = b
			case archive.BlockToolResult:
				results[b.Get("callID").String()] = b
			}
			return true
		})
		return true
	})
	for id, w := range want {
		c, r := calls[id], results[id]
		if !c.Exists() || c.Get("arguments").String() != w.args || c.Get("name").String() != "exec_command" {
			e.fail("toolCall %s = %s, want name exec_command and arguments %q", id, c.Raw, w.args)
		}
		if sent[id] == "" || !r.Exists() || r.Get("content").String() != sent[id] || r.Get("toolName").String() != "exec_command" ||
			r.Get("isError").Bool() != w.isErr {
			e.fail("toolResult %s = %s, want content %q (what the API got), isError %v", id, r.Raw, sent[id], w.isErr)
		}
	}
	if len(calls) != 2 || len(results) != 2 {
		e.fail("%d calls, %d results in the history, want 2 each:\n%s", len(calls), len(results), gjson.GetBytes(data, "history").Raw)
	}
	// The panel shows the commands as before.
	got := e.items()
	if !containsStr(got, "tool: shell printf 'x  y\\n'>/dev/null;   echo odd succeeded") || !containsStr(got, "tool: shell exit 4 failed") {
		e.fail("items %q", got)
	}
}
