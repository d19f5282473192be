package proctest

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestFind: a child marked in its environment and its argv is found while
// it runs, and not once it has been reaped.
func TestFind(t *testing.T) {
	mark := "PROCTEST_MARK=" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command("sleep", "3600")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep to run:", err)
	}
	defer cmd.Process.Kill()
	// Until the child has exec'd sleep, it has the test's environment and
	// argv: wait for it to show.
	var ps []Proc
	for len(ps) == 0 {
		var err error
		ps, err = WithEnv(mark)
		if errors.Is(err, ErrUnsupported) {
			t.Skip(err)
		}
		runtime.Gosched()
	}
	if len(ps) != 1 || ps[0].PID != cmd.Process.Pid || ps[0].Argv != "sleep 3600" {
		t.Errorf("WithEnv = %+v, want the child %d", ps, cmd.Process.Pid)
	}
	if ps, _ := WithArg("sleep 3600"); !slices.Contains(PIDs(ps), cmd.Process.Pid) {
		t.Errorf("WithArg = %+v, want the child %d among them", ps, cmd.Process.Pid)
	}
	if !ps[0].Live() {
		t.Errorf("the child %d is running, but not Live", ps[0].PID)
	}
	if (Proc{PID: ps[0].PID, start: "1"}).Live() {
		t.Errorf("a process that started at another time, with the child's pid %d, is Live", ps[0].PID)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if ps[0].Live() {
		t.Errorf("the child %d is Live after it was reaped", ps[0].PID)
	}
	if ps, _ := WithEnv(mark); len(ps) != 0 {
		t.Errorf("after the child was reaped: %+v", ps)
	}
}
