//go:build unix

package codex

// Recordings of the files newer Codex threads are kept in: a thread taken
// back with the app-server's thread/revert (a new rollout whose header
// points into the old one), and rollouts compressed by Codex's
// local_thread_store_compression feature (rollout-*.jsonl.zst):
//
//	go test ./internal/codex -run TestRecordCodexThreadFiles -record
//
// with SPBRIDGE_CODEX naming the codex to record (the pinned one by
// default): the fixtures go to testdata/history/codex-files-VERSION/,
// byte for byte as codex wrote them (the working folder is
// /tmp/spbridge-codex-files/project).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/fakeapi"
	"spbridge/internal/history/historytest"
)

// rpcClient talks JSON-RPC to a running `codex app-server`, a line at a
// time on its stdin and stdout.
type rpcClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    chan map[string]any
	nextID int
	stderr bytes.Buffer
}

func startRPC(t *testing.T, bin, work string, env []string, args ...string) *rpcClient {
	t.Helper()
	c := &rpcClient{t: t, out: make(chan map[string]any, 1000)}
	c.cmd = exec.Command(bin, append([]string{"app-server"}, args...)...)
	c.cmd.Dir, c.cmd.Env, c.cmd.Stderr = work, env, &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.out)
		rd := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := rd.ReadBytes('\n')
			var m map[string]any
			if json.Unmarshal(bytes.TrimSpace(line), &m) == nil {
				c.out <- m
			}
			if err != nil {
				return
			}
		}
	}()
	res, rerr := c.call("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "spbridge_test", "title": "spbridge test", "version": "0.0.1"},
		"capabilities": map[string]any{"experimentalApi": true}})
	if rerr != nil {
		t.Fatalf("initialize: %v (%v)", rerr, res)
	}
	c.send(map[string]any{"method": "initialized"})
	return c
}

func (c *rpcClient) send(m map[string]any) {
	c.t.Helper()
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to app-server: %v", err)
	}
}

func (c *rpcClient) next() map[string]any {
	c.t.Helper()
	m, ok := <-c.out
	if !ok {
		c.t.Fatalf("app-server ended; stderr:\n%s", c.stderr.String())
	}
	return m
}

// call sends a request and returns its result, or its error.
func (c *rpcClient) call(method string, params any) (map[string]any, map[string]any) {
	c.t.Helper()
	c.nextID++
	id := float64(c.nextID)
	c.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		m := c.next()
		if m["id"] == id && m["method"] == nil {
			res, _ := m["result"].(map[string]any)
			e, _ := m["error"].(map[string]any)
			return res, e
		}
		c.answer(m)
	}
}

// answer accepts a request of the server's.
func (c *rpcClient) answer(m map[string]any) {
	if m["id"] != nil && m["method"] != nil {
		c.send(map[string]any{"id": m["id"], "result": map[string]any{"decision": "accept"}})
	}
}

// turn runs one turn of text on thread and returns its id.
func (c *rpcClient) turn(thread, text string) string {
	c.t.Helper()
	res, e := c.call("turn/start", map[string]any{"threadId": thread,
		"input": []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}})
	if e != nil {
		c.t.Fatalf("turn/start: %v", e)
	}
	id, _ := res["turn"].(map[string]any)["id"].(string)
	for {
		m := c.next()
		c.answer(m)
		if m["method"] == "turn/completed" {
			return id
		}
	}
}

func (c *rpcClient) stop() {
	c.stdin.Close()
	for range c.out {
	}
	if err := c.cmd.Wait(); err != nil {
		c.t.Logf("app-server: %v; stderr:\n%s", err, c.stderr.String())
	}
}

// codexVersion is what `codex --version` says of bin ("0.169.0").
func codexVersion(t *testing.T, bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	return f[len(f)-1]
}

