//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// runInPTY starts spbridge run PKG args… in a pseudo-terminal with a fake
// claude selected by env.
func runInPTY(t *testing.T, env []string, args ...string) (*exec.Cmd, *os.File) {
	t.Helper()
	return runInPTYSize(t, 200, env, args...)
}

// runInPTYSize is runInPTY in a terminal cols columns wide.
func runInPTYSize(t *testing.T, cols uint16, env []string, args ...string) (*exec.Cmd, *os.File) {
	t.Helper()
	exe, _ := os.Executable()
	pkg := newPackage(t)
	cmd := exec.Command(spbridgeBin(t), append([]string{"run", pkg}, args...)...)
	cmd.Env = append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_STATE_DIR="+t.TempDir(), "GORACE=atexit_sleep_ms=0", "NO_COLOR=")
	cmd.Env = append(cmd.Env, env...)
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	return cmd, master
}

// TestRunAskYAN: at a terminal, y allows once, a allows the command's
// program and first argument for the rest of the run (no question for
// `git status --short` after a on `git status -s`), n denies.
func TestRunAskYAN(t *testing.T) {
	cmds := []string{"git status", "git status -s", "git status --short", "rm -rf build"}
	cmd, master := runInPTY(t, []string{fakeAsksEnv + "=" + strings.Join(cmds, "\n"), "NO_COLOR=1"}, "tidy up")
	var out bytes.Buffer
	for _, step := range []struct{ prompt, answer string }{
		{"Allow Bash? Run `git status`\r\n  y: once · a: always, `git status …` in the working folder in this run · n: no [y/a/N] ", "y"},
		{"Allow Bash? Run `git status -s`\r\n  y: once · a: always, `git status …` in the working folder in this run · n: no [y/a/N] ", "a"},
		{"Allow Bash? Run `rm -rf build`", "n"},
	} {
		readUntil(t, master, &out, step.prompt)
		master.Write([]byte(step.answer + "\r"))
	}
	readUntil(t, master, &out, "answers: allow,allow,allow,deny")
	readUntil(t, master, &out, "cost $0.0042 (reported)")
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d: %q", code, out.String())
	}
	if n := strings.Count(out.String(), "[y/a/N]"); n != 3 {
		t.Errorf("%d questions, want 3: %q", n, out.String())
	}
	for _, want := range []string{"tool `git status --short` (exit 0) [succeeded]", "tool `rm -rf build` [denied]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in %q", want, out.String())
		}
	}
}

// TestRunColor: colours at a terminal unless NO_COLOR (any value) or
// --color never; piped only with --color always.
func TestRunColor(t *testing.T) {
	t.Parallel()
	const green = "\x1b[32m+roses are blue\x1b[0m"
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		tty   bool
		color bool
	}{
		{"tty", nil, nil, true, true},
		{"tty NO_COLOR", []string{"NO_COLOR=1"}, nil, true, false},
		{"tty never", nil, []string{"--color", "never"}, true, false},
		{"tty NO_COLOR always", []string{"NO_COLOR=1"}, []string{"--color", "always"}, true, true},
		{"piped", nil, nil, false, false},
		{"piped always", nil, []string{"--color", "always"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{fakeEditEnv + "=1"}, tc.env...)
			args := append(tc.args, "make it blue")
			var out string
			if tc.tty {
				cmd, master := runInPTY(t, env, args...)
				var buf bytes.Buffer
				readUntil(t, master, &buf, "(reported)")
				cmd.Wait()
				out = buf.String()
			} else {
				exe, _ := os.Executable()
				pkg := newPackage(t)
				cmd := exec.Command(spbridgeBin(t), append([]string{"run", pkg}, args...)...)
				cmd.Env = append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_STATE_DIR="+t.TempDir(), "NO_COLOR=")
				cmd.Env = append(cmd.Env, env...)
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %s", err, b)
				}
				out = string(b)
			}
			if !strings.Contains(out, "-roses are red") || !strings.Contains(out, "+roses are blue") {
				t.Errorf("no diff in %q", out)
			}
			if got := strings.Contains(out, green); got != tc.color {
				t.Errorf("coloured diff %v, want %v: %q", got, tc.color, out)
			}
			if !tc.color && strings.Contains(out, "\x1b[") {
				t.Errorf("escape sequences in %q", out)
			}
		})
	}
}

// TestRunAskPiped: without a terminal a permission request is denied,
// and standard error names the tool and the flag that allows it.
func TestRunAskPiped(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	pkg := newPackage(t)
	cmd := exec.Command(spbridgeBin(t), "run", pkg, "tidy up")
	cmd.Env = append(os.Environ(), fakeAsksEnv+"=rm -rf build", "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_STATE_DIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s%s", err, stdout.String(), stderr.String())
	}
	want := "spbridge: denied Bash (`rm -rf build`): no terminal to ask on; allow it with --allow-tool Bash\n"
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stdout.String(), "answers: deny") {
		t.Errorf("stdout %q\nstderr %q\nwant on stderr %q", stdout.String(), stderr.String(), want)
	}
}

