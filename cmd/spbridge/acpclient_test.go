package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/fakeapi"
)

// acpClient is the ACP test client (testdata/acp-client/client.mjs
// --serve) that runs every scenario of this test binary, side by side:
// one start of Node.js and one load of the SDK and its schemas for all of
// them, where a start for each took half a second of CPU. TestMain's
// closeACPClient ends it.
var acpClient struct {
	once   sync.Once
	err    error
	cmd    *exec.Cmd
	stderr syncBuffer // the client's own, not its agents'

	requests chan []byte // lines for the client's input, written by one goroutine
	mu       sync.Mutex
	waits    map[string]chan int // by events file: the scenario's exit status
	dead     chan struct{}       // closed when the client's output ended
}

// startACPClient starts the client, once.
func startACPClient(script string) error {
	c := &acpClient
	c.once.Do(func() {
		cmd := exec.Command("node", script, "--serve")
		cmd.Stderr = &c.stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			c.err = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			c.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			c.err = fmt.Errorf("start the ACP client: %w", err)
			return
		}
		c.cmd, c.requests, c.waits, c.dead = cmd, make(chan []byte), map[string]chan int{}, make(chan struct{})
		go func() {
			// A client that stopped reading leaves the writes to fail,
			// and the waits to end with its output (dead).
			for line := range c.requests {
				stdin.Write(line)
			}
			stdin.Close()
		}()
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var done struct {
					Events string `json:"events"`
					Code   int    `json:"code"`
				}
				if json.Unmarshal(sc.Bytes(), &done) != nil {
					continue
				}
				c.mu.Lock()
				ch := c.waits[done.Events]
				delete(c.waits, done.Events)
				c.mu.Unlock()
				if ch != nil {
					ch <- done.Code
				}
			}
			close(c.dead)
		}()
	})
	return c.err
}

// runOnACPClient runs the scenario in file on the shared client, with
// this process's environment and working folder, its events and the
// agent's stderr written into dir; it returns both and the client's exit
// status for the scenario.
func runOnACPClient(script, file, dir string) (events, stderr []byte, code int, err error) {
	if err := startACPClient(script); err != nil {
		return nil, nil, 0, err
	}
	c := &acpClient
	wd, _ := os.Getwd()
	req := map[string]any{"scenario": file, "events": filepath.Join(dir, "events.jsonl"), "stderr": filepath.Join(dir, "stderr.txt"),
		"env": os.Environ(), "cwd": wd}
	line, _ := json.Marshal(req)
	ch := make(chan int, 1)
	c.mu.Lock()
	c.waits[req["events"].(string)] = ch
	c.mu.Unlock()
	select {
	case c.requests <- append(line, '\n'):
	case <-c.dead:
		return nil, nil, 0, fmt.Errorf("the ACP client has ended:\n%s", c.stderr.String())
	}
	select {
	case code = <-ch:
	case <-c.dead:
		return nil, nil, 0, fmt.Errorf("the ACP client ended before the scenario did:\n%s", c.stderr.String())
	}
	events, _ = os.ReadFile(req["events"].(string))
	stderr, _ = os.ReadFile(req["stderr"].(string))
	return events, stderr, code, nil
}

// closeACPClient ends the client's input and waits for it to end.
func closeACPClient() {
	c := &acpClient
	if c.cmd == nil {
		return
	}
	close(c.requests)
	c.cmd.Wait()
}

// TestACPClientServes: the shared client reports each scenario's own
// status, side by side: a scenario whose agent exits at once fails (1)
// with its fail event in its own events, one it cannot read is a usage
// error (2), and it goes on serving after both.
func TestACPClientServes(t *testing.T) {
	t.Parallel()
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, ".tools", "npm", "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Skipf("the ACP SDK is not installed (run bash scripts/install-clis): %v", err)
	}
	script := filepath.Join(root, "testdata", "acp-client", "client.mjs")
	dir := t.TempDir()
	scenario := func(name string, v any) string {
		p := filepath.Join(dir, name+".json")
		data, _ := json.Marshal(v)
		os.WriteFile(p, data, 0o644)
		return p
	}
	gone := scenario("gone", map[string]any{"command": []string{"false"}, "steps": []any{map[string]any{"op": "initialize"}}})
	type result struct {
		events, stderr []byte
		code           int
		err            error
	}
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, file := range []string{gone, filepath.Join(dir, "missing.json")} {
		sub := filepath.Join(dir, fmt.Sprint(i))
		os.Mkdir(sub, 0o755)
		wg.Go(func() {
			r := &results[i]
			r.events, r.stderr, r.code, r.err = runOnACPClient(script, file, sub)
		})
	}
	wg.Wait()
	if r := results[0]; r.err != nil || r.code != 1 || !strings.Contains(string(r.events), `"event":"fail"`) {
		t.Errorf("an agent that exits at once: status %d, %v, events %s", r.code, r.err, r.events)
	}
	if r := results[1]; r.err != nil || r.code != 2 || !strings.Contains(string(r.stderr), "missing.json") {
		t.Errorf("a scenario that cannot be read: status %d, %v, stderr %s", r.code, r.err, r.stderr)
	}
	sub := filepath.Join(dir, "again")
	os.Mkdir(sub, 0o755)
	if _, _, code, err := runOnACPClient(script, gone, sub); err != nil || code != 1 {
		t.Errorf("after them: status %d, %v", code, err)
	}
}
