package supervise

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var killCycles = flag.Int("kill-cycles", 20, "cycles of each layer and ending in TestKill9")

// testNSEnv makes a helper choose the layer of the supervisors it starts,
// rather than find it out: "pid", "user" or "none" (the subreaper).
const testNSEnv = "SPBRIDGE_SUPERVISE_TEST_NS"

func init() {
	helperSetup = func() {
		switch os.Getenv(testNSEnv) {
		case "pid":
			testNamespaces = func() *nsSpec { return &nsSpec{} }
		case "user":
			testNamespaces = func() *nsSpec { return &nsSpec{user: true} }
		case "none":
			testNamespaces = func() *nsSpec { return nil }
		}
	}
	helpers["report"] = reportHelper
	helpers["layer"] = layerHelper
	helpers["bridge-sh"] = func() int {
		// As "bridge", with shCLI as the CLI.
		cli := exec.Command("/bin/sh", "-c", shCLI)
		cli.Stdin, cli.Stdout, cli.Stderr = os.Stdin, os.Stdout, os.Stderr
		cli.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return bridge(cli)
	}
}

// shCLI is a CLI that starts shDetached processes that stay, a third each
// in a session of their own (setsid nohup … &), through a double fork
// (( … & )) and in the background of its group (nohup … &), says "ready"
// once it has, and waits for input. It starts fewer processes than
// bashCLI, each cheap, so kill cycles can be many.
const (
	shDetached = 12
	shCLI      = `for i in 1 2 3 4; do
  setsid nohup sleep 600 >/dev/null 2>&1 &
  ( nohup sleep 601 >/dev/null 2>&1 & )
  nohup sleep 602 >/dev/null 2>&1 &
done
echo ready
read x`
)

// reportHelper plays a CLI that says what it sees: its pid and its
// parent's, the pid that /proc/self names, its real and effective uid, and its capability sets.
func reportHelper() int {
	self, _ := os.Readlink("/proc/self")
	status, _ := os.ReadFile("/proc/self/status")
	var caps []string
	for line := range bytes.Lines(status) {
		for _, k := range []string{"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"} {
			if v, ok := bytes.CutPrefix(line, []byte(k)); ok {
				caps = append(caps, strings.TrimSuffix(k, ":")+"="+string(bytes.TrimSpace(v)))
			}
		}
	}
	fmt.Printf("pid=%d ppid=%d procself=%s uid=%d euid=%d home=%s %s\n", os.Getpid(), os.Getppid(), self, os.Getuid(), os.Geteuid(), os.Getenv("HOME"), strings.Join(caps, " "))
	return 0
}

// layerHelper starts a supervised "report" CLI as a caller would, and
// prints the supervisor's pid, the layer Started reported, the one Probe
// reports, then the CLI's report.
func layerHelper() int {
	cli := helper("report")
	var out bytes.Buffer
	cli.Stdout, cli.Stderr = &out, os.Stderr
	cmd, life, err := Command(exe(), cli)
	if err != nil {
		panic(err)
	}
	defer life.Close()
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	if _, err := life.Started(cmd.Process); err != nil {
		panic(err)
	}
	// The supervisor waits for the CLI, which is done at end of file.
	probe, err := Probe(exe())
	if err != nil {
		panic(err)
	}
	if err := cmd.Wait(); err != nil {
		panic(err)
	}
	fmt.Printf("supervisor %d %s %s\n%s", cmd.Process.Pid, life.Layer(), probe, out.String())
	return 0
}

// readBridge reads the "bridge" helper's stdout until both its CLI's
// "ready" and its own "supervisor PID LAYER" came, and returns the PID and
// LAYER.
func readBridge(t *testing.T, r *bufio.Reader) (int, string) {
	t.Helper()
	ready, sup, layer := false, 0, ""
	for !ready || sup == 0 {
		l, err := r.ReadString('\n')
		switch {
		case l == "ready\n":
			ready = true
		case strings.HasPrefix(l, "supervisor "):
			f := strings.Fields(l)
			if len(f) != 3 {
				t.Fatalf("bridge: %q", l)
			}
			sup, _ = strconv.Atoi(f[1])
			layer = f[2]
		default:
			t.Fatalf("bridge: read %q, %v; want ready and supervisor PID LAYER", l, err)
		}
	}
	return sup, layer
}

