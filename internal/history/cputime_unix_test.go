//go:build unix

package history_test

import "syscall"

// cpuTime is the CPU time the process used so far (user and system), in
// nanoseconds: what a benchmark took whatever else the machine runs.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
