//go:build !unix

package main

import (
	"io"
	"os"
)

// catchSIGPIPE does nothing: this system has no SIGPIPE, and a write to a
// client that went away fails.
func catchSIGPIPE() {}

// pollableOutput returns f: serve's output is written as it is, and a
// write the client does not take is given up at shutdown by leaving the
// goroutine that makes it (see internal/acp).
func pollableOutput(f *os.File) (out io.Writer, restore func()) { return f, func() {} }
