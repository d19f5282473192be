package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/pkglock"
)

// noExitSleep is the GORACE option that keeps a race-enabled binary from
// sleeping a second before it exits (races it found are still reported, and
// still make it exit 66).
const noExitSleep = "atexit_sleep_ms=0"

var update = flag.Bool("update", false, "rewrite the expected files of testdata/script when a cmp fails")

// helperModes turn the test binary into a fake CLI when their environment
// variable is set; the files that need one register it (some only on the
// systems they run on).
var helperModes = map[string]func() int{}

func TestMain(m *testing.M) {
	for env, mode := range helperModes {
		if os.Getenv(env) != "" {
			os.Exit(mode())
		}
	}
	if os.Getenv(fakeAskEnv) != "" {
		os.Exit(fakeAskingClaude())
	}
	// Commands run in this process do not pace its collector: replay's
	// pacing is tested here.
	noGCPacing = true
	// A race-enabled binary sleeps a second before it exits, by default;
	// the fake CLIs and MCP servers that this binary plays are such
	// binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" "+noExitSleep))
	testscript.Main(removeBuilt{m}, map[string]func(){
		"fakeclaude": func() { os.Exit(scriptClaude()) },
	})
}

func TestScript(t *testing.T) {
	// The scripts' spbridge is the program as built (spbridgeBin, without
	// the race detector, which the tests of this package run under: a
	// race-enabled start costs several times a plain one, and the scripts
	// start it hundreds of times); their fakeclaude is this test binary.
	// Both are in $SPBRIDGE_BINDIR, first on PATH.
	bin := t.TempDir()
	fake, err := exec.LookPath("fakeclaude") // testscript.Main's copy
	if err != nil {
		t.Fatal(err)
	}
	// $SPBRIDGE_VERSION is the version the built spbridge prints: "devel",
	// or the module version the go command stamps from the clone's commit
	// (it does with -trimpath, as scripts/test builds).
	out, err := exec.Command(spbridgeBin(t), "--version").Output()
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "spbridge ")
	if err != nil || !ok {
		t.Fatalf("spbridge --version: %q, %v", out, err)
	}
	for name, target := range map[string]string{"spbridge": spbridgeBin(t), "fakeclaude": fake} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			// $SPBRIDGE_BINDIR holds spbridge and fakeclaude alone:
			// PATH=$SPBRIDGE_BINDIR runs spbridge where no claude or codex
			// can be found.
			env.Setenv("SPBRIDGE_BINDIR", bin)
			env.Setenv("SPBRIDGE_VERSION", version)
			env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			// fakeclaude is this race-enabled binary: without this, each
			// of its runs would sleep a second before it exits.
			env.Setenv("GORACE", noExitSleep)
			// $TESTED_SET_NAME is a version of the CLI NAME that spbridge
			// is tested with ($TESTED_PINNED_CLAUDE): version --clis says them.
			for _, c := range clis.All {
				for _, tv := range clis.Tested(c.Name) {
					env.Setenv("TESTED_"+strings.ToUpper(tv.Set+"_"+c.Name), tv.Version)
				}
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"cmpnl": cmdCmpNL,
			"exits": cmdExits,
			"mtime": cmdMtime,
			"names": cmdNames,
		},
	})
}

// cmdExits runs a program like exec and checks its exit code, which exec
// and ! exec do not tell apart: exits CODE PROGRAM [ARGS...]
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	var exitErr *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case errors.As(err, &exitErr):
		got = exitErr.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdCmpNL compares FILE, which must not end in a newline, with WANT, which
// is FILE's bytes and a newline (as every file of a txtar archive ends):
// cmpnl FILE WANT
func cmdCmpNL(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! cmpnl")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: cmpnl FILE WANT")
	}
	got, want := ts.ReadFile(args[0]), ts.ReadFile(args[1])
	if strings.HasSuffix(got, "\n") {
		ts.Fatalf("%s ends in a newline", args[0])
	}
	if got+"\n" != want {
		ts.Fatalf("%s and a newline differ from %s:\n%s", args[0], args[1], diffLines(got+"\n", want))
	}
}

// diffLines points at the first line where got and want differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, gl, wl)
		}
	}
	return ""
}

// cmdMtime sets the modification time of files, so that listings are
// reproducible: mtime RFC3339-TIME FILE...
func cmdMtime(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mtime")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: mtime RFC3339-TIME FILE...")
	}
	when, err := time.Parse(time.RFC3339, args[0])
	ts.Check(err)
	for _, name := range args[1:] {
		ts.Check(os.Chtimes(ts.MkAbs(name), when, when))
	}
}

