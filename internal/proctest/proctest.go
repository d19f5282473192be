// Package proctest finds the processes a test marked, so that the test can
// check that nothing it started is left running. It reads /proc, so it
// answers on Linux; elsewhere it reports ErrUnsupported and the test skips.
package proctest

import "errors"

// ErrUnsupported is returned where the process table cannot be read.
var ErrUnsupported = errors.New("no /proc to find processes in")

// Proc is a live process: its pid and its command line, arguments joined
// by spaces.
type Proc struct {
	PID  int
	Argv string

	start string // when it started (/proc/PID/stat's starttime), to tell a reused pid apart
}

// Live reports whether p has not ended (a zombie has ended): the process
// found, not another that was given its pid since. It reads p's own /proc
// file only, where WithEnv and WithArg read every process's: a test that
// waits for the processes it found to end checks them with Live, and
// reads the whole table again once they have.
func (p Proc) Live() bool {
	start, ok := started(p.PID)
	return ok && start == p.start
}

// WithEnv returns the live processes (zombies left out), other than the
// caller, whose environment holds one of kvs exactly ("KEY=VALUE").
func WithEnv(kvs ...string) ([]Proc, error) {
	return find("environ", func(env []byte) bool {
		for _, kv := range splitNUL(env) {
			for _, want := range kvs {
				if string(kv) == want {
					return true
				}
			}
		}
		return false
	})
}

// WithArg returns the live processes, other than the caller, whose command
// line (arguments joined by spaces) holds s.
func WithArg(s string) ([]Proc, error) {
	return find("cmdline", func(raw []byte) bool { return contains(argv(raw), s) })
}

// PIDs lists the processes' pids.
func PIDs(ps []Proc) []int {
	pids := make([]int, len(ps))
	for i, p := range ps {
		pids[i] = p.PID
	}
	return pids
}
