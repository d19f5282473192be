package claude

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
	"spbridge/internal/secretfile"
	"spbridge/internal/statedir"
)

// fakeReadMCPConfig reads the --mcp-config file as Claude Code 2.1.328
// does: once, at start-up, before any line; a file that is not there ends
// it. It returns the file's path and what it held ("" when not given).
func fakeReadMCPConfig() (path, data string) {
	i := slices.Index(os.Args, "--mcp-config")
	if i < 0 || i+1 >= len(os.Args) {
		return "", ""
	}
	path = os.Args[i+1]
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: Invalid MCP configuration:\nMCP config file not found: %s\n", path)
		os.Exit(1)
	}
	return path, string(b)
}

// deadPID is the pid of a process that ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// runFiles lists the files in the state folder's run folder.
func runFiles(t *testing.T, state string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(state, secretfile.Folder))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// killCLI kills the running claude with SIGKILL (on Windows,
// TerminateProcess) and waits for the backend to notice it ended between
// turns, as h hears.
func killCLI(t *testing.T, b *Backend, h noticeHost) {
	t.Helper()
	p := b.Proc()
	if p == nil {
		t.Fatal("no claude process")
	}
	proc, err := os.FindProcess(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	for n := range h.notices {
		if strings.HasPrefix(n, "Claude Code exited between turns") {
			return
		}
	}
}

// replyRead is the config path and text the fake read, from its reply
// "turn N read PATH: DATA".
func replyRead(t *testing.T, rec *recorder) (path, data string) {
	t.Helper()
	for _, s := range rec.texts() {
		if _, rest, ok := strings.Cut(s, " read "); ok {
			path, data, _ = strings.Cut(rest, ": ")
			return path, data
		}
	}
	t.Fatalf("no reply that says what claude read: %q", rec.texts())
	return "", ""
}

// TestMCPConfigRemovedOnceRead: the --mcp-config file, which holds the MCP
// servers' secrets, is in the state folder's run folder, named by this
// process's pid, and gone once claude answered its initialize request,
// having read it; a claude started again (--resume) gets it again, and it
// goes again. The start removes the file a spbridge that is gone left
// behind, and keeps the one of another conversation whose claude has not
// read it yet.
func TestMCPConfigRemovedOnceRead(t *testing.T) {
	state := t.TempDir()
	t.Setenv(statedir.EnvVar, state)
	run := filepath.Join(state, secretfile.Folder)
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(run, strconv.Itoa(deadPID(t))+"-0123abcd-mcp.json")
	if err := os.WriteFile(stale, []byte(`{"mcpServers":{"x":{"env":{"TOKEN":"old-secret"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := secretfile.Write(state, "mcp.json", []byte(`{"mcpServers":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Remove()

	servers := []backend.MCPServer{{Name: "fake", Transport: backend.MCPStdio, Command: "fake-mcp",
		Env: []backend.NameValue{{Name: "TOKEN", Value: "s3cret-token"}}}}
	b := fakeBackend(t, "mcp-config", Options{MCPServers: servers})
	h := noticeHost{notices: make(chan string, 10)}
	b.Watch(h)
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := runFiles(t, state), []string{filepath.Base(other.Path)}; !slices.Equal(got, want) {
		t.Errorf("run folder once claude answered initialize = %q, want %q (the stale file and claude's own gone)", got, want)
	}
	var read []string
	for turn := 1; turn <= 2; turn++ {
		rec := &recorder{}
		if end := b.Turn(context.Background(), backend.Message{Text: "hi"}, rec); end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %d = %+v, items %q, stderr %q", turn, end, rec.texts(), b.StderrTail())
		}
		path, data := replyRead(t, rec)
		if !strings.Contains(data, "s3cret-token") {
			t.Errorf("turn %d: claude read %q, without the server's secret", turn, data)
		}
		if filepath.Dir(path) != run || !strings.HasPrefix(filepath.Base(path), strconv.Itoa(os.Getpid())+"-") {
			t.Errorf("turn %d: config %s, want %s/<spbridge's pid>-…", turn, path, run)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("turn %d: the config claude read is still there (%v)", turn, err)
		}
		read = append(read, path)
		if turn == 1 {
			killCLI(t, b, h) // the next turn starts claude again, resuming
		}
	}
	if read[0] == read[1] {
		t.Errorf("both claude processes read %s", read[0])
	}
	if !strings.Contains(strings.Join(b.args(), " "), "--resume") {
		t.Errorf("the second claude did not resume: %q", b.args())
	}
	if !slices.Contains(runFiles(t, state), filepath.Base(other.Path)) {
		t.Error("the other conversation's file was removed")
	}
}

// TestE2EMCPConfigRemovedOnceRead: the real claude reads its --mcp-config
// at start-up, so the file is removed once it answered initialize, and
// its MCP server still connects and serves a tool call after that; a
// claude killed and started again (--resume) is given the file again and
// its server serves again.
func TestE2EMCPConfigRemovedOnceRead(t *testing.T) {
	state := t.TempDir()
	t.Setenv(statedir.EnvVar, state)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := []backend.MCPServer{{Name: "fake", Transport: backend.MCPStdio, Command: exe,
		Env: []backend.NameValue{{Name: fakeapi.MCPServerEnv, Value: "1"}, {Name: fakeapi.MCPTokenEnv, Value: "s3cret-token"}}}}
	shout := func(id string) fakeapi.Reply {
		return fakeapi.Reply{Blocks: []fakeapi.Block{tool(id, "mcp__fake__shout", map[string]any{"text": "hi"})}}
	}
	b, s, _ := realClaude(t, Options{MCPServers: servers, Mode: ModeBypass}, shout("toolu_mcp_1"), reply("one"), shout("toolu_mcp_2"), reply("two"))
	h := noticeHost{notices: make(chan string, 10)}
	b.Watch(h)
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if files := runFiles(t, state); len(files) != 0 {
		t.Fatalf("run folder once claude answered initialize: %q", files)
	}
	var configs []string
	for turn := 1; turn <= 2; turn++ {
		if turn == 2 {
			killCLI(t, b, h)
		}
		rec := &recorder{}
		end := b.Turn(context.Background(), backend.Message{Text: "call the shout tool"}, rec)
		if end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %d = %v, items %q", turn, end.Status, rec.texts())
		}
		var last []byte
		for _, r := range s.Requests() {
			if r.Path == "/v1/messages" {
				last = r.Body
			}
		}
		if !strings.Contains(string(last), "HI s3cret-token") {
			t.Errorf("turn %d: the MCP tool's result did not reach the model: %.2000s", turn, last)
		}
		if files := runFiles(t, state); len(files) != 0 {
			t.Errorf("turn %d: run folder %q, want empty", turn, files)
		}
		if p := b.Proc(); p != nil {
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid())); err == nil {
				argv := strings.Split(string(cmdline), "\x00")
				if i := slices.Index(argv, "--mcp-config"); i >= 0 && i+1 < len(argv) {
					configs = append(configs, argv[i+1])
				}
			}
		}
	}
	if _, err := os.Stat("/proc/self/cmdline"); err == nil && len(configs) != 2 {
		t.Errorf("read the --mcp-config of %d claude processes, want 2", len(configs))
	}
	for _, c := range configs {
		if filepath.Dir(c) != filepath.Join(state, secretfile.Folder) {
			t.Errorf("claude was given %s, outside the state folder's run folder", c)
		}
	}
	if len(configs) == 2 && configs[0] == configs[1] {
		t.Errorf("both claude processes were given %s", configs[0])
	}
	if st, err := os.Stat(filepath.Join(state, secretfile.Folder)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("run folder: %v, %v; want mode 0700", st, err)
	}
}
