package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/clis"
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
	f := newFlagSet("version", "[--clis] [--supervision]",
		"Print the version of spbridge. With --clis, also each CLI's version, from\n"+
			"its program found as a session finds it ($SPBRIDGE_CLAUDE, else claude on\n"+
			"PATH), and the versions spbridge is tested with: the pinned set CI tests and\n"+
			"the newest set. A CLI of another version is used as usual; one not found is\n"+
			"said so, and the exit code is still 0.")
	cliVersions := f.Bool("clis", false, "also say each CLI's version as found, and the versions spbridge is tested with")
	supervision := f.Bool("supervision", false, "also say what holds the processes a CLI starts on this machine, and what that guarantees (starts a supervisor to find out)")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	if err := printVersion(st.out); err != nil {
		return err
	}
	if *cliVersions {
		if err := printCLIVersions(st.out); err != nil {
			return err
		}
	}
	if !*supervision {
		return nil
	}
	return printSupervision(st.out)
}

// printCLIVersions says, for each CLI, the version its program prints
// (found as a session finds it: $SPBRIDGE_NAME, else NAME on PATH), how
// that stands against the versions spbridge is tested with, and those. A
// CLI not found is said so; it is no error.
func printCLIVersions(w io.Writer) error {
	var b strings.Builder
	for _, c := range clis.All {
		fmt.Fprintf(&b, "%s: ", c.Name)
		path, err := c.Program()
		switch {
		case err != nil:
			if p := os.Getenv(backend.ProgramVar(c.Name)); p != "" {
				fmt.Fprintf(&b, "not found ($%s is %s)\n", backend.ProgramVar(c.Name), p)
			} else {
				fmt.Fprintf(&b, "not found (no %s on PATH, and $%s is not set)\n", c.Name, backend.ProgramVar(c.Name))
			}
		default:
			found := cliproc.Version(path, nil)
			switch status := clis.TestedStatus(c.Name, found); {
			case found == "":
				b.WriteString("found, but its --version printed nothing\n")
			case status == "" || strings.HasPrefix(status, "tested"):
				fmt.Fprintf(&b, "%s%s\n", found, prefixed(", ", status))
			default:
				fmt.Fprintf(&b, "%s, %s (used as usual)\n", found, status)
			}
			fmt.Fprintf(&b, "  program: %s\n", path)
		}
		var tested []string
		for _, tv := range clis.Tested(c.Name) {
			tested = append(tested, tv.Version+" ("+tv.Set+")")
		}
		if tested == nil {
			tested = []string{"none named"}
		}
		fmt.Fprintf(&b, "  tested: %s\n", strings.Join(tested, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// prefixed is p+s, or "" when s is.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
