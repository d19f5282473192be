//go:build unix && !linux

package cliproc

import "syscall"

// pdeathsigThread is false: there is no Pdeathsig here.
const pdeathsigThread = false

func setPdeathsig(*syscall.SysProcAttr) {}

// awaitExit cannot wait without reaping here (no waitid with WNOWAIT in
// golang.org/x/sys/unix for these systems): it returns false at once, and
// the caller reaps first.
func awaitExit(int) bool { return false }
