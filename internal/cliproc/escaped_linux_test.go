package cliproc

import (
	"syscall"
	"testing"
)

// TestKillEscaped: descendants that left the program's group are killed by
// KillEscaped (sessionsOnly: only those that left its session too) and by
// Close, which otherwise could not reach them.
func TestKillEscaped(t *testing.T) {
	for _, tc := range []struct {
		how          string
		sessionsOnly bool
		killed       bool
	}{
		{"escape", false, true},
		{"escape", true, false},
		{"session", true, true},
		{"session", false, true},
	} {
		p := start(t, helperConfig("grandchild", "hang", tc.how))
		gc := outerPID(t, p.Pid(), recvGrandchild(t, p))
		got := p.KillEscaped(tc.sessionsOnly)
		if tc.killed != (len(got) == 1 && got[0] == gc) || alive(gc) == tc.killed {
			t.Errorf("%s, sessionsOnly=%v: KillEscaped = %v (grandchild %d, alive %v)", tc.how, tc.sessionsOnly, got, gc, alive(gc))
		}
		p.Close(0)
		if alive(gc) {
			t.Errorf("%s: the grandchild outlived Close", tc.how)
			syscall.Kill(gc, syscall.SIGKILL)
		}
	}
}
