package main

import "spbridge/internal/supervise"

// init makes this binary a CLI's supervisor when internal/supervise started
// it as one (SPBRIDGE_SUPERVISOR set in its environment): supervise.Main then
// runs the supervisor and exits the process before main runs; otherwise it
// returns at once. It is an init function in a file of its own, rather than
// the first line of main, so that main.go does not change; the imported
// packages' initialisation, which runs before it, is all the supervisor
// pays for that. The test binary of this package is a supervisor too.
func init() { supervise.Main() }
