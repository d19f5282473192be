package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// TestE2ECodexExecHistoryBytes: on the exec transport the saved history
// keeps each tool call as the model made it and, as its result, the output
// codex sent back, as the fake API received them in the next request (the
// call's name, call_id and argument bytes; the plan call exec shows no
// item for), with no notice; and the first turn after a reopen (a new
// spbridge run) sends exactly that history's transcript.
func TestE2ECodexExecHistoryBytes(t *testing.T) {
	t.Parallel()
	odd := "{ \"yield_time_ms\" :5000,\n  \"cmd\":\"printf 'x  y\\\\n'\\u003e/dev/null;   echo odd\" , \"workdir\":\".\\/\"}"
	patch := "*** Begin Patch\n*** Add File: notes.txt\n+a note\n*** End Patch\n"
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Looking first."),
			{Type: "function_call", Name: "exec_command", CallID: "call_odd", ArgumentsText: odd}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch", Input: patch}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "update_plan", CallID: "call_plan", ArgumentsText: `{"plan":[{"step":"look","status":"completed"}] }`}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_fail", ArgumentsText: `{"cmd":"exit 4"   }`}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("All done.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Nothing more.")}})
	e.run(nil, "--backend", "codex", "--codex-transport", "exec", "look around")
	if e.code != 0 {
		e.fail("exit %d", e.code)
	}
	saved := e.conv()
	for _, it := range saved.Items {
		if it.Type() == archive.TypeNotice && !strings.HasPrefix(it.String("text"), "Changed ") {
			e.fail("notice %q", it.String("text"))
		}
	}

	// What the API received: the model's calls and codex's outputs, by
	// call_id, from the last request of the turn (which carries them all).
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests in the first turn, want 5", len(reqs))
	}
	type call struct{ name, args, output string }
	got := map[string]*call{}
	var order []string
	gjson.GetBytes(reqs[4].Body, "input").ForEach(func(_, it gjson.Result) bool {
		id := it.Get("call_id").String()
		switch it.Get("type").String() {
		case "function_call":
			got[id], order = &call{name: it.Get("name").String(), args: it.Get("arguments").String()}, append(order, id)
		case "custom_tool_call":
			got[id], order = &call{name: it.Get("name").String(), args: it.Get("input").String()}, append(order, id)
		case "function_call_output", "custom_tool_call_output":
			if c := got[id]; c != nil {
				c.output = it.Get("output").String()
			}
		}
		return true
	})
	if len(order) != 4 || got["call_odd"] == nil || got["call_odd"].args != odd || got["call_patch"] == nil || got["call_patch"].args != patch {
		t.Fatalf("the API received calls %v", order)
	}

	// conversation.json as written, read without spbridge's decoder.
	data, err := os.ReadFile(filepath.Join(e.pkg, "agent", "conversation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	gjson.GetBytes(data, "history").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case archive.BlockToolCall:
				id := b.Get("id").String()
				calls = append(calls, id)
				if c := got[id]; c == nil || b.Get("name").String() != c.name || b.Get("arguments").String() != c.args {
					e.fail("toolCall %s in the history, the API received %+v", b.Raw, c)
				}
			case archive.BlockToolResult:
				id := b.Get("callID").String()
				if c := got[id]; c == nil || c.output == "" || b.Get("content").String() != c.output || b.Get("isError").Bool() != (id == "call_fail") {
					e.fail("toolResult %s in the history, the API received %+v", b.Raw, c)
				}
			}
			return true
		})
		return true
	})
	if len(calls) != len(order) {
		e.fail("history calls %v, the API received %v", calls, order)
	}
	for i := range calls {
		if calls[i] != order[i] {
			e.fail("history calls %v, the API received %v", calls, order)
		}
	}

	// A reopen: a new codex thread told the history's transcript.
	e.stdout, e.stderr = syncBuffer{}, syncBuffer{}
	e.run(nil, "--backend", "codex", "--codex-transport", "exec", "what now?")
	if e.code != 0 {
		e.fail("second run: exit %d", e.code)
	}
	reqs = srv.Requests()
	want := restoreText(saved) + "what now?"
	if texts := inputTexts(reqs[len(reqs)-1].Body); !containsStr(texts, want) {
		t.Errorf("the reopened turn's user texts:\n%q\nwant one to be\n%q", texts, want)
	}
}