// TestRecordCodexThreadFiles records, from the real codex app-server:
// a thread of two turns, taken back to before its second
// (thread/revert), given another turn, taken back before that one and
// given a fourth (codex-files-V/paged); then the
// same store after Codex's compression of rollouts untouched for a week
// (codex-files-V/compressed), with a second thread of one turn.
func TestRecordCodexThreadFiles(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.CodexPath(t)
	version := codexVersion(t, bin)
	srv, err := fakeapi.NewOpenAI(
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("First answer.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Second answer, taken back.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Third answer, taken back too.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Fourth answer, after the reverts.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("An answer to compress.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Legacy answer one.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Legacy answer two.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Legacy answer three.")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// A fixed folder: the rollouts' byte offsets (history_base) hold only
	// for the bytes as codex wrote them, so no path in them is replaced.
	root := "/tmp/spbridge-codex-files"
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	work := filepath.Join(root, "project")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	env := srv.CodexEnv(t, root)
	sessions := filepath.Join(root, "codex-home", "sessions")

	c := startRPC(t, bin, work, env)
	res, e := c.call("thread/start", map[string]any{"cwd": work, "approvalPolicy": "never", "sandbox": "workspace-write"})
	if e != nil {
		t.Fatalf("thread/start: %v", e)
	}
	thread, _ := res["thread"].(map[string]any)["id"].(string)
	c.turn(thread, "First question")
	revert := func(turn string) {
		res, e := c.call("thread/revert", map[string]any{"threadId": thread, "beforeTurnId": turn})
		if e != nil {
			t.Fatalf("thread/revert: %v", e)
		}
		t.Logf("thread/revert: %v", res)
	}
	revert(c.turn(thread, "Second question"))
	revert(c.turn(thread, "Third question"))
	c.turn(thread, "Fourth question")
	res, e = c.call("thread/start", map[string]any{"cwd": work, "approvalPolicy": "never", "sandbox": "workspace-write"})
	if e != nil {
		t.Fatalf("thread/start: %v", e)
	}
	other, _ := res["thread"].(map[string]any)["id"].(string)
	c.turn(other, "Compress this one")
	// A thread in the legacy history mode: one file, which thread/revert
	// refuses.
	res, e = c.call("thread/start", map[string]any{"cwd": work, "approvalPolicy": "never", "sandbox": "workspace-write", "historyMode": "legacy"})
	if e != nil {
		t.Fatalf("thread/start legacy: %v", e)
	}
	legacy, _ := res["thread"].(map[string]any)["id"].(string)
	c.turn(legacy, "Legacy one")
	two := c.turn(legacy, "Legacy two")
	res, e = c.call("thread/revert", map[string]any{"threadId": legacy, "beforeTurnId": two})
	t.Logf("thread/revert of a legacy thread: %v %v", res, e)
	c.turn(legacy, "Legacy three")
	c.stop()

	repl := strings.NewReplacer()
	dst := "codex-files-" + version
	for _, n := range historytest.Keep(t, sessions, "rollout-*", filepath.Join(dst, "paged", "sessions"), repl) {
		t.Log(n)
	}

	// Every rollout untouched for eight days: the next start compresses
	// them, as may rollout/compress.
	week := time.Now().Add(-8 * 24 * time.Hour)
	filepath.Walk(sessions, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.Chtimes(p, week, week)
		}
		return nil
	})
	c = startRPC(t, bin, work, env, "-c", "features.local_thread_store_compression=true")
	res, e = c.call("rollout/compress", nil)
	t.Logf("rollout/compress: %v %v", res, e)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		zst, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "*.zst"))
		plain, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "*.jsonl"))
		if len(zst) > 0 && len(plain) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.stop()
	for _, n := range historytest.Keep(t, sessions, "rollout-*", filepath.Join(dst, "compressed", "sessions"), repl) {
		t.Log(n)
	}
}

// TestRecordCodexExecFork records a thread of one turn (codex exec) and
// its fork with a turn of its own (codex exec fork ID PROMPT):
// codex-fork-VERSION/sessions/…, byte for byte as codex wrote them.
func TestRecordCodexExecFork(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.CodexPath(t)
	version := codexVersion(t, bin)
	srv, err := fakeapi.NewOpenAI(
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("The parent's answer.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("The fork's answer.")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := "/tmp/spbridge-codex-fork"
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	work := filepath.Join(root, "project")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	env := srv.CodexEnv(t, root)
	out := historytest.Run(t, work, env, "", bin, "exec", "--json", "--skip-git-repo-check", "The parent's question")
	id := sessionID(t, out)
	historytest.Run(t, work, env, "", bin, "exec", "fork", "--json", "--skip-git-repo-check", id, "The fork's question")
	for _, n := range historytest.Keep(t, filepath.Join(root, "codex-home", "sessions"), "rollout-*", filepath.Join("codex-fork-"+version, "sessions"), strings.NewReplacer()) {
		t.Log(n)
	}
}
