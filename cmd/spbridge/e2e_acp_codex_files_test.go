package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/clis"
	"spbridge/internal/fakeapi"
	"spbridge/internal/history"
)

// compressRollouts has the real codex compress the rollouts of
// codexHome (its local_thread_store_compression feature, which takes the
// rollouts untouched for a week): each is made a week old, then codex
// app-server is asked to compress (rollout/compress), and the test waits
// until every rollout is compressed.
func compressRollouts(t *testing.T, env []string, work, codexHome string) {
	t.Helper()
	sessions := filepath.Join(codexHome, "sessions")
	old := time.Now().Add(-8 * 24 * time.Hour)
	plain, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*.jsonl"))
	if len(plain) == 0 {
		t.Fatal("no rollout to compress")
	}
	for _, p := range plain {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(fakeapi.CodexPath(t), "app-server", "-c", "features.local_thread_store_compression=true")
	cmd.Env, cmd.Dir = env, work
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"spbridge_test","version":"0"},"capabilities":{"experimentalApi":true}}}`,
		`{"jsonrpc":"2.0","method":"initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"rollout/compress"}`,
	} {
		fmt.Fprintln(stdin, l)
	}
	// rollout/compress answers at once; the files are compressed in the
	// background.
	rd := bufio.NewReader(stdout)
	for {
		line, err := rd.ReadString('\n')
		if strings.Contains(line, `"id":2`) {
			break
		}
		if err != nil {
			t.Fatalf("codex app-server ended before answering rollout/compress: %v", err)
		}
	}
	go io.Copy(io.Discard, rd)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		left, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*.jsonl"))
		done, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*.jsonl.zst"))
		if len(left) == 0 && len(done) == len(plain) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("codex did not compress its rollouts: %q left, %q compressed", left, done)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestE2ECompressedCodexSession: a thread begun with codex exec in a
// terminal, then compressed by codex (rollout-….jsonl.zst), is listed by
// session/list for its folder and loaded under the official ACP client:
// its messages replayed, and its next prompt continues codex's own
// thread (no "# Conversation so far").
func TestE2ECompressedCodexSession(t *testing.T) {
	t.Parallel()
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Hello from the terminal.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Continued in the editor.")}})
	work := filepath.Dir(e.pkg)
	cmd := exec.Command(fakeapi.CodexPath(t), "exec", "--skip-git-repo-check", "words compressed later")
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
	compressRollouts(t, e.env, work, codexHome)
	listed, err := history.List(history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": t.TempDir(), "codex": codexHome}, Cwd: work})
	if err != nil || len(listed) != 1 || !strings.HasSuffix(listed[0].Path, ".jsonl.zst") {
		t.Fatalf("codex's sessions of the folder: %v %v", listed, err)
	}
	id := "codex:" + listed[0].ID
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve", "--backend", "codex"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"}, // 0
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work}}, // 1
			map[string]any{"op": "loadSession", "sessionId": id, "cwd": work, "saveAs": "s1"},            // 2
			map[string]any{"op": "prompt", "session": "s1", "text": "go on in the editor"},               // 3
			map[string]any{"op": "closeStdin"},
		},
	})
	if l, _ := response(t, events, 1)["sessions"].([]any); len(l) != 1 || l[0].(map[string]any)["sessionId"] != id ||
		l[0].(map[string]any)["title"] != "words compressed later" {
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
	sent := strings.Join(inputTexts(reqs[len(reqs)-1].Body), "\n")
	if strings.Contains(sent, "# Conversation so far") || !strings.Contains(sent, "words compressed later") || !strings.Contains(sent, "go on in the editor") {
		t.Errorf("the prompt after the load sent %q", sent)
	}
}
