package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/clis"
	"spbridge/internal/fakeapi"
	"spbridge/internal/history"
)

// TestE2EServeCLISessions: a conversation begun with the real claude in a
// terminal (claude -p) is listed by serve for its folder (not for another),
// opens in the editor (imported, replayed, schema-valid under the official
// client), and its next prompt continues claude's own session: the model
// gets the earlier messages and no "# Conversation so far". With the CLI's
// files gone, a later serve opens the same package and tells a new CLI
// session the conversation so far, and replays each message with the
// messageId the import and the turn after it gave it.
func TestE2EServeCLISessions(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello from the terminal."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Continued in the editor."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "After the files went."}}},
	)
	work := filepath.Dir(e.pkg)
	cmd := exec.Command(fakeapi.ClaudePath(t), "-p", "first words in the terminal")
	cmd.Env, cmd.Dir = e.env, work
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Hello from the terminal.") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	var configDir string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			configDir = v
		}
	}
	listed, err := history.List(history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": configDir, "codex": t.TempDir()}, Cwd: work})
	if err != nil || len(listed) != 1 {
		t.Fatalf("claude's sessions of the folder: %v %v", listed, err)
	}
	id := "claude:" + listed[0].ID
	other := t.TempDir()
	bin := spbridgeBin(t)
	envMap := acpEnv(e.env)
	events := runACPClient(t, map[string]any{
		"command": []string{bin, "serve"}, "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"}, // 0
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work}},  // 1
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": other}}, // 2
			map[string]any{"op": "loadSession", "sessionId": id, "cwd": work, "saveAs": "s1"},             // 3
			map[string]any{"op": "prompt", "session": "s1", "text": "go on in the editor"},                // 4
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work}},  // 5
			map[string]any{"op": "closeStdin"},
		},
	})
	imported := msgChunksOf(events) // the import's replay, then the turn's reply
	sessions := func(step int) []any { s, _ := response(t, events, step)["sessions"].([]any); return s }
	if l := sessions(1); len(l) != 1 || l[0].(map[string]any)["sessionId"] != id || l[0].(map[string]any)["title"] != "first words in the terminal" {
		t.Errorf("the folder's list: %v", l)
	}
	if l := sessions(2); len(l) != 0 {
		t.Errorf("another folder's list: %v", l)
	}
	if l := sessions(5); len(l) != 1 || l[0].(map[string]any)["sessionId"] != id {
		t.Errorf("the list after the import: %v", l)
	}
	kinds, text := updatesOf(events)
	if !strings.Contains(strings.Join(kinds, " "), "user_message_chunk") || !strings.Contains(text, "Hello from the terminal.") || !strings.Contains(text, "Continued in the editor.") {
		t.Errorf("replayed and streamed %v: %q", kinds, text)
	}
	reqs := e.srv.Requests()
	sent := userTexts(reqs[len(reqs)-1].Body)
	if strings.Contains(strings.Join(sent, "\n"), "# Conversation so far") || !strings.Contains(strings.Join(sent, "\n"), "first words in the terminal") || sent[len(sent)-1] != "go on in the editor" {
		t.Errorf("the prompt after the import sent %q", sent)
	}

	// The CLI's files go: a later serve opens the package under the same
	// id, and its first turn tells a new CLI session what was said.
	if err := os.RemoveAll(filepath.Join(configDir, "projects")); err != nil {
		t.Fatal(err)
	}
	events = runACPClient(t, map[string]any{
		"command": []string{bin, "serve"}, "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "loadSession", "sessionId": id, "cwd": work, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "and now"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Errorf("the prompt of the later serve: %v", r)
	}
	checkImportedIDs(t, imported, replayedBy(events, 1))
	reqs = e.srv.Requests()
	sent = userTexts(reqs[len(reqs)-1].Body)
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "# Conversation so far") || !strings.Contains(sent[0], "first words in the terminal") || !strings.HasSuffix(sent[0], "and now") {
		t.Errorf("the later serve's first prompt sent %q", sent)
	}
	// The claude session that turn began is listed by the conversation's
	// name (spbridge named it so), and imported by the user's words alone:
	// the prefix stayed with the CLI.
	listed, err = history.List(history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": configDir, "codex": t.TempDir()}, Cwd: work})
	if err != nil || len(listed) != 1 || listed[0].Title != "first words in the terminal" {
		t.Fatalf("the session the later serve began: %v %v", listed, err)
	}
	conv, _, err := history.Import(listed[0], history.ImportOptions{Stores: clis.Stores()})
	if err != nil || len(conv.Items) == 0 || conv.Items[0].String("text") != "and now" || conv.History[0].Content[0].String("text") != "and now" {
		t.Errorf("its import: %v %v", conv, err)
	}
}

