package cliproc

import (
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"spbridge/internal/supervise"
)

// windowsSys is the Windows side of a Proc. The program runs in a process
// group of its own (CREATE_NEW_PROCESS_GROUP), whose id is its pid, and, when
// supervised, in a Job Object (supervise.Command). SIGINT becomes CTRL_BREAK
// to the group; any other signal ends the program: with its Job Object,
// everything it started goes too.
type windowsSys struct{}

var sys system = windowsSys{}

// pdeathsigThread is false: there is no Pdeathsig on Windows (the Job
// Object does that job).
const pdeathsigThread = false

func (windowsSys) attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

func (windowsSys) awaitExit(int) bool { return false }

func (s windowsSys) signal(p *Proc, sig syscall.Signal) error {
	if sig == syscall.SIGINT {
		return supervise.Interrupt(p.pid)
	}
	s.kill(p)
	return nil
}

func (windowsSys) kill(p *Proc) {
	if p.life != nil {
		p.life.Close()
		return
	}
	p.cmd.Process.Kill()
}

func (windowsSys) groupGone(int, time.Duration) bool { return true }
