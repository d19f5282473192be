//go:build unix

package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/testbin"
)

// helperEnv turns the test binary into one of the helpers below; its value
// is the mode. The test binary is also a supervisor: TestMain calls Main.
const helperEnv = "SPBRIDGE_SUPERVISE_HELPER"

// helperSetup, when set (by an init function of a system's tests), runs
// before a helper does.
var helperSetup func()

func TestMain(m *testing.M) {
	Main()
	if mode := os.Getenv(helperEnv); mode != "" {
		if helperSetup != nil {
			helperSetup()
		}
		os.Exit(runHelper(mode))
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// helpers are more helper modes, by name (added by a system's tests).
var helpers = map[string]func() int{}

// keep holds the middle helper's lifeline: a lifeline that is garbage
// collected is closed by its finalizer.
var keep *Lifeline

func runHelper(mode string) int {
	switch mode {
	case "true":
		return 0
	case "bridge": // play spbridge: a supervised "cli" on our stdin and stdout; say "supervisor PID LAYER"; wait for SIGKILL
		return bridge(cliCommand(os.Stdin, os.Stdout))
	case "fds": // print the device and inode of fds 0 and 1, exit 5
		for fd := range 2 {
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil {
				panic(err)
			}
			fmt.Printf("%d:%d\n", st.Dev, st.Ino)
		}
		return 5
	case "term": // die by SIGTERM
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		hang()
	case "env": // print the environment
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	}
	if h := helpers[mode]; h != nil {
		return h()
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// bridge plays spbridge: it runs cli under a supervisor, says "supervisor
// PID LAYER", and waits for SIGKILL.
func bridge(cli *exec.Cmd) int {
	cmd, life, err := Command(exe(), cli)
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	if _, err := life.Started(cmd.Process); err != nil {
		panic(err)
	}
	keep = life
	fmt.Printf("supervisor %d %s\n", cmd.Process.Pid, life.Layer().Name)
	hang()
	return 0
}

// The fake CLI is a bash script, and what it starts are shells, not the
// test binary: a race-enabled binary takes ten times as long to start, and
// the cycles of TestNothingSurvives start thousands of processes.
const (
	// shHang plays a process that stays, nohup-like: it ignores SIGHUP
	// (and so does its sleep), says "up" and hangs. It does not exec
	// sleep: a process being exec'd may not show its environment for a
	// moment, and the test counts the processes that show their marker.
	shHang = `trap '' HUP; echo up; while :; do sleep 1000000; done`
	// bashCLI starts three processes that stay: one in its process group,
	// one in a new session through a double fork (its parent exits at
	// once), one in a process group of its own (bash's job control, set -m,
	// gives a background job one without a terminal); all ignore SIGHUP.
	// They say "up" into a pipe the script holds both ends of (fd 3,
	// opened read-write: Linux reopens the pipe behind /dev/fd). Once all
	// three are up it prints "ready", then reads stdin: "exit N" makes it
	// print "bye" and exit with status N; end of file, exit 3.
	bashCLI = `hang='` + shHang + `'
exec 3<> <(:)
sh -c "$hang" >&3 &
setsid sh -c "($hang) &" >&3
set -m
sh -c "$hang" >&3 &
set +m
for i in 1 2 3; do read -r l <&3; [ "$l" = up ] || exit 99; done
exec 3>&-
echo ready
while read -r w n; do if [ "$w" = exit ]; then echo bye; exit "$n"; fi; done
exit 3`
)

func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

func exe() string {
	p, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return p
}

// helper returns a command running the test binary as helper mode, with
// this process's environment (a marker in it included).
func helper(mode string) *exec.Cmd {
	c := exec.Command(exe())
	c.Env = append(withoutVar(os.Environ(), helperEnv), helperEnv+"="+mode)
	return c
}

// cliCommand is the fake CLI (bashCLI, for the tests on Linux) as cliproc
// would describe it: in a new process group, with the given stdin and
// stdout, and this process's environment (a marker in it included) but
// for helperEnv.
func cliCommand(stdin, stdout *os.File) *exec.Cmd {
	c := exec.Command("bash", "-c", bashCLI)
	c.Env = withoutVar(os.Environ(), helperEnv)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}
