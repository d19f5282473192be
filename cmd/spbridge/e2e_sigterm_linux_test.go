//go:build linux

package main

import (
	"bufio"
	"encoding/json"
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

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestE2EServeSIGTERM: SIGTERM mid-turn ends spbridge serve cleanly: the
// claude process is gone, and the conversation is saved with what arrived.
func TestE2EServeSIGTERM(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: strings.Repeat("slowly ", 300)}}, ChunkDelay: 50 * time.Millisecond})
	cmd := exec.Command(spbridgeBin(t), "serve")
	cmd.Env = e.env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	send := func(v any) { data, _ := json.Marshal(v); stdin.Write(append(data, '\n')) }
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}}})
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": map[string]any{"sessionId": e.pkg, "prompt": []any{map[string]any{"type": "text", "text": "count"}}}})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	var seen []string
	streaming := false
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if strings.Contains(lines.Text(), "agent_message_chunk") {
			streaming = true
			break
		}
	}
	kids := childrenOf(cmd.Process.Pid)
	if !streaming || len(kids) == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no streaming turn (children %v, scan error %v)\nstdout:\n%s\nstderr:\n%s", kids, lines.Err(), strings.Join(seen, "\n"), stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, stderr.String())
	}
	for _, pid := range kids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("the CLI (pid %d) outlived spbridge serve", pid)
		}
	}
	p, err := archive.Open(e.pkg, archive.KindDocument, true)
	if err != nil || len(p.Conv.Items) < 2 || p.Conv.Items[0].String("text") != "count" || !strings.HasPrefix(p.Conv.Items[1].String("text"), "slowly") {
		t.Errorf("saved: %v, %d items", err, len(p.Conv.Items))
	}
}
