//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// descendantsOf lists the processes under pid, children first.
func descendantsOf(pid int) []int {
	var out []int
	for _, c := range childrenOf(pid) {
		out = append(append(out, c), descendantsOf(c)...)
	}
	return out
}

// liveProc reports whether pid is a process that has not ended (a zombie
// has ended).
func liveProc(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestE2EServeCodexShutdown: spbridge serve on the real codex, on both
// transports, with a turn under way (a command done, a long reply
// streaming slowly), ends when its stdin closes or it gets SIGTERM, also
// with an MCP server configured, and after a command cancelled in another
// session: the turn is saved with what arrived, and no process it started
// is left. The time from the close or the signal to the exit is logged
// (the README's bound is 2 s).
func TestE2EServeCodexShutdown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		transport, ending string
		mcp, cancelled    bool
	}{
		{"exec", "stdin", false, false}, {"exec", "sigterm", false, false}, {"exec", "stdin", true, false}, {"exec", "stdin", false, true},
		{"app-server", "stdin", false, false}, {"app-server", "sigterm", false, false}, {"app-server", "stdin", true, false}, {"app-server", "sigterm", false, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/mcp=%v/cancelled=%v", c.transport, c.ending, c.mcp, c.cancelled), func(t *testing.T) {
			t.Parallel() // each its own serve, codex and fake API
			testServeCodexShutdown(t, c.transport, c.ending, c.mcp, c.cancelled)
		})
	}
}

func testServeCodexShutdown(t *testing.T, transport, ending string, mcp, cancelled bool) {
	// Each reply goes to its own session's requests, told apart by a word
	// of the prompt that nothing else sends: a cancelled codex exec may
	// still send the model its command's output before it ends, and that
	// request must not take this session's reply.
	const ourWord, otherWord = "countquokka", "waitokapi"
	ours := func(body []byte) bool { return bytes.Contains(body, []byte(ourWord)) }
	replies := []fakeapi.ResponsesReply{{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall("echo started")}, Match: ours},
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem(strings.Repeat("slowly ", 600))}, ChunkDelay: 50 * time.Millisecond, Match: ours}}
	if cancelled {
		// First, in another session, a command that is cancelled.
		replies = append([]fakeapi.ResponsesReply{{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall("sleep 60")},
			Match: func(body []byte) bool { return bytes.Contains(body, []byte(otherWord)) }}}, replies...)
	}
	e, srv := newCodexE2E(t, replies...)
	work := filepath.Dir(e.pkg)
	cmd := exec.Command(spbridgeBin(t), "serve", "--codex-transport", transport)
	cmd.Env, cmd.Dir = e.env, work
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	servers := []any{}
	if mcp {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		servers = []any{map[string]any{"name": "fake", "command": exe, "args": []any{},
			"env": []any{map[string]any{"name": fakeapi.MCPServerEnv, "value": "1"}}}}
	}
	send := func(v any) { data, _ := json.Marshal(v); stdin.Write(append(data, '\n')) }
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	var seen []string
	// until reads serve's output up to a line for which done is true.
	until := func(done func(l string) bool) bool {
		for lines.Scan() {
			seen = append(seen, lines.Text())
			if done(lines.Text()) {
				return true
			}
		}
		return false
	}
	stop := func(format string, args ...any) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf(format+" (scan error %v)\nstdout:\n%s\nstderr:\n%s", append(args, lines.Err(), strings.Join(seen, "\n"), stderr.String())...)
	}
	open := func(id int, pkg string) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/new", "params": map[string]any{"cwd": work, "mcpServers": servers,
			"_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "codex"}}}})
	}
	prompt := func(id int, pkg, text string) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": map[string]any{"sessionId": pkg, "prompt": []any{map[string]any{"type": "text", "text": text}}}})
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	if cancelled {
		other := filepath.Join(work, "Other.silverpoint")
		os.MkdirAll(other, 0o755)
		os.WriteFile(filepath.Join(other, "document.json"), []byte("{}"), 0o644)
		open(10, other)
		prompt(11, other, otherWord)
		if !until(func(l string) bool { return strings.Contains(l, `"tool_call"`) && strings.Contains(l, "sleep 60") }) {
			stop("the command did not start")
		}
		send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": other}})
		if !until(func(l string) bool { return strings.Contains(l, `"id":11,`) && strings.Contains(l, `"cancelled"`) }) {
			stop("the prompt was not cancelled")
		}
	}
	open(1, e.pkg)
	prompt(2, e.pkg, ourWord)

	// Under way: the command done and the reply streaming (codex exec
	// prints a message only when it is whole: the reply's request made).
	if !until(func(l string) bool {
		return strings.Contains(l, `"tool_call_update"`) && strings.Contains(l, `"status":"completed"`)
	}) {
		stop("the command did not complete")
	}
	if transport == "app-server" && !until(func(l string) bool { return strings.Contains(l, "agent_message_chunk") }) {
		stop("no reply streaming")
	}
	for len(srv.Requests()) < len(replies) {
		time.Sleep(10 * time.Millisecond) // waiting for the request, not timing it
	}
	procs := descendantsOf(cmd.Process.Pid)
	if len(procs) == 0 {
		stop("no process under serve")
	}
	go io.Copy(io.Discard, stdout)
	start := time.Now()
	if ending == "sigterm" {
		cmd.Process.Signal(syscall.SIGTERM)
	} else {
		stdin.Close()
	}
	err := cmd.Wait()
	took := time.Since(start)
	t.Logf("serve exited %v after the %s (processes under it: %d)", took.Round(time.Millisecond), ending, len(procs))
	if err != nil {
		t.Errorf("serve: %v\n%s", err, stderr.String())
	}
	for _, pid := range procs {
		if liveProc(pid) {
			t.Errorf("process %d (started under serve) outlived it", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	p, err := archive.Open(e.pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range p.Conv.Items {
		got = append(got, it.Type()+": "+it.String("text")+it.String("summary"))
	}
	if len(got) < 2 || got[0] != "user: "+ourWord || !containsStr(got, "tool: echo started") {
		t.Errorf("saved items %q", got)
	}
	if transport == "app-server" && !strings.Contains(strings.Join(got, "\n"), "assistant: slowly") {
		t.Errorf("saved items %q: not the reply so far", got)
	}
}
