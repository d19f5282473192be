//go:build linux

package codex

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// refusedRules is the exec policy of the refused_commands recording: rm is
// forbidden, with the reason codex then gives.
const refusedRules = `prefix_rule(pattern=["rm"], decision="forbidden", justification="deleting files is not allowed here")` + "\n"

// refusedReplies is the script of the refused_commands recording: a
// command the exec policy forbids, one asking to run outside the sandbox,
// a patch writing outside the workspace (all three refused by codex exec
// without running them), a command that runs, and a message.
func refusedReplies(outside string) []fakeapi.ResponsesReply {
	return []fakeapi.ResponsesReply{
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Cleaning up first."),
			{Type: "function_call", Name: "exec_command", CallID: "call_rm", ArgumentsText: `{"cmd":"rm -f notes.txt"}`}}},
		{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_escalate",
			Arguments: map[string]any{"cmd": "touch " + filepath.Join(outside, "escalated.txt"), "sandbox_permissions": "require_escalated", "justification": "Write a file outside the workspace?"}}}},
		{Items: []fakeapi.OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch",
			Input: "*** Begin Patch\n*** Add File: " + filepath.Join(outside, "patched.txt") + "\n+hello\n*** End Patch\n"}}},
		{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_ls", ArgumentsText: `{"cmd":"ls"}`}}},
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Three of them were refused.")}},
	}
}

// TestE2EExecRefused: what the real codex exec refuses without running it
// (a command its exec policy forbids, a command asking to run outside the
// sandbox, a patch writing outside the workspace) shows as denied tool
// items with codex's reasons, in the order of the turn, though codex exec
// --json reports nothing of them: they come from codex's log of the
// thread. Nothing was run or written; the history has the model's calls
// with the refusals the model got as their (error) results. With -record
// it keeps what codex exec printed and codex's log in testdata.
func TestE2EExecRefused(t *testing.T) {
	outside := t.TempDir()
	b, srv := realCodex(t, TransportExec, refusedReplies(outside)...)
	home := b.codexHomeDir()
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "rules", "default.rules"), []byte(refusedRules), 0o600)
	// The temporary folders are outside the workspace.
	config, err := os.OpenFile(filepath.Join(home, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	config.WriteString("\n[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n")
	config.Close()
	os.WriteFile(filepath.Join(b.Opts.Dir, "notes.txt"), []byte("keep me\n"), 0o644)
	// What codex exec prints, through a wrapper.
	stdout := filepath.Join(t.TempDir(), "stdout.jsonl")
	wrapper := filepath.Join(t.TempDir(), "codex")
	os.WriteFile(wrapper, []byte("#!/bin/bash\nset -o pipefail\n'"+b.Opts.Program+"' \"$@\" | tee -a '"+stdout+"'\n"), 0o755)
	b.Opts.Program = wrapper

	h := &approver{streaming: make(chan struct{})}
	end := b.Turn(context.Background(), backend.Message{Text: "tidy up"}, h)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn: %s", end.Status)
	}
	var got []string
	for _, it := range h.items {
		s := it.Type() + ": " + it.String("text")
		if it.Type() == archive.TypeTool {
			s = it.Type() + ": " + it.String("name") + " " + it.String("summary") + " [" + it.String("status") + "] " + it.String("statusText")
		}
		got = append(got, s)
	}
	want := []string{
		"user: tidy up",
		"assistant: Cleaning up first.",
		"tool: shell rm -f notes.txt [denied] deleting files is not allowed here",
		"tool: shell touch " + filepath.Join(outside, "escalated.txt") + " [denied] it asked to run outside the sandbox, which codex exec cannot approve",
		"tool: apply_patch " + filepath.Join(outside, "patched.txt") + " [denied] writing outside of the project; rejected by user approval settings",
		"tool: shell ls [succeeded] exit 0",
		"assistant: Three of them were refused.",
	}
	// The user's item is the session's, not the backend's.
	if len(got) > 0 && !strings.HasPrefix(got[0], "user: ") {
		want = want[1:]
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("items:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, it := range h.items {
		if it.String("status") == archive.StatusDenied && !strings.Contains(it.String("detail"), "refused by codex:\n") {
			t.Errorf("denied item's detail: %q", it.String("detail"))
		}
	}
	if data, err := os.ReadFile(filepath.Join(b.Opts.Dir, "notes.txt")); err != nil || string(data) != "keep me\n" {
		t.Errorf("notes.txt: %q, %v", data, err)
	}
	for _, f := range []string{"escalated.txt", "patched.txt"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	// The history: the model's calls, each with what the model got back.
	sent := map[string]string{}
	for _, r := range srv.Requests() {
		gjson.GetBytes(r.Body, "input").ForEach(func(_, it gjson.Result) bool {
			if typ := it.Get("type").String(); typ == "function_call_output" || typ == "custom_tool_call_output" {
				sent[it.Get("call_id").String()] = it.Get("output").String()
			}
			return true
		})
	}
	results := map[string]archive.Block{}
	var calls []string
	for _, msg := range end.History {
		for _, blk := range msg.Content {
			switch blk.Type() {
			case archive.BlockToolCall:
				calls = append(calls, blk.String("id"))
			case archive.BlockToolResult:
				results[blk.String("callID")] = blk
			}
		}
	}
	if strings.Join(calls, " ") != "call_rm call_escalate call_patch call_ls" {
		t.Errorf("history calls %q", calls)
	}
	for _, id := range []string{"call_rm", "call_escalate", "call_patch"} {
		r := results[id]
		if _, ok := itemmap.CodexRefusal(sent[id]); !ok || r.String("content") != sent[id] || !r.Bool("isError") {
			t.Errorf("result of %s: %q (error %v), the model got %q", id, r.String("content"), r.Bool("isError"), sent[id])
		}
	}
	if !*record {
		return
	}
	keepExecRecording(t, stdout, home, "../../testdata/codex/exec/refused_commands", func(data []byte) []byte {
		data = bytes.ReplaceAll(data, []byte(home), []byte("/home/dev/capture/codex-home"))
		data = bytes.ReplaceAll(data, []byte(outside), []byte("/home/dev/capture/outside"))
		return bytes.ReplaceAll(data, []byte(b.Opts.Dir), []byte(captureWork))
	})
}
