package disttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"spbridge/internal/fakeapi"
)

// nodeSystem is how Node names this system (process.platform, process.arch).
func nodeSystem(t *testing.T) (string, string) {
	platform := map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}[runtime.GOOS]
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if platform == "" || arch == "" {
		t.Skipf("spbridge has no npm package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return platform, arch
}

// TestNPMPackages builds spbridge for this system with scripts/dist (once
// for the package's tests: buildDist), installs the npm packages it wrote
// from the files (no registry) into a temporary folder, and runs spbridge through them as an editor would:
// `npx spbridge version`, an exit code, signals passed through the
// launcher, and a turn through `npx spbridge serve` under the official ACP
// client with the real claude against the fake API.
func TestNPMPackages(t *testing.T) {
	needNPM(t)
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	claude := fakeapi.ClaudePath(t)
	sdk := filepath.Join(root, ".tools", "npm", "node_modules", "@agentclientprotocol", "sdk")
	if _, err := os.Stat(sdk); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the ACP SDK is not installed: %v", err)
		}
		t.Skipf("the ACP SDK is not installed (run bash scripts/install-clis): %v", err)
	}
	tmp := t.TempDir()
	d := buildDist(t)
	version := d.version

	// Install from the files, with a cache of its own and no registry: the
	// other systems' packages, optional, are left out.
	prefix := filepath.Join(tmp, "prefix")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	npmEnv := npmEnv(tmp)
	install := exec.Command("npm", "install", "--prefix", prefix, d.launcherTgz, d.platformTgz)
	install.Env = npmEnv
	if b, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, b)
	}

	npx := func(args ...string) *exec.Cmd {
		cmd := exec.Command("npx", append([]string{"--no-install", "spbridge"}, args...)...)
		cmd.Dir = prefix
		cmd.Env = npmEnv
		return cmd
	}
	got, err := npx("version").Output()
	if err != nil || string(got) != "spbridge "+version+"\n" {
		t.Errorf("npx spbridge version: %q %v, want %q", got, err, "spbridge "+version+"\n")
	}
	// spbridge's exit code comes through (2: a usage error).
	var stderr bytes.Buffer
	bad := npx("no-such-command")
	bad.Stderr = &stderr
	if err := bad.Run(); bad.ProcessState == nil || bad.ProcessState.ExitCode() != 2 {
		t.Errorf("npx spbridge no-such-command: %v, want exit code 2\n%s", err, stderr.String())
	}

	launcher := filepath.Join(prefix, "node_modules", "spbridge", "bin", "spbridge.js")
	if runtime.GOOS != "windows" {
		signalPassedOn(t, launcher)
	}

	// One turn under the official ACP client, spbridge started by npx.
	srv, err := fakeapi.NewAnthropic(fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello through the npm package."}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home := filepath.Join(tmp, "home")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{filepath.Join(home, "tmp"), work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]any{
		"SPBRIDGE_CLAUDE":    claude,
		"SPBRIDGE_STATE_DIR": filepath.Join(tmp, "state"),
		"npm_config_cache":   filepath.Join(tmp, "npm-cache"),
		"npm_config_offline": "true",
	}
	for _, kv := range srv.ClaudeEnv(home) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	npxPath, _ := exec.LookPath("npx")
	events := runACPClient(t, root, map[string]any{
		"command": []string{npxPath, "--no-install", "spbridge", "serve"}, "env": env, "cwd": prefix,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "say hello"},
			map[string]any{"op": "closeStdin"},
		},
	})
	var stop, text string
	exited := false
	for _, e := range events {
		switch {
		case e.Event == "response" && e.Step != nil && *e.Step == 2:
			var r struct {
				StopReason string `json:"stopReason"`
			}
			json.Unmarshal(e.Result, &r)
			stop = r.StopReason
		case e.Event == "notification" && e.Method == "session/update":
			var p struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					Content       struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			json.Unmarshal(e.Params, &p)
			if p.Update.SessionUpdate == "agent_message_chunk" {
				text += p.Update.Content.Text
			}
		case e.Event == "exit":
			exited = e.Code != nil && *e.Code == 0
		}
	}
	if stop != "end_turn" || text != "Hello through the npm package." || !exited {
		t.Errorf("the turn through npx spbridge serve: stopReason %q, text %q, exited cleanly %v\nevents: %+v", stop, text, exited, events)
	}
}

// signalPassedOn starts spbridge serve through the launcher, waits for its
// answer to initialize, and sends the launcher SIGTERM: spbridge gets it
// and ends as it does on SIGTERM (saying how long it served, exit code 0),
// and the launcher ends after it, with its exit code. (Standard input stays
// open until the launcher has ended, so only the signal can end spbridge;
// a launcher that did not pass it on would die of it, leaving spbridge to
// end when its input closes.)
func signalPassedOn(t *testing.T, launcher string) {
	t.Helper()
	cmd := exec.Command("node", launcher, "serve")
	cmd.Env = append(os.Environ(), "SPBRIDGE_STATE_DIR="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: Wait returns when the launcher ends, whether or
	// not spbridge still holds its stderr.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logged := func() string { b, _ := os.ReadFile(stderr.Name()); return string(b) }
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("no answer to initialize through the launcher: %q %v\n%s", line, err, logged())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 || !strings.Contains(logged(), "served for") {
		t.Errorf("after SIGTERM the launcher ended with %v (%v), want spbridge's exit code 0 after spbridge ended\n%s", cmd.ProcessState, err, logged())
	}
}

// acpEvent is one line the ACP test client wrote (testdata/acp-client).
type acpEvent struct {
	Event  string          `json:"event"`
	Step   *int            `json:"step"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Code   *int            `json:"code"`
}

// runACPClient runs testdata/acp-client/client.mjs on a scenario and returns
// its events; a message that breaks the ACP schemas fails the test.
func runACPClient(t *testing.T, root string, scenario map[string]any) []acpEvent {
	t.Helper()
	data, err := json.Marshal(scenario)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "scenario.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(root, "testdata", "acp-client", "client.mjs"), file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var events []acpEvent
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e acpEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			events = append(events, e)
		}
	}
	for _, e := range events {
		if e.Event == "invalid" || e.Event == "fail" {
			t.Errorf("client: %s %s %s %s", e.Event, e.Method, e.Params, e.Error)
		}
	}
	if err != nil {
		t.Fatalf("the ACP client failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return events
}
