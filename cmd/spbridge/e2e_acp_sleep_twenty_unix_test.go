//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeEchoEnv makes the test binary a claude that answers each message
// with what it got and whether it resumed a session (--resume), and tells
// the FIFO the variable names when it starts and when it ends.
const fakeEchoEnv = "SPBRIDGE_FAKE_CLAUDE_ECHO"

func init() { helperModes[fakeEchoEnv] = fakeClaudeEcho }

func fakeClaudeEcho() int {
	fifo, err := os.OpenFile(os.Getenv(fakeEchoEnv), os.O_WRONLY, 0)
	if err != nil {
		return 1
	}
	defer fifo.Close()
	// Its own id: each CLI runs in a PID namespace of its own, where
	// every one is the same pid.
	session := fmt.Sprint("fake-", time.Now().UnixNano())
	how := "fresh " + session
	if i := slices.Index(os.Args, "--resume"); i >= 0 {
		session, how = os.Args[i+1], "resumed "+os.Args[i+1]
	}
	fmt.Fprintf(fifo, "start %s\n", session)
	defer fmt.Fprintf(fifo, "end %s\n", session)
	f := newFakeStream()
	for f.in.Scan() {
		var m map[string]any
		if json.Unmarshal(f.in.Bytes(), &m) != nil {
			continue
		}
		switch m["type"] {
		case "control_request":
			f.emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m["request_id"], "response": map[string]any{}}})
		case "user":
			f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": "claude-sonnet-4-5"})
			text := echoUserText(m)
			f.emit(map[string]any{"type": "assistant", "message": map[string]any{"id": "m-" + text, "role": "assistant", "model": "claude-sonnet-4-5",
				"content": []any{map[string]any{"type": "text", "text": "echo: " + text + " (" + how + ")"}}}})
			f.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": session, "total_cost_usd": 0.001,
				"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
		}
	}
	return 0
}

func echoUserText(m map[string]any) string {
	msg, _ := m["message"].(map[string]any)
	content, _ := msg["content"].([]any)
	var out []string
	for _, c := range content {
		if b, _ := c.(map[string]any); b["type"] == "text" {
			out = append(out, fmt.Sprint(b["text"]))
		}
	}
	return strings.Join(out, "")
}

// TestE2EServeSleepTwenty: twenty sessions, each after a prompt, all go
// to sleep (every CLI process ends), and a prompt to each wakes it on its
// own session (--resume), told the message alone; then they all sleep
// again. The CLI is a fake claude that reports its starts and ends.
func TestE2EServeSleepTwenty(t *testing.T) {
	t.Parallel()
	const n = 20
	root := t.TempDir()
	fifo := filepath.Join(root, "procs")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	events, err := os.OpenFile(fifo, os.O_RDWR, 0) // never at EOF: the test holds a writer too
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	procs := make(chan string, 1000)
	go func() {
		r := bufio.NewScanner(events)
		for r.Scan() {
			procs <- r.Text()
		}
	}()
	exe, _ := os.Executable()
	env := append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, fakeEchoEnv+"="+fifo, "SPBRIDGE_STATE_DIR="+filepath.Join(root, "state"), "GORACE=atexit_sleep_ms=0")
	s := startSleepServe(t, env, "--cli-idle", "1s", "--max-live-clis", "5", "--no-checkpoints")
	s.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	s.response(0)
	var pkgs []string
	for i := range n {
		pkg := filepath.Join(root, fmt.Sprintf("Doc%02d.silverpoint", i))
		os.MkdirAll(pkg, 0o755)
		os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644)
		pkgs = append(pkgs, pkg)
		s.write(map[string]any{"id": 1 + i, "method": "session/new", "params": map[string]any{"cwd": root, "mcpServers": []any{},
			"_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}}})
	}
	for i := range n {
		s.response(float64(1 + i))
	}
	// The fake's reports, by the session each process ran: asleep waits
	// until the process of each reply (its session named in it) started
	// round times in all (a process a round) and every one of them ended.
	starts, ends := map[string]int{}, map[string]int{}
	asleep := func(replies []string, round int) {
		t.Helper()
		var ids []string
		for _, r := range replies {
			f := strings.Fields(strings.TrimSuffix(r, ")"))
			ids = append(ids, f[len(f)-1])
		}
		done := func() bool {
			for _, id := range ids {
				if starts[id] < round || starts[id] != ends[id] {
					return false
				}
			}
			return true
		}
		for !done() {
			f := strings.Fields(<-procs)
			if f[0] == "start" {
				starts[f[1]]++
			} else {
				ends[f[1]]++
			}
		}
	}
	round := func(id int, text string) []string {
		t.Helper()
		for i, pkg := range pkgs {
			s.write(map[string]any{"id": id + i, "method": "session/prompt", "params": map[string]any{"sessionId": pkg,
				"prompt": []any{map[string]any{"type": "text", "text": text}}}})
		}
		for i := range pkgs {
			if r := s.stopReason(float64(id + i)); r != "end_turn" {
				t.Fatalf("prompt %d: %q\nstderr:\n%s", id+i, r, s.stderr.String())
			}
		}
		var replies []string
		for _, pkg := range pkgs {
			items := itemsOf(t, pkg)
			replies = append(replies, items[len(items)-1])
			if len(items) != 2*(id/100) {
				t.Errorf("%s holds %q, want a user item and a reply a round", pkg, items)
			}
		}
		return replies
	}
	first := round(100, "one")
	asleep(first, 1)
	second := round(200, "two")
	for i, r := range second {
		sid := strings.TrimSuffix(strings.TrimPrefix(first[i], "assistant: echo: one ("), ")")
		sid = strings.TrimPrefix(strings.TrimPrefix(sid, "resumed "), "fresh ")
		if r != "assistant: echo: two (resumed "+sid+")" {
			t.Errorf("session %d after its sleep: %q (first %q), want the message alone, resuming its session; items %q", i, r, first[i], itemsOf(t, pkgs[i]))
		}
	}
	asleep(second, 2)
	for range 2 * n { // each session's CLI was put to sleep after each round
		s.slept()
	}
}

// itemsOf reads the saved items of a package as "type: text".
func itemsOf(t *testing.T, pkg string) []string {
	t.Helper()
	e := &e2e{t: t, pkg: pkg}
	return e.items()
}
