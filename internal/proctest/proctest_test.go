package proctest

import (
	"errors"
	"os"
	"os/exec"
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
	ps, err := WithEnv(mark)
	if errors.Is(err, ErrUnsupported) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skip(err)
	}
	if len(ps) != 1 || ps[0].PID != cmd.Process.Pid || ps[0].Argv != "sleep 3600" {
		t.Errorf("WithEnv = %+v, want the child %d", ps, cmd.Process.Pid)
	}
	if ps, _ := WithArg("3600"); len(PIDs(ps)) == 0 {
		t.Error("WithArg found no child")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if ps, _ := WithEnv(mark); len(ps) != 0 {
		t.Errorf("after the child was reaped: %+v", ps)
	}
}
