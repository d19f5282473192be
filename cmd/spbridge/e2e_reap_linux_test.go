package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/proctest"
	"spbridge/internal/supervise"
)

// The end-to-end reaping tests: the real claude runs a Bash tool that
// detaches a process from everything (setsid nohup … &), and nothing of the
// turn may outlive spbridge, whether it ends normally or is killed with
// SIGKILL mid-tool. Processes are found by markers in their environment: one
// given to spbridge (so to claude, its shells and what they start), one the
// tool sets on the commands it starts.

// goneWait bounds the wait for marked processes to disappear after spbridge
// is gone: the supervisor kills them at once, but a loaded machine may take
// a while to schedule it.
const goneWait = 60 * time.Second

// markedProcs returns "pid argv" for each running process (zombies are dead)
// whose environment holds one of the KEY=VALUE entries kvs.
func markedProcs(kvs ...string) []string {
	ps, _ := proctest.WithEnv(kvs...)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%d %s", p.PID, p.Argv)
	}
	return out
}

// waitMarkedGone polls /proc until no process holds one of kvs, up to
// goneWait, and returns what is left then.
func waitMarkedGone(kvs ...string) []string {
	deadline := time.Now().Add(goneWait)
	for {
		left := markedProcs(kvs...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reapMarkers returns a fresh pair of markers: one for spbridge's
// environment, one for the tool's commands.
func reapMarkers(t *testing.T) (bridge, tool string) {
	id := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	return "SPBRIDGE_E2E_REAP=" + t.Name() + "-" + id, "SPBRIDGE_E2E_TOOL=" + t.Name() + "-" + id
}

// TestE2EReapDetachedAfterRun: a tool's detached process is gone when
// spbridge run has ended, and so is everything else the turn started.
func TestE2EReapDetachedAfterRun(t *testing.T) {
	t.Parallel()
	bridge, tool := reapMarkers(t)
	e := newE2E(t, bashRound(tool+" setsid nohup sleep 600 >/dev/null 2>&1 & echo detached")...)
	e.env = append(e.env, bridge)
	seen := make(chan struct{})
	e.run(func(cmd *exec.Cmd, ended <-chan struct{}) {
		// Watch for the detached sleep, to know the tool ran as meant.
		for {
			select {
			case <-ended:
				return
			default:
			}
			for _, p := range markedProcs(tool) {
				if strings.Contains(p, "sleep 600") {
					close(seen)
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}, "--allow-tool", "Bash", "detach something")
	ran := false
	for _, it := range e.items() {
		ran = ran || strings.HasPrefix(it, "tool: Bash ") && strings.HasSuffix(it, " succeeded")
	}
	if e.code != 0 || !ran {
		e.fail("the turn did not run the tool: items %q", e.items())
	}
	select {
	case <-seen:
	default:
		t.Log("the detached sleep was not seen while the run lasted (it may have been short)")
	}
	if left := markedProcs(bridge, tool); len(left) > 0 {
		t.Errorf("right after spbridge run ended, left: %q", left)
		if left := waitMarkedGone(bridge, tool); len(left) > 0 {
			t.Errorf("%v after spbridge run ended, still left: %q", goneWait, left)
			killMarked(bridge, tool)
		}
	}
}

// TestE2EReapDetachedAfterSIGKILL: SIGKILL while the tool runs (a
// foreground sleep, one detached from everything, one through a double
// fork), to spbridge run, to its supervisor, or to both at once: nothing of
// the turn is left afterwards. (Killing the supervisor, alone or with
// spbridge, needs the PID namespace layer: the subreaper's orphans go to
// init.)
func TestE2EReapDetachedAfterSIGKILL(t *testing.T) {
	t.Parallel()
	for _, victim := range []string{"spbridge", "supervisor", "both"} {
		t.Run(victim, func(t *testing.T) {
			if victim != "spbridge" && !pidNamespaceLayer(t) {
				t.Skip("no PID namespace here: a supervisor killed by SIGKILL leaves what the CLI detached")
			}
			reapAfterSIGKILL(t, victim)
		})
	}
}

func reapAfterSIGKILL(t *testing.T, victim string) {
	bridge, tool := reapMarkers(t)
	e := newE2E(t, bashRound(tool+" setsid nohup sleep 600 >/dev/null 2>&1 & ( "+tool+" sleep 602 >/dev/null 2>&1 & ) ; "+tool+" sleep 601")...)
	e.env = append(e.env, bridge)
	killed := false
	var before []string
	e.run(func(cmd *exec.Cmd, ended <-chan struct{}) {
		// SIGKILL once the three sleeps run.
		for {
			select {
			case <-ended:
				return
			default:
			}
			procs := strings.Join(markedProcs(tool), "\n")
			if strings.Contains(procs, "sleep 600") && strings.Contains(procs, "sleep 601") && strings.Contains(procs, "sleep 602") {
				before = markedProcs(bridge, tool)
				sup := childOf(cmd.Process.Pid, bridge)
				switch victim {
				case "spbridge":
					killed = cmd.Process.Signal(syscall.SIGKILL) == nil
				case "supervisor":
					killed = sup > 0 && syscall.Kill(sup, syscall.SIGKILL) == nil
				case "both":
					killed = sup > 0 && syscall.Kill(sup, syscall.SIGKILL) == nil && cmd.Process.Signal(syscall.SIGKILL) == nil
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}, "--allow-tool", "Bash", "run something long")
	if !killed {
		e.fail("spbridge ended before the tool ran, or its supervisor was not found: items %q", e.items())
		killMarked(bridge, tool)
		return
	}
	t.Logf("killed %s with SIGKILL while these ran: %q", victim, before)
	begin := time.Now()
	if left := waitMarkedGone(bridge, tool); len(left) > 0 {
		t.Errorf("%v after %s was killed, left: %q", goneWait, victim, left)
		killMarked(bridge, tool)
	}
	t.Logf("everything gone %v after spbridge was reaped", time.Since(begin))
}

// childOf returns the pid of the process that carries kv and whose parent
// is ppid: spbridge's supervisor.
func childOf(ppid int, kv string) int {
	ps, _ := proctest.WithEnv(kv)
	for _, p := range ps {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and ")".
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			return p.PID
		}
	}
	return 0
}

// pidNamespaceLayer reports whether spbridge runs CLIs in a PID namespace
// here, as spbridge version --supervision says.
func pidNamespaceLayer(t *testing.T) bool {
	out, err := exec.Command(spbridgeBin(t), "version", "--supervision").Output()
	if err != nil {
		t.Fatalf("spbridge version --supervision: %v", err)
	}
	return strings.Contains(string(out), "\nsupervision: "+supervise.PIDNamespace) ||
		strings.Contains(string(out), "\nsupervision: "+supervise.UserPIDNamespace)
}

// killMarked cleans up after a failed test.
func killMarked(kvs ...string) {
	for _, p := range markedProcs(kvs...) {
		pid, _ := strconv.Atoi(strings.Fields(p)[0])
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
