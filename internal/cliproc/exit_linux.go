package cliproc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// pdeathsigThread: Pdeathsig belongs to the OS thread that started the
// program, so an unsupervised program is started from a locked thread.
const pdeathsigThread = true

// setPdeathsig asks the kernel to kill the program when the thread that
// started it ends (see Start).
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// awaitExit waits until process pid (a child) has exited, without reaping
// it: the zombie keeps pid, and so the group's id, from being reused while
// the group is killed. It reports true.
func awaitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return true // ECHILD cannot happen: only Proc.run reaps pid.
		}
	}
}
