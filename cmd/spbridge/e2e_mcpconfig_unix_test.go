//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/fakeapi"
	"spbridge/internal/secretfile"
)

// mcpReportEnv names a FIFO: with it set, the test binary stands in for
// claude (mcpReportingClaude) and reports there the --mcp-config file it
// was given. mcpExecEnv, set too, names the real claude it then becomes.
const (
	mcpReportEnv = "SPBRIDGE_TEST_MCP_REPORT"
	mcpExecEnv   = "SPBRIDGE_TEST_MCP_EXEC"
)

func init() { helperModes[mcpReportEnv] = mcpReportingClaude }

// mcpReportingClaude reads its --mcp-config file at start-up as claude does
// (a missing one ends it), writes the file's path on the FIFO, then runs
// the real claude in its place, or, without one, reads its input and never
// answers: a claude that has not come up yet.
func mcpReportingClaude() int {
	args := os.Args[1:]
	i := slices.Index(args, "--mcp-config")
	if i < 0 || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "no --mcp-config")
		return 2
	}
	path := args[i+1]
	if _, err := os.ReadFile(path); err != nil {
		fmt.Fprintf(os.Stderr, "Error: Invalid MCP configuration:\nMCP config file not found: %s\n", path)
		return 1
	}
	f, err := os.OpenFile(os.Getenv(mcpReportEnv), os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintln(f, path)
	f.Close()
	if real := os.Getenv(mcpExecEnv); real != "" {
		// What claude starts (the MCP server, this binary again) must
		// not take itself for this helper.
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, mcpReportEnv+"=") || strings.HasPrefix(kv, mcpExecEnv+"=")
		})
		err := syscall.Exec(real, append([]string{real}, args...), env)
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// mcpServe is one spbridge serve the test talks to.
type mcpServe struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr syncBuffer
}

// startServeEnv starts spbridge serve with env and returns once it answered
// initialize, which it reads only after its start-up is done.
func startServeEnv(t *testing.T, env []string) *mcpServe {
	t.Helper()
	s := &mcpServe{t: t, cmd: exec.Command(spbridgeBin(t), "serve")}
	s.cmd.Env = env
	s.cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	s.lines = bufio.NewScanner(stdout)
	s.lines.Buffer(nil, 1<<20)
	s.send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	s.await(`"id":0,`)
	return s
}

func (s *mcpServe) send(v any) {
	data, _ := json.Marshal(v)
	s.stdin.Write(append(data, '\n'))
}

// await reads serve's output up to a line that holds want.
func (s *mcpServe) await(want string) {
	s.t.Helper()
	var seen []string
	for s.lines.Scan() {
		if strings.Contains(s.lines.Text(), want) {
			return
		}
		seen = append(seen, s.lines.Text())
	}
	s.t.Fatalf("serve ended (%v) before a line with %s:\n%s\nstderr:\n%s", s.lines.Err(), want, strings.Join(seen, "\n"), s.stderr.String())
}

// openSession opens a claude session on pkg with one MCP server whose env
// holds a secret, and sends it a prompt.
func (s *mcpServe) openSession(pkg string, server map[string]any) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{"cwd": filepath.Dir(pkg),
		"mcpServers": []any{server}, "_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}}})
	s.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": map[string]any{"sessionId": pkg,
		"prompt": []any{map[string]any{"type": "text", "text": "count"}}}})
}

// kill9 kills serve with SIGKILL: nothing of it runs after, its supervisor
// ends claude.
func (s *mcpServe) kill9() {
	s.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Wait()
}

// close ends serve as an editor does, closing its input.
func (s *mcpServe) close() {
	s.t.Helper()
	s.stdin.Close()
	go func() {
		for s.lines.Scan() {
		}
	}()
	if err := s.cmd.Wait(); err != nil {
		s.t.Errorf("serve: %v\n%s", err, s.stderr.String())
	}
}

// reported returns the channel on which the path the stand-in claude
// reports on fifo arrives.
func reported(t *testing.T, fifo string) <-chan string {
	t.Helper()
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo) // waits for the writer
		if err != nil {
			ch <- ""
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		ch <- strings.TrimSpace(line)
	}()
	return ch
}

// runFolder lists the state folder's run folder.
func runFolder(state string) []string {
	entries, _ := os.ReadDir(filepath.Join(state, secretfile.Folder))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestE2EServeKilledMCPConfig: spbridge serve killed with SIGKILL while
// its claude has not read its --mcp-config yet leaves the file, with the
// MCP server's secret, in the state folder's run folder; the next serve
// removes it as it starts, before any session.
func TestE2EServeKilledMCPConfig(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	state := filepath.Join(root, "state")
	pkg := filepath.Join(root, "work", "Poster.silverpoint")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := reported(t, filepath.Join(root, "report"))
	env := append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, mcpReportEnv+"="+filepath.Join(root, "report"), "SPBRIDGE_STATE_DIR="+state)
	s := startServeEnv(t, env)
	s.openSession(pkg, map[string]any{"name": "fake", "command": "fake-mcp", "args": []any{},
		"env": []any{map[string]any{"name": "TOKEN", "value": "s3cret-token"}}})
	path := <-report
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "s3cret-token") {
		t.Fatalf("the --mcp-config claude was given: %q, %v", data, err)
	}
	s.kill9()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file went with serve's SIGKILL (%v): this test shows nothing", err)
	}
	s = startServeEnv(t, env)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the next serve left the MCP config of the killed one: %s (%v)", path, err)
	}
	if files := runFolder(state); len(files) != 0 {
		t.Errorf("run folder after the next start: %q", files)
	}
	s.close()
}

// TestE2EServeKilledMCPConfigClaude: the real claude, given the editor's
// MCP server, has read its --mcp-config when it answers initialize, and
// spbridge removed the file then: serve killed with SIGKILL mid-turn
// leaves no file with the server's secret, before or after the next start.
func TestE2EServeKilledMCPConfigClaude(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: strings.Repeat("slowly ", 300)}}, ChunkDelay: 50 * time.Millisecond})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var state string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "SPBRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	fifo := filepath.Join(t.TempDir(), "report")
	report := reported(t, fifo)
	env := append(e.env, "SPBRIDGE_CLAUDE="+exe, mcpReportEnv+"="+fifo, mcpExecEnv+"="+fakeapi.ClaudePath(t))
	s := startServeEnv(t, env)
	s.openSession(e.pkg, map[string]any{"name": "fake", "command": exe, "args": []any{}, "env": []any{
		map[string]any{"name": fakeapi.MCPServerEnv, "value": "1"}, map[string]any{"name": fakeapi.MCPTokenEnv, "value": "s3cret-token"}}})
	path := <-report
	if !strings.HasPrefix(path, filepath.Join(state, secretfile.Folder)+string(filepath.Separator)) {
		t.Errorf("claude was given %s, outside the state folder's run folder %s", path, filepath.Join(state, secretfile.Folder))
	}
	s.await("agent_message_chunk") // claude runs its turn
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the MCP config is still there while claude runs its turn (%v)", err)
	}
	s.kill9()
	s = startServeEnv(t, env)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the MCP config outlived serve's SIGKILL and the next start (%v)", err)
	}
	if files := runFolder(state); len(files) != 0 {
		t.Errorf("run folder after the next start: %q", files)
	}
	s.close()
}
