//go:build unix

package search

import "syscall"

// cpuTime is the process's CPU time so far (user and system), in
// seconds: on a machine others load, a benchmark's own cost.
func cpuTime() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