// layerCase is a layer that this machine offers, and how to get it: the
// helper's environment and, for a user namespace as root, an unprivileged
// user to run as.
type layerCase struct {
	name string
	env  string // testNSEnv=…, or "" to let the helper find out
	cred *syscall.Credential
}

// offeredLayers returns the layers this machine offers. The unprivileged
// layer runs as the user nobody when the test runs as root.
func offeredLayers(t *testing.T) []layerCase {
	var out []layerCase
	if os.Geteuid() == 0 {
		if (nsSpec{}).works() {
			out = append(out, layerCase{name: PIDNamespace, env: testNSEnv + "=pid"})
		} else {
			t.Logf("no %s here, as root", PIDNamespace)
		}
		out = append(out, layerCase{name: UserPIDNamespace, cred: &syscall.Credential{Uid: 65534, Gid: 65534}})
	} else if (nsSpec{user: true}).works() {
		out = append(out, layerCase{name: UserPIDNamespace, env: testNSEnv + "=user"})
	} else {
		t.Logf("no %s here", UserPIDNamespace)
	}
	return append(out, layerCase{name: Subreaper, env: testNSEnv + "=none"})
}

// helperAs returns helper(mode) set up for lc: its environment, and its
// user, with a copy of the test binary that the user can run.
func helperAs(t *testing.T, lc layerCase, mode string) *exec.Cmd {
	c := helper(mode)
	if lc.env != "" {
		c.Env = append(c.Env, lc.env)
	}
	if lc.cred != nil {
		c.Path = sharedExe(t)
		c.Args[0] = c.Path
		c.Dir = "/"
		c.SysProcAttr = &syscall.SysProcAttr{Credential: lc.cred}
	}
	return c
}

var sharedExePath string

// sharedExe returns a copy of the test binary in a folder anyone may
// enter, for a helper run as another user.
func sharedExe(t *testing.T) string {
	if sharedExePath != "" {
		return sharedExePath
	}
	dir, err := os.MkdirTemp("", "spbridge-supervise-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	p := filepath.Join(dir, "supervise.test")
	dst, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	sharedExePath = p
	return p
}

// TestLayers: under each layer this machine offers, the supervisor and the
// CLI are where the layer says. In a PID namespace: the supervisor, the
// CLI's parent, is its init (pid 1 there), the CLI's /proc is its own (/proc/self is its pid),
// it runs as the same user with the same home, and in a user namespace it
// has no capabilities. Probe reports the same layer as Started.
func TestLayers(t *testing.T) {
	defer removeSharedExe()
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The supervisors' /proc stayed in their mount namespaces.
		after, _ := os.ReadFile("/proc/self/mountinfo")
		if !bytes.Equal(after, mounts) {
			t.Errorf("this process's mounts changed:\n%s\nnow:\n%s", mounts, after)
		}
		if self, _ := os.Readlink("/proc/self"); self != strconv.Itoa(os.Getpid()) {
			t.Errorf("/proc/self is %s here, want %d", self, os.Getpid())
		}
	}()
	for _, lc := range offeredLayers(t) {
		t.Run(lc.name, func(t *testing.T) {
			c := helperAs(t, lc, "layer")
			var stderr bytes.Buffer
			c.Stderr = &stderr
			out, err := c.Output()
			if err != nil {
				t.Fatalf("%v, stderr %q", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("helper said %q", out)
			}
			f := strings.Fields(lines[0])
			ns := lc.name != Subreaper
			want := lc.name
			if ns {
				want += ", own /proc"
			}
			got := strings.TrimPrefix(lines[0], "supervisor "+f[1]+" ")
			if got != want+" "+want {
				t.Errorf("Started's and Probe's layers: %q, want %q twice", got, want)
			}
			t.Logf("%s; the CLI reports: %s", lines[0], lines[1])
			rep := map[string]string{}
			for _, kv := range strings.Fields(lines[1]) {
				k, v, _ := strings.Cut(kv, "=")
				rep[k] = v
			}
			if rep["procself"] != rep["pid"] {
				t.Errorf("the CLI's /proc/self is %s, its pid %s: want its own /proc", rep["procself"], rep["pid"])
			}
			uid := os.Getuid()
			if lc.cred != nil {
				uid = int(lc.cred.Uid)
			}
			if rep["uid"] != strconv.Itoa(uid) || rep["euid"] != strconv.Itoa(uid) || rep["home"] != os.Getenv("HOME") {
				t.Errorf("the CLI runs as uid %s euid %s with HOME %q, want %d and %q", rep["uid"], rep["euid"], rep["home"], uid, os.Getenv("HOME"))
			}
			if lc.name == UserPIDNamespace && uid != 0 {
				for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
					if v := rep[k]; strings.Trim(v, "0") != "" || v == "" {
						t.Errorf("the CLI's %s %q, want none", k, v)
					}
				}
			}
			if wantPpid := f[1]; ns {
				if rep["ppid"] != "1" {
					t.Errorf("the CLI's parent is %s, want the namespace's init, 1", rep["ppid"])
				}
			} else if rep["ppid"] != wantPpid {
				t.Errorf("the CLI's parent is %s, want the supervisor %s", rep["ppid"], wantPpid)
			}
		})
	}
}