// TestRunStatusNarrow: in a terminal 40 columns wide, the status line of
// a command longer than that (over several lines) is redrawn on one row,
// leaving no row behind; the thinking shows as one "thinking…" line, and
// the command's title comes before its end.
func TestRunStatusNarrow(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, master := runInPTYSize(t, 40, []string{fakeSlowEnv + "=" + fifo, "NO_COLOR=1"}, "check the files")
	var out bytes.Buffer
	// The status line of the running command, drawn three times.
	buf := make([]byte, 4096)
	for strings.Count(out.String(), "… running") < 3 {
		n, err := master.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			t.Fatalf("%v: %q", err, out.String())
		}
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("go\n"))
	w.Close()
	readUntil(t, master, &out, "(reported)")
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d: %q", code, out.String())
	}
	rows := screen(out.String(), 40)
	stale := regexp.MustCompile(`^… |\(\d+s\)$`)
	for i, row := range rows {
		if stale.MatchString(row) {
			t.Errorf("row %d is left of a status line: %q\nscreen:\n%s", i, row, strings.Join(rows, "\n"))
		}
	}
	text := strings.Join(rows, "\n")
	thinking := strings.Index(text, "thinking…")
	title := strings.Index(text, "tool `for f in")
	if thinking < 0 || title < thinking || !strings.Contains(text, "[succeeded]") || !strings.HasSuffix(text, "(reported)") {
		t.Errorf("screen:\n%s", text)
	}
}

// TestRunUnaskedTerminal: in a terminal 40, 80, 100 or 101 columns wide,
// a command claude runs without asking, right after its text, shows on
// the status line at once with the tool's name and its time, gets its
// [running] line, and the screen at the end holds no row of a status line
// and none wider than the terminal (the turn's end line wrapped to fit).
func TestRunUnaskedTerminal(t *testing.T) {
	for _, width := range runningWidths {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			t.Parallel()
			fifo := filepath.Join(t.TempDir(), "build")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd, master := runInPTYSize(t, uint16(width), []string{fakeUnaskedEnv + "=" + fifo, "NO_COLOR=1"}, "build it")
			var out bytes.Buffer
			readUntil(t, master, &out, "I will wait for the build.")
			// The status line, then the [running] line, then the status
			// line again: each redraw names the tool and its time.
			status := regexp.MustCompile("… running Bash `cat [^\r\n]*\\((\\d+)s\\)")
			readUntilMatch(t, master, &out, status)
			readUntil(t, master, &out, "tool `cat "+fifo+"` [running]")
			at := out.Len()
			readUntilMatch(t, master, &out, status, at)
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("go\n"))
			w.Close()
			readUntil(t, master, &out, "(reported)")
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit %d: %q", code, out.String())
			}
			rows := screen(out.String(), width)
			checkRows(t, rows, width)
			text := strings.Join(rows, "\n")
			if joined := strings.Join(rows, ""); !strings.Contains(joined, "[succeeded]") || !strings.Contains(joined, "I will wait for the build.") {
				t.Errorf("screen:\n%s", text)
			}
		})
	}
}

// readUntilMatch reads r until what it printed after byte from (0 when
// not given) matches re; it fails when r ends first. It waits for output,
// never for a time.
func readUntilMatch(t *testing.T, r io.Reader, out *bytes.Buffer, re *regexp.Regexp, from ...int) {
	t.Helper()
	start := 0
	if len(from) > 0 {
		start = from[0]
	}
	buf := make([]byte, 4096)
	for !re.Match(out.Bytes()[start:]) {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if err != nil && !re.Match(out.Bytes()[start:]) {
			t.Fatalf("no match of %s in %q (%v)", re, out.Bytes()[start:], err)
		}
	}
}

// TestRunUnaskedPiped: piped, with no status line, a command claude runs
// without asking still gets its [running] line on standard output once
// it ran a second, before it ends.
func TestRunUnaskedPiped(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "build")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(spbridgeBin(t), "run", newPackage(t), "build it")
	cmd.Env = append(os.Environ(), fakeUnaskedEnv+"="+fifo, "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_STATE_DIR="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	readUntil(t, stdout, &out, "I will wait for the build.\ntool `cat "+fifo+"` [running]\n")
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("go\n"))
	w.Close()
	rest, _ := io.ReadAll(stdout)
	out.Write(rest)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s%s", err, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "[succeeded]") {
		t.Errorf("stdout %q", out.String())
	}
	if strings.Contains(stderr.String(), "… ") {
		t.Errorf("a status line piped: %q", stderr.String())
	}
}
