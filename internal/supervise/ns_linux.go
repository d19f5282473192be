package supervise

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// nsSpec is how the supervisor is started in namespaces of its own: a PID
// namespace, whose init it is, and a mount namespace, where it mounts the
// /proc of that PID namespace; with user, inside a user namespace that maps
// the user's own uid and gid to themselves (and nothing else), which lets an
// unprivileged user create the other two.
type nsSpec struct {
	user bool
}

func (s nsSpec) apply(a *syscall.SysProcAttr) {
	a.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if !s.user {
		return
	}
	a.Cloneflags |= syscall.CLONE_NEWUSER
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false // an unprivileged gid_map needs setgroups denied
	// The supervisor keeps CAP_SYS_ADMIN in its user namespace across exec
	// (its uid there is not 0) to mount its /proc; it drops it before it
	// starts the CLI.
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

func (s nsSpec) opts() string {
	if s.user {
		return string([]byte{optUser, optProc})
	}
	return string(optProc)
}

// namespaces is the choice made by the first Command, for this process's
// life. testNamespaces, when set (tests), is used instead.
var (
	nsOnce         sync.Once
	nsChosen       *nsSpec // nil: no namespace (subreaper)
	testNamespaces func() *nsSpec
)

func chooseNamespaces() *nsSpec {
	if testNamespaces != nil {
		return testNamespaces()
	}
	nsOnce.Do(func() {
		if os.Getenv(NoNamespaceVar) != "" {
			return
		}
		// Root (or a process with CAP_SYS_ADMIN) needs no user namespace;
		// where it is refused one (a container without CAP_SYS_ADMIN), a
		// user namespace may still be allowed.
		specs := []nsSpec{{user: true}}
		if os.Geteuid() == 0 {
			specs = []nsSpec{{}, {user: true}}
		}
		for _, s := range specs {
			if s.works() {
				nsChosen = &s
				return
			}
		}
	})
	return nsChosen
}

// works reports whether the system lets this process start a child in the
// namespaces s describes. The child is set up in full (namespaces, id maps,
// ambient capability) and then fails to enter a folder that does not
// exist, before any exec: that ENOENT is success. A refused namespace is
// EPERM, EINVAL, ENOSPC or EUSERS from clone or the map writes.
func (s nsSpec) works() bool {
	a := &syscall.SysProcAttr{}
	s.apply(a)
	dir := filepath.Join(os.TempDir(), "spbridge-probe-"+newSecret(), "absent")
	// Should the folder exist after all, "/" is no program (EACCES).
	pid, err := syscall.ForkExec("/", []string{"/"}, &syscall.ProcAttr{Dir: dir, Sys: a})
	if err == nil {
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		return false
	}
	return errors.Is(err, syscall.ENOENT)
}

// supervisorAttr returns the supervisor's SysProcAttr: a copy of the CLI's
// (which may be nil) without Pdeathsig (the lifeline does that job, and the
// supervisor must outlive this process to clean up; it sets Pdeathsig on the
// CLI), in namespaces of its own when the system allows; and the mode's
// options that tell the supervisor so.
func supervisorAttr(a *syscall.SysProcAttr) (*syscall.SysProcAttr, string) {
	c := &syscall.SysProcAttr{}
	if a != nil {
		*c = *a
	}
	c.Pdeathsig = 0
	s := chooseNamespaces()
	if s == nil {
		return c, ""
	}
	s.apply(c)
	return c, s.opts()
}

// enterNamespace is called by the supervisor, on the thread that will start
// the CLI, before it does. As the init of a PID namespace with a mount
// namespace of its own (optProc), it mounts that PID namespace's /proc over
// /proc, so that the CLI's pids and /proc agree (ps, /proc/$$, a pid's start
// time); it reports whether it did. The mount is made only once every mount
// has been made a slave, so it cannot propagate out. In a user namespace
// (optUser) it then drops its capabilities on this thread, so that the CLI
// gets none.
func enterNamespace(m mode) (ownProc bool, err error) {
	if os.Getpid() != 1 {
		return false, nil
	}
	if m.has(optProc) && unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, "") == nil {
		ownProc = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "") == nil
	}
	if m.has(optUser) {
		// Effective, permitted and inheritable emptied; the ambient set
		// empties with them.
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return false, os.NewSyscallError("capset", err)
		}
	}
	return ownProc, nil
}
