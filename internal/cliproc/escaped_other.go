//go:build !linux

package cliproc

// KillEscaped kills the processes the program started that left its
// process group. Without /proc it cannot find them and does nothing; a
// supervised program's supervisor (macOS: a walk of the process table;
// Windows: the Job Object) kills them at the program's end or its Close.
func (p *Proc) KillEscaped(sessionsOnly bool) []int { return nil }
