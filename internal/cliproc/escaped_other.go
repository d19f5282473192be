//go:build !linux

package cliproc

// KillEscaped kills the processes the program started that left its
// process group. Without /proc it cannot find them and does nothing.
func (p *Proc) KillEscaped(sessionsOnly bool) []int { return nil }