// cmdNames checks the names a folder holds, sorted, "" for none: names
// DIR [NAME...]
func cmdNames(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! names")
	}
	if len(args) < 1 {
		ts.Fatalf("usage: names DIR [NAME...]")
	}
	entries, err := os.ReadDir(ts.MkAbs(args[0]))
	ts.Check(err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(args[1:], " ") {
		ts.Fatalf("%s holds %q, want %q", args[0], got, args[1:])
	}
}

// TestSaveLocked checks that save refuses a package another holder has
// locked, names the holder, and leaves the package as it was.
func TestSaveLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Poster.silverpoint")
	if err := os.MkdirAll(filepath.Join(dir, archive.AgentDir), 0o700); err != nil {
		t.Fatal(err)
	}
	convPath := filepath.Join(dir, archive.AgentDir, archive.ConversationFile)
	const saved = `{"formatVersion": 1, "items": [{"id": "A", "type": "assistant", "text": "hi"}]}`
	if err := os.WriteFile(convPath, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}

	lock, err := pkglock.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()

	for _, args := range [][]string{
		{"save", dir},
		{"conversation", "new", "--yes", dir},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if code != exitFailure {
			t.Errorf("run(%q) = %d, want %d; stderr:\n%s", args, code, exitFailure, stderr.String())
		}
		if !strings.Contains(stderr.String(), "in use") {
			t.Errorf("run(%q) stderr = %q, want it to say the package is in use", args, stderr.String())
		}
		wantPrefix := fmt.Sprintf("spbridge: package %s is in use by pid %d", dir, os.Getpid())
		if !strings.HasPrefix(stderr.String(), wantPrefix) {
			t.Errorf("run(%q) stderr = %q, want prefix %q", args, stderr.String(), wantPrefix)
		}
		if stdout.Len() != 0 {
			t.Errorf("run(%q) stdout = %q, want nothing", args, stdout.String())
		}
		got, err := os.ReadFile(convPath)
		if err != nil {
			t.Fatalf("run(%q) left no conversation: %v", args, err)
		}
		if string(got) != saved {
			t.Errorf("run(%q) changed the conversation to %q", args, got)
		}
	}

	// Reading needs no lock.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"conversation", "show", dir}, nil, &stdout, &stderr); code != exitOK {
		t.Errorf("show while locked = %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
	}
	if want := "Assistant: hi\n"; stdout.String() != want {
		t.Errorf("show while locked printed %q, want %q", stdout.String(), want)
	}

	// Once released, save goes ahead.
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"save", dir}, nil, &stdout, &stderr); code != exitOK {
		t.Errorf("save after unlock = %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
	}
	if want := "wrote agent/conversation.json\n"; stdout.String() != want {
		t.Errorf("save after unlock printed %q, want %q", stdout.String(), want)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{errors.New("boom"), exitFailure},
		{&pkglock.HeldError{Path: "/x"}, exitFailure},
		{usagef("save", "bad"), exitUsage},
		{fmt.Errorf("wrapped: %w", usagef("", "bad")), exitUsage},
		{&usageError{cmd: "conversation"}, exitUsage},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestVersionVar(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, nil, &stdout, &stderr)
		if code != exitOK || stdout.String() != "spbridge v1.2.3\n" || stderr.Len() != 0 {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 0, %q, nothing", args, code, stdout.String(), stderr.String(), "spbridge v1.2.3\n")
		}
	}
}

func TestItemText(t *testing.T) {
	tests := []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"type": "user", "text": "hi"}, "User: hi"},
		{map[string]any{"type": "user", "text": "look", "hasImage": true}, "User: look [image]"},
		{map[string]any{"type": "tool", "name": "Bash", "summary": "ls", "statusText": "exit 0", "status": "succeeded"}, "Tool Bash: ls (exit 0) [succeeded]"},
		{map[string]any{"type": "tool", "name": "Bash", "statusText": "exit 0"}, "Tool Bash (exit 0)"},
		{map[string]any{"type": "tool", "summary": "ls"}, "Tool: ls"},
		{map[string]any{"type": "tool"}, "Tool"},
		{map[string]any{"type": "failure", "text": "crashed"}, "Failure: crashed"},
		{map[string]any{"type": "failure", "text": "crashed", "detail": "a\nb\n"}, "Failure: crashed\n  a\n  b"},
		{map[string]any{"type": "questions", "questions": []any{map[string]any{"question": "A?"}, map[string]any{"options": []any{}}, map[string]any{"question": "B?"}}}, "Questions: A? B?"},
		{map[string]any{"type": "toolApproval", "name": "Write"}, "Approval Write"},
		{map[string]any{"type": "webSearch", "query": "q"}, "Web search: q"},
		{map[string]any{"type": "skillProposal"}, "[skillProposal]"},
	}
	for _, tt := range tests {
		tt.fields["id"] = "X"
		if got := itemText(archive.ItemFromMap(tt.fields)); got != tt.want {
			t.Errorf("itemText(%v) = %q, want %q", tt.fields, got, tt.want)
		}
	}
}
