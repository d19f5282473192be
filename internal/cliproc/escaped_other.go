//go:build !linux

package cliproc

// KillEscaped kills the processes the program started that left its
// process group. Without /proc it cannot find them and does nothing; a
// supervised program's supervisor (macOS: a walk of the process table;
// Windows: the Job Object) kills them at the program's end or its Close.
func (p *Proc) KillEscaped(sessionsOnly bool) []int { return nil }

// Detached reports whether a descendant of the program that left its
// session still runs. Without /proc it cannot tell, and says none.
func (p *Proc) Detached() bool { return false }
