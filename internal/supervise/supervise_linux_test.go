package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/proctest"
	"spbridge/internal/testbin"
)

var cycles = flag.Int("cycles", 200, "cycles of each ending in TestNothingSurvives")

// markVar is set, with a value unique to a cycle, in the environment of
// every process of the cycle, so that the test can find them all.
const markVar = "SPBRIDGE_SUPERVISE_MARK"

// marked returns the pids of live processes whose environment holds
// markVar=mark.
func marked(mark string) []int {
	return proctest.PIDs(markedProcs(mark))
}

func markedProcs(mark string) []proctest.Proc {
	ps, _ := proctest.WithEnv(markVar + "=" + mark)
	return ps
}

// waitUnmarked waits until no process carries mark. The deadline is only an
// upper bound for a broken supervisor; a working one is done in
// milliseconds. It waits for the marked processes it found to end before it
// reads the whole process table again (a process marked since was started
// by one of them): a reading of every process's environment every
// millisecond took most of the test's time on a busy machine.
func waitUnmarked(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ps := markedProcs(mark)
		if len(ps) == 0 {
			return
		}
		for _, p := range ps {
			for p.Live() {
				if time.Now().After(deadline) {
					t.Fatalf("processes of %s left: %v", mark, describe(proctest.PIDs(ps)))
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}

func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

// markedEnv sets markVar=mark in this process's environment for helpers to
// inherit.
func markedEnv(t *testing.T, mark string) {
	t.Setenv(markVar, mark)
}

func readLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	l, err := r.ReadString('\n')
	if l != want+"\n" {
		t.Fatalf("read %q, %v; want %q", l, err, want)
	}
}

// startSupervised starts the fake CLI under a supervisor, as cliproc would,
// and waits until it is ready.
func startSupervised(t *testing.T, sup string) (cmd *exec.Cmd, life *Lifeline, stdin io.WriteCloser, stdout *bufio.Reader) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd, life, err = Command(sup, cliCommand(inR, outW))
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		life.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close(); inW.Close() })
	if _, err := life.Started(cmd.Process); err != nil {
		life.Close()
		cmd.Wait()
		t.Fatal(err)
	}
	stdout = bufio.NewReader(outR)
	readLine(t, stdout, "ready")
	return cmd, life, inW, stdout
}

// TestNothingSurvives runs the fake CLI, whose children detach (a new
// session through a double fork, a process group of its own, SIGHUP
// ignored), under a supervisor, and ends each cycle in one of three ways;
// after each, no process of the cycle may be left.
func TestNothingSurvives(t *testing.T) {
	n := *cycles
	if testing.Short() {
		n = 10
	}
	for _, ending := range []string{"exit", "lifeline", "sigkill-parent"} {
		t.Run(ending, func(t *testing.T) {
			for i := range n {
				// The first cycle's supervisor (and bridge) is this
				// race-enabled binary; the others are its copy without
				// the race detector, which starts in a tenth of the time.
				sup := exe()
				if i > 0 {
					sup = testbin.Helper()
				}
				mark := fmt.Sprintf("%d-%s-%d", os.Getpid(), ending, i)
				markedEnv(t, mark)
				switch ending {
				case "exit":
					cmd, life, stdin, stdout := startSupervised(t, sup)
					checkMarked(t, mark, 5)
					io.WriteString(stdin, "exit 7\n")
					readLine(t, stdout, "bye")
					err := cmd.Wait()
					life.Close()
					if cmd.ProcessState.ExitCode() != 7 {
						t.Fatalf("cycle %d: supervisor ended %v, want exit status 7", i, err)
					}
				case "lifeline":
					cmd, life, _, _ := startSupervised(t, sup)
					checkMarked(t, mark, 5)
					life.Close()
					cmd.Wait()
					if ws := life.Status(cmd.ProcessState); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
						t.Fatalf("cycle %d: CLI ended %#x (supervisor %v), want killed by SIGKILL", i, ws, cmd.ProcessState)
					}
				case "sigkill-parent":
					outR, outW, err := os.Pipe()
					if err != nil {
						t.Fatal(err)
					}
					bridge := helper("bridge")
					bridge.Path = sup
					bridge.Stdout, bridge.Stderr = outW, os.Stderr
					// Its stdin: a pipe that stays open, as an editor's would.
					inR, inW, err := os.Pipe()
					if err != nil {
						t.Fatal(err)
					}
					bridge.Stdin = inR
					if err := bridge.Start(); err != nil {
						t.Fatal(err)
					}
					outW.Close()
					inR.Close()
					br := bufio.NewReader(outR)
					readBridge(t, br)
					checkMarked(t, mark, 6)
					bridge.Process.Kill()
					bridge.Wait()
					waitUnmarked(t, mark)
					// Every writer of the CLI's stdout is gone.
					if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
						t.Fatalf("cycle %d: stdout after ready: %q, %v", i, b, err)
					}
					outR.Close()
					inW.Close()
				}
				waitUnmarked(t, mark)
			}
		})
	}
}

