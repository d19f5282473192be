//go:build unix

package fakeapi

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, which killGroup kills.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group of a cmd started with ownGroup.
func killGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
