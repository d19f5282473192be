//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"spbridge/internal/supervise"
)

// fakeTextEnv makes the test binary a claude that answers one message with
// text.
const fakeTextEnv = "SPBRIDGE_FAKE_CLAUDE_TEXT"

func init() {
	helperModes[fakeTextEnv] = func() int {
		f := newFakeStream()
		if !f.waitUser() {
			return 0
		}
		f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": "fake-1", "model": "claude-sonnet-4-5"})
		f.finish("hello back")
		return 0
	}
}

// TestInheritedSupervisorVar: SPBRIDGE_SUPERVISOR in the environment that
// spbridge is started with (an editor's, or one copied from a supervisor's,
// with a valid-looking value) does not stop spbridge: version, serve and run
// work, and the CLI's environment does not carry it. (Before, spbridge
// became a supervisor that refused to start, exit 125.)
func TestInheritedSupervisorVar(t *testing.T) {
	bin := spbridgeBin(t)
	exe, _ := os.Executable()
	dir := t.TempDir()
	// The CLI records the environment it was started with, before anything
	// of Go's runs in it, then plays claude.
	claude := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nenv > \"$SPBRIDGE_TEST_ENVFILE\"\nexec \"$SPBRIDGE_TEST_EXE\" \"$@\"\n"
	if err := os.WriteFile(claude, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, value := range []string{"1", "", "2:0::0123456789abcdef0123456789abcdef", "2:0:umP:0123456789abcdef0123456789abcdef"} {
		t.Run(value, func(t *testing.T) {
			envFile := filepath.Join(t.TempDir(), "env")
			env := append(os.Environ(), supervise.EnvVar+"="+value, "GORACE=atexit_sleep_ms=0",
				"SPBRIDGE_STATE_DIR="+t.TempDir(), "SPBRIDGE_CLAUDE="+claude, "SPBRIDGE_TEST_EXE="+exe,
				"SPBRIDGE_TEST_ENVFILE="+envFile, fakeTextEnv+"=1")
			spb := func(stdin string, args ...string) string {
				t.Helper()
				cmd := exec.Command(bin, args...)
				cmd.Env = env
				cmd.Stdin = strings.NewReader(stdin)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("spbridge %s: %v; stdout %q, stderr %q", strings.Join(args, " "), err, stdout.String(), stderr.String())
				}
				return stdout.String()
			}
			if out := spb("", "version"); !strings.HasPrefix(out, "spbridge ") {
				t.Errorf("spbridge version printed %q", out)
			}
			out := spb(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`+"\n", "serve")
			if !strings.Contains(out, `"protocolVersion":1`) {
				t.Errorf("spbridge serve answered %q to initialize", out)
			}
			pkg := newPackage(t)
			if out := spb("", "run", pkg, "hello"); !strings.Contains(out, "hello back") {
				t.Errorf("spbridge run printed %q", out)
			}
			b, err := os.ReadFile(envFile)
			if err != nil {
				t.Fatalf("the CLI did not run: %v", err)
			}
			if strings.Contains(string(b), supervise.EnvVar+"=") {
				t.Errorf("the CLI's environment holds %s: %q", supervise.EnvVar, b)
			}
			if !strings.Contains(string(b), "SPBRIDGE_TEST_ENVFILE=") {
				t.Errorf("the CLI's environment lacks what spbridge was given: %q", b)
			}
		})
	}
}

// TestVersionSupervision: spbridge version --supervision names the layer
// that holds the CLIs' processes here, and what it guarantees; with
// SPBRIDGE_NO_NAMESPACE set, the subreaper on Linux.
func TestVersionSupervision(t *testing.T) {
	bin := spbridgeBin(t)
	want := map[string][]string{
		"linux":  {supervise.PIDNamespace, supervise.UserPIDNamespace, supervise.Subreaper},
		"darwin": {supervise.ProcessWalk},
	}[runtime.GOOS]
	if want == nil {
		want = []string{supervise.CLIOnly}
	}
	for _, noNS := range []bool{false, true} {
		cmd := exec.Command(bin, "version", "--supervision")
		cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", supervise.NoNamespaceVar+"=")
		if noNS {
			cmd.Env = append(cmd.Env, supervise.NoNamespaceVar+"=1")
		}
		out, err := cmd.Output()
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "spbridge ") {
			t.Fatalf("spbridge version --supervision: %v, %q", err, out)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(lines[1], "supervision: "), ":")
		name, _, _ = strings.Cut(name, ",")
		ok := false
		for _, w := range want {
			ok = ok || name == w
		}
		if !ok || !strings.HasPrefix(lines[1], "supervision: ") {
			t.Errorf("%q: want one of %q", lines[1], want)
		}
		if noNS && runtime.GOOS == "linux" && name != supervise.Subreaper {
			t.Errorf("with %s=1: %q, want %s", supervise.NoNamespaceVar, lines[1], supervise.Subreaper)
		}
		if runtime.GOOS == "linux" && os.Geteuid() == 0 && !noNS && name != supervise.PIDNamespace {
			t.Logf("as root: %q (no PID namespace allowed here?)", lines[1])
		}
		t.Logf("%s", lines[1])
	}
}