// checkMarked fails unless at least n processes carry mark: the supervisor,
// the CLI and the three it started (and the bridge when there is one).
func checkMarked(t *testing.T, mark string, n int) {
	t.Helper()
	if pids := marked(mark); len(pids) < n {
		t.Fatalf("%d processes of %s running, want at least %d: %v", len(pids), mark, n, describe(pids))
	}
}

// TestStdio: the CLI's stdin and stdout are the supervisor's own files (the
// same pipes, not copies), and its exit status is passed on.
func TestStdio(t *testing.T) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inW.Close()
	defer outR.Close()
	cli := helper("fds")
	cli.Stdin, cli.Stdout = inR, outW
	cmd, life, err := Command(exe(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	if _, err := life.Started(cmd.Process); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(outR)
	cmd.Wait()
	if c := cmd.ProcessState.ExitCode(); c != 5 {
		t.Errorf("exit status %d, want 5", c)
	}
	want := ""
	for _, f := range []*os.File{inW, outR} { // a pipe's two ends share the inode
		var st syscall.Stat_t
		syscall.Fstat(int(f.Fd()), &st)
		want += fmt.Sprintf("%d:%d\n", st.Dev, st.Ino)
	}
	if string(out) != want {
		t.Errorf("the CLI's fds 0 and 1 are %q, want the pipes %q", out, want)
	}
}

// TestEnv: the CLI gets the environment it was given, without EnvVar.
func TestEnv(t *testing.T) {
	cli := helper("env")
	cli.Env = append(cli.Env, "SPBRIDGE_SUPERVISE_X=a b", EnvVar+"=stray")
	var out bytes.Buffer
	cli.Stdout = &out
	cmd, life, err := Command(exe(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := life.Started(cmd.Process); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := withoutVar(cli.Env, EnvVar)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the CLI's environment is\n%q\nwant\n%q", got, want)
	}
}

// TestSignalled: a CLI killed by SIGTERM shows as a supervisor killed by
// SIGTERM; by another signal, as exit status 128+n.
func TestSignalled(t *testing.T) {
	run := func(cli *exec.Cmd) (syscall.WaitStatus, *os.ProcessState) {
		cmd, life, err := Command(exe(), cli)
		if err != nil {
			t.Fatal(err)
		}
		defer life.Close()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := life.Started(cmd.Process); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		return life.Status(cmd.ProcessState), cmd.ProcessState
	}
	ws, ps := run(helper("term"))
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("Status of a CLI killed by SIGTERM = %#x, want killed by SIGTERM", ws)
	}
	if !inNamespace() {
		// The supervisor dies the CLI's death.
		if ws := ps.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("supervisor of a CLI killed by SIGTERM ended %v, want killed by SIGTERM", ps)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	ws, ps = run(exec.Command(sh, "-c", "kill -USR1 $$"))
	if !ws.Signaled() || ws.Signal() != syscall.SIGUSR1 {
		t.Errorf("Status of a CLI killed by SIGUSR1 = %#x, want killed by SIGUSR1", ws)
	}
	if c := ps.ExitCode(); c != 128+int(syscall.SIGUSR1) {
		t.Errorf("supervisor of a CLI killed by SIGUSR1 ended %v, want exit status %d", ps, 128+int(syscall.SIGUSR1))
	}
}

// TestInterrupt: SIGINT to the group reaches the CLI, not the supervisor.
func TestInterrupt(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	outR, outW, _ := os.Pipe()
	defer outR.Close()
	// The shell waits in wait, which a trapped signal interrupts at once
	// (a foreground sleep would delay the trap until it ends).
	cli := exec.Command(sh, "-c", `trap 'echo got; exit 9' INT; echo ready; sleep 600 & wait`)
	cli.Stdout = outW
	cli.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd, life, err := Command(exe(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	if _, err := life.Started(cmd.Process); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(outR)
	readLine(t, r, "ready")
	if err := Interrupt(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	readLine(t, r, "got")
	cmd.Wait()
	if c := cmd.ProcessState.ExitCode(); c != 9 {
		t.Errorf("supervisor ended %v, want exit status 9", cmd.ProcessState)
	}
}

// TestStartError: a CLI that cannot start is reported by Started as the
// system's error, and the supervisor exits ExitNoStart.
func TestStartError(t *testing.T) {
	cli := exec.Command("/nonexistent/claude")
	cmd, life, err := Command(exe(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, err = life.Started(cmd.Process)
	var se *StartError
	if !errors.As(err, &se) || !errors.Is(err, fs.ErrNotExist) || se.Path != "/nonexistent/claude" {
		t.Errorf("Started = %v, want a *StartError for /nonexistent/claude matching fs.ErrNotExist", err)
	}
	cmd.Wait()
	if c := cmd.ProcessState.ExitCode(); c != ExitNoStart {
		t.Errorf("supervisor exit status %d, want %d", c, ExitNoStart)
	}
}

// TestExecutable: TestMain called Main, so this binary can supervise.
func TestExecutable(t *testing.T) {
	p, err := Executable()
	if err != nil || p != exe() {
		t.Errorf("Executable() = %q, %v, want %q, nil", p, err, exe())
	}
}

// TestInheritedEnvVar: EnvVar in the environment, without the lifeline
// that Command sets up with it, does not make a supervisor: the program runs
// as itself (here the "env" helper, which prints its environment), without
// EnvVar, and takes nothing off an fd 3 that is not its lifeline.
func TestInheritedEnvVar(t *testing.T) {
	secret := newSecret()
	valid := encodeMode(mode{secret: secret})
	for _, tc := range []struct {
		name  string
		value string
		fd3   string // "", "socket" (holding hello), "pipe" (holding hello)
		hello string // the secret in fd 3's hello
	}{
		{"plain", "1", "", ""},
		{"empty", "", "", ""},
		{"old mode", "1:0", "socket", secret},
		{"valid, no fd 3", valid, "", ""},
		{"valid, other secret", valid, "socket", newSecret()},
		{"valid, pipe", valid, "pipe", secret},
		{"valid, empty socket", valid, "socket", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := helper("env")
			c.Env = append(c.Env, EnvVar+"="+tc.value)
			var out, stderr bytes.Buffer
			c.Stdout, c.Stderr = &out, &stderr
			var keep, closeW *os.File // fd 3, to read back; its other end
			if tc.fd3 != "" {
				var r, w *os.File
				var err error
				if tc.fd3 == "socket" {
					w, r, err = socketpair()
				} else {
					r, w, err = os.Pipe()
				}
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if tc.hello != "" {
					w.Write(hello(tc.hello))
				}
				keep, c.ExtraFiles = r, []*os.File{r}
				defer w.Close()
				closeW = w
			}
			err := c.Run()
			if closeW != nil {
				closeW.Close() // a read of what is left ends at end of file
			}
			if err != nil {
				t.Fatalf("ran %v, stderr %q; want exit 0", err, stderr.String())
			}
			env := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if want := withoutVar(c.Env, EnvVar); strings.Join(env, "\n") != strings.Join(want, "\n") {
				t.Errorf("environment\n%q\nwant\n%q (the given one without %s)", env, want, EnvVar)
			}
			if keep != nil && tc.hello != "" {
				// What waited on fd 3 still waits there.
				want := hello(tc.hello)
				got, _ := io.ReadAll(keep)
				if string(got) != string(want) {
					t.Errorf("fd 3 holds %q afterwards, want %q untouched", got, want)
				}
			}
		})
	}
}

// TestSupervisorNeedsSecret: the same start as Command's with the right
// secret on the lifeline makes a supervisor, and one byte off does not.
func TestSupervisorNeedsSecret(t *testing.T) {
	for _, right := range []bool{true, false} {
		cli := helper("true")
		cmd, life, err := Command(exe(), cli)
		if err != nil {
			t.Fatal(err)
		}
		if !right {
			// Replace the value's secret by another; the lifeline holds
			// the first.
			for i, kv := range cmd.Env {
				if v, ok := strings.CutPrefix(kv, EnvVar+"="); ok {
					m, err := decodeMode(v)
					if err != nil {
						t.Fatal(err)
					}
					m.secret = newSecret()
					cmd.Env[i] = EnvVar + "=" + encodeMode(m)
				}
			}
			// As itself, the test binary would run every test: give it a
			// helper mode that says so.
			cmd.Env = append(withoutVar(cmd.Env, helperEnv), helperEnv+"=true")
		}
		if err := cmd.Start(); err != nil {
			life.Close()
			t.Fatal(err)
		}
		_, err = life.Started(cmd.Process)
		life.Close()
		cmd.Wait()
		if right && err != nil {
			t.Errorf("with the secret: Started = %v, want a supervisor's report", err)
		}
		if !right && !errors.Is(err, errNoReport) {
			t.Errorf("with another secret: Started = %v, want no report (not a supervisor)", err)
		}
	}
}

// BenchmarkStart measures starting and reaping a trivial CLI directly and
// through a supervisor: this test binary, or the binary named by
// $SPBRIDGE_SUPERVISE_BENCH_EXE (a built spbridge).
func BenchmarkStart(b *testing.B) {
	sup := exe()
	if p := os.Getenv("SPBRIDGE_SUPERVISE_BENCH_EXE"); p != "" {
		sup = p
	}
	cli := func() *exec.Cmd {
		if p, err := exec.LookPath("true"); err == nil {
			return exec.Command(p)
		}
		return helper("true")
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := cli().Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("supervised", func(b *testing.B) {
		for b.Loop() {
			cmd, life, err := Command(sup, cli())
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			if _, err := life.Started(cmd.Process); err != nil {
				b.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			life.Close()
		}
	})
}

// inNamespace reports whether Command starts supervisors in a PID namespace.
func inNamespace() bool { return chooseNamespaces() != nil }
