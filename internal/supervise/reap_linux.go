package supervise

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// linuxReaper finds the CLI's descendants among the supervisor's children:
// every process the CLI detaches becomes the supervisor's child when its own
// parent dies, so "every descendant" is found among the supervisor's
// children, level by level, and "none left" is ECHILD.
//
// As the init of a PID namespace (ns), the supervisor is every orphan's
// parent by nature, and kill(-1) reaches every process in the namespace but
// itself, whatever its pid. Otherwise it is a child subreaper, and finds its
// children in /proc; children are then reaped only while mu is held, and
// signalled only while mu is held and before they are reaped, so a signal
// never reaches a process that reused a reaped child's pid.
type linuxReaper struct {
	ns, user bool
	mu       sync.Mutex
	cli      int
	cliDone  bool
	status   syscall.WaitStatus
}

func newReaper(m mode) (reaper, error) {
	if os.Getpid() == 1 {
		return &linuxReaper{ns: true, user: m.has(optUser)}, nil
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return &linuxReaper{}, nil
}

func (r *linuxReaper) layer() string {
	switch {
	case r.ns && r.user:
		return UserPIDNamespace
	case r.ns:
		return PIDNamespace
	}
	return Subreaper
}

func (r *linuxReaper) attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func (r *linuxReaper) env(env []string) []string { return env }

func (r *linuxReaper) started(pid int) {
	r.mu.Lock()
	r.cli = pid
	r.mu.Unlock()
}

// waitable blocks until some child can be reaped, without reaping it, and
// reports false when there is no child at all.
func waitable() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		switch err {
		case nil:
			return true
		case unix.EINTR:
			continue
		}
		return false // ECHILD
	}
}

// reapAll reaps every child that has ended, noting the CLI's status. r.mu is
// held.
func (r *linuxReaper) reapAll() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if pid == r.cli {
			r.cliDone = true
			r.status = ws
		}
	}
}

func (r *linuxReaper) wait() syscall.WaitStatus {
	for {
		ok := waitable()
		r.mu.Lock()
		r.reapAll()
		done, ws := r.cliDone, r.status
		r.mu.Unlock()
		if done {
			return ws
		}
		if !ok {
			panic("supervise: the CLI is not a child") // cannot happen
		}
	}
}

// kill signals the supervisor's children. The CLI's descendants that are not
// yet its children become so as their parents die, and are signalled in
// finish's next round.
func (r *linuxReaper) kill() {
	r.mu.Lock()
	r.killLocked()
	r.mu.Unlock()
}

func (r *linuxReaper) killLocked() int {
	if r.ns {
		// Everything in the namespace but the supervisor; ESRCH when
		// nothing is left to signal.
		if syscall.Kill(-1, syscall.SIGKILL) != nil {
			return 0
		}
		return 1
	}
	pids, err := children()
	if err != nil {
		fmt.Fprintf(os.Stderr, "spbridge supervisor: %v\n", err)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

func (r *linuxReaper) finish() {
	pause := 50 * time.Microsecond
	for {
		r.mu.Lock()
		r.reapAll()
		n := r.killLocked()
		r.mu.Unlock()
		if n > 0 {
			// They are dying: wake when one can be reaped (its own
			// children are then already ours).
			if !waitable() {
				return
			}
			pause = 50 * time.Microsecond
			continue
		}
		// No child found alive. Done at ECHILD; otherwise a child is
		// being adopted right now or has just ended: look again.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		if errors.Is(err, unix.ECHILD) {
			return
		}
		if err == nil && info.Signo != 0 {
			continue // one to reap
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// children returns the pids of this process's children, dead ones not yet
// reaped included, from /proc/self/task/*/children (a child adopted by a
// subreaper is attached to any of its threads), or, where the kernel lacks
// those files, by scanning /proc/*/stat for this process's pid as the parent.
func children() ([]int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat("/proc/self/task/" + t.Name()); serr == nil {
				return childrenByStat(os.Getpid())
			}
			continue // the thread ended
		}
		if err != nil {
			return nil, err
		}
		pids = append(pids, parsePids(b)...)
	}
	return pids, nil
}

// childrenByStat scans /proc for processes whose parent is ppid.
func childrenByStat(ppid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		if p, ok := statPpid(b); ok && p == ppid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
