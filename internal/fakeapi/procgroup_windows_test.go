package fakeapi

import "os/exec"

// ownGroup leaves cmd as it is on Windows.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd's process.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
