package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Lifeline holds the Job Object a CLI runs in: closing it, or this
// process's death (which closes its handles), kills the CLI and every
// process in the job, which is every process the CLI starts (children are
// created in their parent's job). Its methods are not safe for concurrent
// use.
type Lifeline struct {
	job  windows.Handle
	path string
}

// Main does nothing on Windows, where no supervisor process is needed, but
// remove EnvVar from the environment, should it be inherited, and let
// Executable answer.
func Main() {
	os.Unsetenv(EnvVar)
	mainCalled.Store(true)
}

// Probe returns the layer that holds a supervised CLI: on Windows, always a
// Job Object (exe is not used).
func Probe(exe string) (Layer, error) { return Layer{Name: JobObject}, nil }

// Layer returns what holds the CLI: a Job Object.
func (l *Lifeline) Layer() Layer { return Layer{Name: JobObject} }

// Status returns how the CLI ended, given its state after Wait: the CLI is
// the command's own process on Windows.
func (l *Lifeline) Status(ps *os.ProcessState) syscall.WaitStatus {
	ws, _ := ps.Sys().(syscall.WaitStatus)
	return ws
}

// Command returns a command that runs the CLI described by cli in a process
// group of its own (CREATE_NEW_PROCESS_GROUP, for Interrupt), and a Lifeline
// holding a new Job Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, which
// Started puts the CLI in. exe is not used (no supervisor on Windows). cli
// itself is not changed and must not be started; it must not come from
// exec.CommandContext (end the CLI with Lifeline.Close). The caller must call
// Close on every path.
func Command(exe string, cli *exec.Cmd) (*exec.Cmd, *Lifeline, error) {
	if cli.Err != nil {
		return nil, nil, cli.Err
	}
	if cli.Process != nil {
		return nil, nil, errors.New("supervise: command already started")
	}
	if cli.Cancel != nil {
		return nil, nil, errors.New("supervise: command has a Cancel (exec.CommandContext); end it with Lifeline.Close")
	}
	job, err := newJob()
	if err != nil {
		return nil, nil, err
	}
	cmd := &exec.Cmd{
		Path:        cli.Path,
		Args:        cli.Args,
		Env:         withoutVar(envOrEnviron(cli.Env), EnvVar),
		Dir:         cli.Dir,
		Stdin:       cli.Stdin,
		Stdout:      cli.Stdout,
		Stderr:      cli.Stderr,
		ExtraFiles:  cli.ExtraFiles,
		SysProcAttr: groupAttr(cli.SysProcAttr),
		WaitDelay:   cli.WaitDelay,
	}
	return cmd, &Lifeline{job: job, path: cli.Path}, nil
}

func envOrEnviron(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

// groupAttr returns a copy of a (which may be nil) that also asks for a new
// process group, whose id is the CLI's pid.
func groupAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	c := &syscall.SysProcAttr{}
	if a != nil {
		*c = *a
	}
	c.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP
	return c
}

// jobLimits is the job's limit: kill every process in it when its last
// handle closes.
func jobLimits() windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	return info
}

// newJob creates an unnamed, non-inheritable Job Object with jobLimits.
func newJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("supervise: CreateJobObject: %w", err)
	}
	info := jobLimits()
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("supervise: SetInformationJobObject: %w", err)
	}
	return job, nil
}

// Started puts the started CLI, p, in the job and returns its pid. On error
// the CLI runs outside the job: the caller should kill it (p.Kill) and Close.
//
// The CLI is put in the job right after CreateProcess returned, not created
// suspended inside it (os/exec gives no handle to its first thread to resume
// it): a process the CLI starts within that window is outside the job. The
// CLIs spbridge runs (Node.js programs) start nothing for many milliseconds.
// Nested jobs (Windows 8 and later) let this work when spbridge itself runs
// in a job.
func (l *Lifeline) Started(p *os.Process) (int, error) {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		return 0, &StartError{Path: l.path, Err: fmt.Errorf("OpenProcess: %w", err)}
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(l.job, h); err != nil {
		return 0, &StartError{Path: l.path, Err: fmt.Errorf("AssignProcessToJobObject: %w", err)}
	}
	return p.Pid, nil
}

// Close terminates every process in the job and closes it. Calls after the
// first do nothing.
func (l *Lifeline) Close() error {
	if l.job == 0 {
		return nil
	}
	windows.TerminateJobObject(l.job, 1)
	err := windows.CloseHandle(l.job)
	l.job = 0
	return err
}

// Interrupt sends CTRL_BREAK to the process group pgid (the CLI's pid), the
// only console event that can be aimed at one group. The CLI must share this
// process's console.
func Interrupt(pgid int) error {
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pgid)); err != nil {
		return os.NewSyscallError("GenerateConsoleCtrlEvent", err)
	}
	return nil
}
