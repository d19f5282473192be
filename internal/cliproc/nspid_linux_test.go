package cliproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// outerPID returns the pid, in this process's PID namespace, of the process
// that is inner in the PID namespace of process sup (a supervisor): a
// program run in a PID namespace of its own reports pids of that namespace.
// Outside any namespace of its own, inner is the pid.
// t may be nil (in a helper process): a failure then panics.
func outerPID(t testing.TB, sup, inner int) int {
	fail := func(format string, a ...any) {
		if t == nil {
			panic(fmt.Sprintf(format, a...))
		}
		t.Helper()
		t.Fatalf(format, a...)
	}
	ns, err := os.Readlink("/proc/" + strconv.Itoa(sup) + "/ns/pid")
	if err != nil {
		fail("the supervisor %d: %v", sup, err)
	}
	if self, _ := os.Readlink("/proc/self/ns/pid"); ns == self {
		return inner
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		fail("%v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != ns {
			continue
		}
		if nspid(pid) == inner {
			return pid
		}
	}
	fail("no process is %d in the PID namespace of %d", inner, sup)
	return 0
}

// nspid returns the last pid of /proc/pid/status's NSpid line: the process's
// pid in its own PID namespace, or 0.
func nspid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("NSpid:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(string(f[len(f)-1]))
			return n
		}
	}
	return 0
}
