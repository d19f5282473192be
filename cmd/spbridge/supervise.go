package main

import (
	"fmt"
	"io"

	"spbridge/internal/supervise"
)

// init makes this binary a CLI's supervisor when internal/supervise started
// it as one: supervise.Main then runs the supervisor and exits the process
// before main runs; otherwise it returns at once. SPBRIDGE_SUPERVISOR alone,
// inherited from an editor's environment, does not make a supervisor (Main
// also needs the lifeline and its secret, which only spbridge sets up), and
// Main removes it from the environment, so that no CLI gets it. It is an init
// function in a file of its own, rather than the first line of main, so that
// main.go does not change; the imported packages' initialisation, which runs
// before it, is all the supervisor pays for that. The test binary of this
// package is a supervisor too.
func init() { supervise.Main() }

// printSupervision says which layer holds the CLIs this spbridge starts, and
// what it guarantees: it starts a supervisor to find out (supervise.Probe).
func printSupervision(w io.Writer) error {
	exe, err := supervise.Executable()
	if err != nil {
		return err
	}
	layer, err := supervise.Probe(exe)
	if err != nil {
		return fmt.Errorf("supervision: %w", err)
	}
	_, err = fmt.Fprintf(w, "supervision: %s: %s\n", layer, layer.Guarantee())
	return err
}
