package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version is spbridge's version. A release build sets it with
// -ldflags "-X main.version=v1.2.3"; otherwise it is the module version the
// binary was built from, or "devel".
var version string

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func printVersion(w io.Writer) error {
	_, err := fmt.Fprintf(w, "spbridge %s\n", versionString())
	return err
}

func runVersion(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("version", "[--supervision]", "Print the version of spbridge.")
	supervision := f.Bool("supervision", false, "also say what holds the processes a CLI starts on this machine, and what that guarantees (starts a supervisor to find out)")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	if err := printVersion(st.out); err != nil || !*supervision {
		return err
	}
	return printSupervision(st.out)
}
