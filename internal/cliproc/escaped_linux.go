package cliproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// escapedWait bounds how long KillEscaped waits for the processes it killed
// to die.
const escapedWait = 2 * time.Second

// KillEscaped kills (SIGKILL) the processes the program started that left
// its process group, which signals to the group do not reach: every running
// descendant of the program (supervised: of its supervisor) in a group of
// its own has its whole group killed. With sessionsOnly, only descendants
// that also left the program's session (setsid: what a program starts to
// run detached, such as a command it runs in the background) are. It waits
// (briefly) until they are dead and returns their pids. It finds
// descendants through /proc, so only while the program runs: once it
// exited, unsupervised, they belong to init. It is for a program that goes
// on running, such as one interrupted mid-turn: at the program's end or its
// Close a supervisor kills them all, and an unsupervised Close calls
// KillEscaped itself.
func (p *Proc) KillEscaped(sessionsOnly bool) []int {
	p.mu.Lock()
	reaped := p.reaped
	p.mu.Unlock()
	if reaped {
		return nil
	}
	procs := readProcs()
	self, ok := procs[p.pid]
	if !ok {
		return nil
	}
	children := make(map[int][]int)
	for pid, st := range procs {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var killed []int
	var walk func(pid int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			st := procs[c]
			if st.state != 'Z' && st.pgrp != self.pgrp && (!sessionsOnly || st.sid != self.sid) {
				if st.pgrp == c {
					syscall.Kill(-c, syscall.SIGKILL)
				}
				syscall.Kill(c, syscall.SIGKILL)
				killed = append(killed, c)
			}
			walk(c)
		}
	}
	walk(p.pid)
	deadline := time.Now().Add(escapedWait)
	for _, pid := range killed {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	return killed
}

// procInfo is what /proc/<pid>/stat says of a process.
type procInfo struct {
	ppid, pgrp, sid int
	state           byte
}

// readProcs reads every process's parent, group, session and state.
func readProcs() map[int]procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := statOf(pid); ok {
			procs[pid] = st
		}
	}
	return procs
}

func statOf(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces and ")".
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 4 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgrp, _ := strconv.Atoi(string(f[2]))
	sid, _ := strconv.Atoi(string(f[3]))
	return procInfo{ppid: ppid, pgrp: pgrp, sid: sid, state: f[0][0]}, true
}

// alive reports whether pid runs (a zombie is dead).
func alive(pid int) bool {
	st, ok := statOf(pid)
	return ok && st.state != 'Z' && st.state != 'X'
}

// Detached reports whether a descendant of the program that left its
// session (setsid: what a program starts to run detached, such as a
// command it left running in the background) still runs. It finds them
// through /proc, as KillEscaped does.
func (p *Proc) Detached() bool {
	p.mu.Lock()
	reaped := p.reaped
	p.mu.Unlock()
	if reaped {
		return false
	}
	procs := readProcs()
	self, ok := procs[p.pid]
	if !ok {
		return false
	}
	children := make(map[int][]int)
	for pid, st := range procs {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var walk func(pid int) bool
	walk = func(pid int) bool {
		for _, c := range children[pid] {
			if st := procs[c]; st.state != 'Z' && st.sid != self.sid {
				return true
			}
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(p.pid)
}
