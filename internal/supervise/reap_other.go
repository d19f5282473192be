//go:build unix && !linux && !darwin

package supervise

import (
	"sync"
	"syscall"
)

// supervisorAttr returns a copy of the CLI's SysProcAttr (which may be nil)
// for the supervisor, and the mode's options it needs (none here).
func supervisorAttr(a *syscall.SysProcAttr) (*syscall.SysProcAttr, string) {
	if a == nil {
		return nil, ""
	}
	c := *a
	return &c, ""
}

// enterNamespace does nothing here: there are no namespaces.
func enterNamespace(mode) (bool, error) { return false, nil }

// otherReaper reaches only the CLI itself: these systems are not among
// spbridge's targets, and supervision there ends the CLI when the lifeline
// closes and nothing more.
type otherReaper struct {
	mu      sync.Mutex
	cli     int
	cliDone bool
}

func newReaper(mode) (reaper, error) { return &otherReaper{}, nil }

func (r *otherReaper) attr() *syscall.SysProcAttr { return nil }
func (r *otherReaper) layer() string              { return CLIOnly }
func (r *otherReaper) env(env []string) []string  { return env }
func (r *otherReaper) started(pid int) {
	r.mu.Lock()
	r.cli = pid
	r.mu.Unlock()
}

func (r *otherReaper) wait() syscall.WaitStatus {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(r.cli, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	r.mu.Lock()
	r.cliDone = true
	r.mu.Unlock()
	return ws
}

func (r *otherReaper) kill() {
	r.mu.Lock()
	if !r.cliDone {
		syscall.Kill(r.cli, syscall.SIGKILL)
	}
	r.mu.Unlock()
}

func (r *otherReaper) finish() {}
