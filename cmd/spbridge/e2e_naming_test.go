package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// cliSessions lists the CLIs' own sessions as the user would, `spbridge
// conversation list --cli --json` in env: each one's id, title and file.
func cliSessions(t *testing.T, env []string, cli string) []map[string]any {
	t.Helper()
	cmd := exec.Command(spbridgeBin(t), "conversation", "list", "--cli", "--backend", cli, "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("conversation list --cli: %v\n%s", err, out)
	}
	var list []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		list = append(list, v)
	}
	return list
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// TestE2EClaudeSessionNamed: the new Claude Code session a reopened
// conversation runs on (begun with "# Conversation so far") is named
// after the conversation in claude's own session file, so that the CLI's
// list of its sessions (claude --resume, spbridge conversation list
// --cli) shows the conversation and not the prefix or the later message.
func TestE2EClaudeSessionNamed(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Noted the zebra."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "You told me about a zebra."}}})
	const title = "remember ZEBRA-7731 please"
	e.run(nil, title)
	if e.code != 0 {
		e.fail("first run: exit %d", e.code)
	}
	e.run(nil, "what did I say?")
	if e.code != 0 {
		e.fail("second run: exit %d", e.code)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 || !strings.HasPrefix(userTexts(reqs[1].Body)[0], "# Conversation so far") {
		t.Fatalf("the second run did not begin a new session told the conversation: %d requests", len(reqs))
	}
	list := cliSessions(t, e.env, "claude")
	if len(list) != 2 {
		t.Fatalf("claude's sessions: %v", list)
	}
	restored := 0
	for _, s := range list {
		if s["title"] != title {
			t.Errorf("session %v is titled %q, want %q", s["id"], s["title"], title)
		}
		data, err := os.ReadFile(s["path"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "# Conversation so far") {
			restored++
			if !strings.Contains(string(data), `"type":"custom-title","customTitle":"`+title+`"`) {
				t.Errorf("the restored session's file %s holds no custom title %q", s["path"], title)
			}
		}
	}
	if restored != 1 {
		t.Errorf("%d of the sessions began with the prefix, want 1", restored)
	}
}

// TestE2ECodexThreadNamed: the new thread the codex app-server runs a
// reopened conversation on is named after the conversation
// (thread/name/set): codex's session_index.jsonl holds the name, and the
// list of its sessions shows it.
func TestE2ECodexThreadNamed(t *testing.T) {
	t.Parallel()
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Noted the heron.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("You said heron.")}})
	const title = "remember the heron"
	for _, text := range []string{title, "what did I say?"} {
		e.run(nil, "--backend", "codex", "--codex-transport", "app-server", text)
		if e.code != 0 {
			e.fail("run %q: exit %d", text, e.code)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.HasPrefix(inputTexts(reqs[1].Body)[len(inputTexts(reqs[1].Body))-1], "# Conversation so far") {
		t.Fatalf("the second run did not begin a new thread told the conversation: %d requests", len(reqs))
	}
	list := cliSessions(t, e.env, "codex")
	if len(list) != 2 {
		t.Fatalf("codex's sessions: %v", list)
	}
	index, err := os.ReadFile(filepath.Join(envValue(e.env, "CODEX_HOME"), "session_index.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s["title"] != title {
			t.Errorf("thread %v is titled %q, want %q", s["id"], s["title"], title)
		}
		if !strings.Contains(string(index), `"id":"`+s["id"].(string)+`","thread_name":"`+title+`"`) {
			t.Errorf("codex's session index names no thread %v %q:\n%s", s["id"], title, index)
		}
	}
}