// TestE2EServeCodexSessions: the same with the real codex, on both
// transports: a thread begun with codex exec in a terminal is listed for
// its folder, opens in the editor (imported, replayed), and its next prompt
// continues codex's own thread: the model gets the earlier messages and no
// "# Conversation so far". A later serve's load replays each message with
// the messageId the import and the turn after it gave it.
func TestE2EServeCodexSessions(t *testing.T) { transports(t, testServeCodexSessions) }

func testServeCodexSessions(t *testing.T, transport string) {
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Hello from the terminal.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Continued in the editor.")}})
	work := filepath.Dir(e.pkg)
	cmd := exec.Command(fakeapi.CodexPath(t), "exec", "--skip-git-repo-check", "first words in the terminal")
	cmd.Env, cmd.Dir = e.env, work
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Hello from the terminal.") {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	var codexHome string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			codexHome = v
		}
	}
	listed, err := history.List(history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": t.TempDir(), "codex": codexHome}, Cwd: work})
	if err != nil || len(listed) != 1 {
		t.Fatalf("codex's sessions of the folder: %v %v", listed, err)
	}
	id := "codex:" + listed[0].ID
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve", "--backend", "codex", "--codex-transport", transport}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"}, // 0
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work}}, // 1
			map[string]any{"op": "loadSession", "sessionId": id, "cwd": work, "saveAs": "s1"},            // 2
			map[string]any{"op": "prompt", "session": "s1", "text": "go on in the editor"},               // 3
			map[string]any{"op": "closeStdin"},
		},
	})
	if l, _ := response(t, events, 1)["sessions"].([]any); len(l) != 1 || l[0].(map[string]any)["sessionId"] != id {
		t.Errorf("the folder's list: %v", l)
	}
	if r := response(t, events, 3); r["stopReason"] != "end_turn" {
		t.Errorf("the prompt: %v", r)
	}
	_, text := updatesOf(events)
	if !strings.Contains(text, "Hello from the terminal.") || !strings.Contains(text, "Continued in the editor.") {
		t.Errorf("replayed and streamed %q", text)
	}
	reqs := srv.Requests()
	sent := inputTexts(reqs[len(reqs)-1].Body)
	all := strings.Join(sent, "\n")
	if strings.Contains(all, "# Conversation so far") || !strings.Contains(all, "first words in the terminal") || !strings.Contains(all, "go on in the editor") {
		t.Errorf("the prompt after the import sent %q", sent)
	}

	// A later serve loads the id (the package it was imported into): the
	// same messageIds.
	again := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve", "--backend", "codex", "--codex-transport", transport}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "loadSession", "sessionId": id, "cwd": work, "saveAs": "s1"},
			map[string]any{"op": "closeStdin"},
		},
	})
	checkImportedIDs(t, msgChunksOf(events), replayedBy(again, 1))
}

// replayedBy are the message chunks a load sent before its answer (step
// load of events).
func replayedBy(events []acpEvent, load int) []msgChunk {
	for n, e := range events {
		if e.Event == "response" && e.Step != nil && *e.Step == load {
			return msgChunksOf(events[:n])
		}
	}
	return nil
}

// checkImportedIDs: the messageIds of a CLI session imported by a load
// (first: its replay and the turn after it) are those a later serve's
// load of the same id replays (second): every reply's, in order, and the
// user's messages the import replayed first.
func checkImportedIDs(t *testing.T, first, second []msgChunk) {
	t.Helper()
	replies, _ := msgIDs(t, first, "agent_message_chunk")
	users, _ := msgIDs(t, first, "user_message_chunk")
	again, _ := msgIDs(t, second, "agent_message_chunk")
	usersAgain, _ := msgIDs(t, second, "user_message_chunk")
	if len(replies) < 2 || !slices.Equal(again, replies) {
		t.Errorf("replies' messageIds: %q after the import and its turn, %q when loaded again", replies, again)
	}
	if len(users) == 0 || len(usersAgain) <= len(users) || !slices.Equal(usersAgain[:len(users)], users) {
		t.Errorf("user messages' messageIds: %q replayed by the import, %q when loaded again", users, usersAgain)
	}
}
