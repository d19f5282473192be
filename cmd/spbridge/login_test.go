//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/term"

	"spbridge/internal/fakeapi"
)

const fakeTTYEnv = "SPBRIDGE_FAKE_TTY_CLI"

func init() {
	helperModes[fakeTTYEnv] = func() int { return fakeTTYCLI(os.Args[1:]) }
}

// fakeTTYCLI plays a CLI's log-in: it refuses to run unless its stdin is a
// terminal, says the window size it sees (again after each resize), reads a
// line typed at it and exits with the status $SPBRIDGE_FAKE_TTY_CLI names; a
// Ctrl-C (SIGINT from its terminal) ends it with 130.
func fakeTTYCLI(args []string) int {
	if !term.IsTerminal(0) {
		fmt.Fprintln(os.Stderr, "fake login: stdin is not a terminal")
		return 2
	}
	code, _ := strconv.Atoi(os.Getenv(fakeTTYEnv))
	size := func() string { w, h, _ := term.GetSize(0); return fmt.Sprintf("%dx%d", h, w) }
	fmt.Printf("args %s\r\nsize %s\r\n", strings.Join(args, " "), size())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGINT)
	lines := make(chan string)
	go func() {
		l, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		lines <- strings.TrimSpace(l)
	}()
	fmt.Print("type the code: ")
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGINT {
				fmt.Print("\r\ninterrupted\r\n")
				return 130
			}
			fmt.Printf("\r\nresized %s\r\n", size())
		case l := <-lines:
			fmt.Printf("got %q\r\n", l)
			return code
		}
	}
}

func loginEnv(code int) []string {
	exe, _ := os.Executable()
	return append(os.Environ(), fakeTTYEnv+"="+strconv.Itoa(code), "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_CODEX="+exe, "GORACE=atexit_sleep_ms=0")
}

// readUntil reads r until the output holds want; it fails when r ends (the
// program exited) first. It waits for output, never for a time.
func readUntil(t *testing.T, r io.Reader, out *bytes.Buffer, want string) {
	t.Helper()
	buf := make([]byte, 4096)
	for !strings.Contains(out.String(), want) {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if err != nil && !strings.Contains(out.String(), want) {
			t.Fatalf("no %q in %q (%v)", want, out.String(), err)
		}
	}
}

// TestLoginInTerminal runs spbridge login in a pseudo-terminal, as a person
// at a terminal does: the relay both ways, a resize, the exit status, and
// the terminal's modes as they were.
func TestLoginInTerminal(t *testing.T) {
	bin := spbridgeBin(t)
	for _, tt := range []struct {
		name   string
		ctrlC  bool
		status int
	}{{"typed", false, 7}, {"ctrl-c", true, 130}} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, "login", "--backend", "claude")
			cmd.Env = loginEnv(7)
			master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
			if err != nil {
				t.Fatal(err)
			}
			defer master.Close()
			var out bytes.Buffer
			readUntil(t, master, &out, "type the code: ")
			if !strings.Contains(out.String(), "args auth login") || !strings.Contains(out.String(), "size 40x120") {
				t.Errorf("the CLI saw %q", out.String())
			}
			// Our terminal is raw while the CLI runs: its own terminal echoes.
			pty.Setsize(master, &pty.Winsize{Rows: 50, Cols: 132})
			readUntil(t, master, &out, "resized 50x132")
			if tt.ctrlC {
				master.Write([]byte{3})
				readUntil(t, master, &out, "interrupted")
			} else {
				master.Write([]byte("XY-123\r"))
				readUntil(t, master, &out, `got "XY-123"`)
			}
			err = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tt.status {
				t.Errorf("exit %d (%v), want %d; output %q", code, err, tt.status, out.String())
			}
		})
	}
}

// TestLoginRestoresTerminal checks the modes of spbridge's terminal after
// the log-in, whatever its end.
func TestLoginRestoresTerminal(t *testing.T) {
	bin := spbridgeBin(t)
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	before, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"typed", "killed"} {
		cmd := exec.Command(bin, "login", "--backend", "codex")
		cmd.Env = loginEnv(0)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		readUntil(t, master, &out, "type the code: ")
		raw, _ := term.GetState(int(tty.Fd()))
		if fmt.Sprint(raw) == fmt.Sprint(before) {
			t.Errorf("%s: the terminal is not in raw mode during the log-in", end)
		}
		if end == "typed" {
			master.Write([]byte("ok\r"))
		} else {
			cmd.Process.Signal(syscall.SIGTERM) // spbridge itself is stopped
		}
		cmd.Wait()
		after, _ := term.GetState(int(tty.Fd()))
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s: the terminal's modes were not restored", end)
		}
	}
}

// TestLoginThroughPipes is an editor driving spbridge login without a
// terminal: the CLI still gets one, sized by --size.
func TestLoginThroughPipes(t *testing.T) {
	t.Setenv(fakeTTYEnv, "5")
	exe, _ := os.Executable()
	t.Setenv("SPBRIDGE_CLAUDE", exe)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	inR, inW := io.Pipe()
	var out syncBuffer
	ended := make(chan struct{})
	var code int
	go func() {
		code = run(context.Background(), []string{"login", "--backend", "claude", "--size", "30x100"}, inR, &out, io.Discard)
		close(ended)
	}()
	// Type once the CLI asks, as a person would.
	if out.waitFor("type the code: ", ended) {
		inW.Write([]byte("from-a-pipe\n"))
	}
	<-ended
	if code != 5 || !strings.Contains(out.String(), "size 30x100") || !strings.Contains(out.String(), `got "from-a-pipe"`) {
		t.Errorf("exit %d, output %q", code, out.String())
	}
	if code := run(context.Background(), []string{"login", "--backend", "claude", "--size", "0x9"}, inR, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("--size 0x9: exit %d", code)
	}
}

// TestAuthStatusReal asks the real claude and codex, with a throwaway home:
// not logged in (without hanging), then claude with a key configured.
func TestAuthStatusReal(t *testing.T) {
	claudePath := fakeapi.ClaudePath(t)
	codexPath := os.Getenv("SPBRIDGE_CODEX")
	if codexPath == "" {
		root, _ := fakeapi.ModuleRoot()
		codexPath = root + "/.tools/npm/node_modules/@openai/codex/bin/codex.js"
	}
	if _, err := os.Stat(codexPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	home := t.TempDir()
	os.MkdirAll(home+"/.codex", 0o700)
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + home + "/.claude", "CODEX_HOME=" + home + "/.codex",
		"SPBRIDGE_CLAUDE=" + claudePath, "SPBRIDGE_CODEX=" + codexPath}
	status := func(env []string) (int, string) {
		cmd := exec.Command(spbridgeBin(t), "auth", "status", "--json")
		cmd.Env = env
		out, _ := cmd.Output()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	code, out := status(base)
	if code != 1 || !strings.Contains(out, `{"backend":"claude","loggedIn":false}`) || !strings.Contains(out, `{"backend":"codex","loggedIn":false}`) {
		t.Errorf("throwaway home: exit %d\n%s", code, out)
	}
	code, out = status(append(base, "ANTHROPIC_API_KEY=sk-ant-dummy-secret"))
	if !strings.Contains(out, `{"backend":"claude","loggedIn":true,"method":"api_key","source":"ANTHROPIC_API_KEY"}`) || strings.Contains(out, "dummy-secret") {
		t.Errorf("with a key: exit %d\n%s", code, out)
	}
}
