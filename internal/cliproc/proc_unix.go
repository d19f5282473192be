//go:build unix

package cliproc

import (
	"os"
	"syscall"
	"time"
)

// unixSys is the Unix side of a Proc: the program leads a process group of
// its own, signals go to the whole group with kill(-pgid, sig), and after
// the end Close waits until no member of the group is left.
type unixSys struct{}

var sys system = unixSys{}

func (unixSys) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(a)
	return a
}

func (unixSys) awaitExit(pid int) bool { return awaitExit(pid) }

func (unixSys) signal(p *Proc, sig syscall.Signal) error {
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return &os.SyscallError{Syscall: "kill", Err: err}
	}
	return nil
}

func (unixSys) kill(p *Proc) { syscall.Kill(-p.pid, syscall.SIGKILL) }

func (unixSys) groupGone(pgid int, limit time.Duration) bool { return waitGroupGone(pgid, limit) }

// waitGroupGone waits up to limit until process group pgid, whose leader has
// been reaped, has no member left, zombies included; it reaps members that
// are this process's children. It reports whether the group is gone.
//
// After the leader's reaping the id could in principle be reused once the
// group is empty; the probe is signal 0, which is harmless even then.
func waitGroupGone(pgid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	pause := 50 * time.Microsecond
	for {
		// Reap zombies of the group that were reparented to us. wait4(-pgid)
		// selects only members of this group; its leader is already reaped,
		// so no other waiter's child is taken.
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || wpid <= 0 {
				break
			}
		}
		if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}