func removeSharedExe() {
	if sharedExePath != "" {
		os.RemoveAll(filepath.Dir(sharedExePath))
		sharedExePath = ""
	}
}

// TestKill9: under each layer this machine offers, SIGKILL to the
// supervisor, to the process that started it (a "bridge", playing
// spbridge serve), or to both at once leaves no process the CLI started:
// the CLI (shCLI), and the twelve processes it started and detached in
// three ways. Under the subreaper
// only the bridge's death is covered: a killed subreaper's orphans go to
// init, as the README says.
func TestKill9(t *testing.T) {
	defer removeSharedExe()
	n := *killCycles
	if testing.Short() {
		n = 3
	}
	for _, lc := range offeredLayers(t) {
		endings := []string{"supervisor", "bridge", "both"}
		if lc.name == Subreaper {
			endings = []string{"bridge"}
		}
		for _, ending := range endings {
			t.Run(lc.name+"/"+ending, func(t *testing.T) {
				for i := range n {
					kill9Cycle(t, lc, ending, fmt.Sprintf("%d-kill9-%s-%s-%d", os.Getpid(), lc.name, ending, i))
				}
			})
		}
	}
}

func kill9Cycle(t *testing.T, lc layerCase, ending, mark string) {
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	inR, inW, err := os.Pipe() // the bridge's stdin stays open, as an editor's would
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	bridge := helperAs(t, lc, "bridge-sh")
	bridge.Env = append(bridge.Env, markVar+"="+mark)
	bridge.Stdin, bridge.Stdout, bridge.Stderr = inR, outW, os.Stderr
	err = bridge.Start()
	outW.Close()
	inR.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			// Leave nothing of a failed cycle behind.
			for _, pid := range marked(mark) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			bridge.Process.Kill()
			bridge.Wait()
		}
	}()
	sup, layer := readBridge(t, bufio.NewReader(outR))
	if layer != lc.name {
		bridge.Process.Kill()
		bridge.Wait()
		waitUnmarked(t, mark)
		t.Fatalf("the bridge's supervisor runs under %s, want %s", layer, lc.name)
	}
	// The bridge, the supervisor, the CLI and what it started: a process
	// that is being exec'd may not show its environment for a moment.
	waitMarkedAtLeast(t, mark, 3+shDetached)
	switch ending {
	case "supervisor":
		syscall.Kill(sup, syscall.SIGKILL)
		// Everything but the bridge goes; the supervisor stays its
		// zombie.
		waitMarked(t, mark, []int{bridge.Process.Pid})
		bridge.Process.Kill()
	case "bridge":
		bridge.Process.Kill()
	case "both":
		syscall.Kill(sup, syscall.SIGKILL)
		bridge.Process.Kill()
	}
	bridge.Wait()
	waitUnmarked(t, mark)
}

// waitMarkedAtLeast waits until at least n processes carry mark.
func waitMarkedAtLeast(t *testing.T, mark string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pids := marked(mark)
		if len(pids) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of %s running, want at least %d: %v", len(pids), mark, n, describe(pids))
		}
		time.Sleep(time.Millisecond)
	}
}

// waitMarked waits until the processes that carry mark are exactly want.
func waitMarked(t *testing.T, mark string, want []int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pids := marked(mark)
		if slices.Equal(pids, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s left: %v, want only %v", mark, describe(pids), want)
		}
		time.Sleep(time.Millisecond)
	}
}
