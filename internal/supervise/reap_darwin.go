package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// walkInterval is how often the process table is walked while the CLI runs.
const walkInterval = 100 * time.Millisecond

// szomb is a zombie's p_stat (sys/proc.h).
const szomb = 5

// darwinReaper finds the CLI's descendants without a subreaper. A process
// whose parent exits is adopted by launchd, so descendants are found three
// ways: by walking the parent links down from the supervisor, every
// walkInterval while the CLI lives and at the end, and remembering each one
// found (pid and start time, so a reused pid is not taken for it); and at the
// end, by the tag in their environment (kern.procargs2), among this user's
// processes. What escapes: a process that both rebuilt its environment
// without the tag and was adopted by launchd between two walks.
type darwinReaper struct {
	mu      sync.Mutex
	self    int
	uid     uint32
	tag     string
	cli     int
	cliDone bool
	known   map[int]unix.Timeval // descendants ever seen, by pid, with their start time
	stop    chan struct{}
}

func newReaper(mode) (reaper, error) {
	var b [16]byte
	rand.Read(b[:])
	return &darwinReaper{
		self:  os.Getpid(),
		uid:   uint32(os.Getuid()),
		tag:   hex.EncodeToString(b[:]),
		known: make(map[int]unix.Timeval),
		stop:  make(chan struct{}),
	}, nil
}

func (r *darwinReaper) attr() *syscall.SysProcAttr { return nil }

func (r *darwinReaper) layer() string { return ProcessWalk }

func (r *darwinReaper) env(env []string) []string {
	return append(withoutVar(env, TagVar), TagVar+"="+r.tag)
}

func (r *darwinReaper) started(pid int) {
	r.mu.Lock()
	r.cli = pid
	r.mu.Unlock()
	go func() {
		t := time.NewTicker(walkInterval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.mu.Lock()
				r.targets(false)
				r.mu.Unlock()
			}
		}
	}()
}

// targets walks the process table, remembers the descendants it finds, and
// returns the pids of every live process that is a descendant, or was one
// (same start time), or (withTags) carries the tag. r.mu is held.
func (r *darwinReaper) targets(withTags bool) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	byParent := make(map[int][]int, len(procs))
	live := make(map[int]unix.Timeval, len(procs))
	for i := range procs {
		p := &procs[i]
		if p.Proc.P_stat == szomb {
			continue
		}
		pid := int(p.Proc.P_pid)
		live[pid] = p.Proc.P_starttime
		byParent[int(p.Eproc.Ppid)] = append(byParent[int(p.Eproc.Ppid)], pid)
	}
	for _, pid := range descendants(byParent, r.self) {
		if r.cliDone && pid == r.cli {
			continue // reaped: the number is no longer the CLI's
		}
		r.known[pid] = live[pid]
	}
	var out []int
	seen := make(map[int]bool)
	for pid, start := range r.known {
		if s, ok := live[pid]; ok && s == start {
			out = append(out, pid)
			seen[pid] = true
		}
	}
	if withTags {
		want := TagVar + "=" + r.tag
		for i := range procs {
			p := &procs[i]
			pid := int(p.Proc.P_pid)
			if p.Proc.P_stat == szomb || seen[pid] || pid == r.self || p.Eproc.Ucred.Uid != r.uid {
				continue
			}
			b, err := unix.SysctlRaw("kern.procargs2", pid)
			if err == nil && procargsHasEnv(b, want) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func (r *darwinReaper) wait() syscall.WaitStatus {
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
	close(r.stop)
	return ws
}

func (r *darwinReaper) kill() {
	r.mu.Lock()
	for _, pid := range r.targets(false) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	r.mu.Unlock()
}

// finish kills until a walk finds nothing. The killed are launchd's children
// (or the CLI's, reaped by launchd once the CLI is gone), not ours to wait
// for, so it polls.
func (r *darwinReaper) finish() {
	pause := 50 * time.Microsecond
	for {
		r.mu.Lock()
		pids := r.targets(true)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		r.mu.Unlock()
		if len(pids) == 0 {
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}
