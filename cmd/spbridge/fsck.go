package main

import (
	"context"
	"fmt"

	"spbridge/internal/archive"
)

func runFsck(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("fsck", "PKG",
		"Check a package's saved conversation without changing it: format version,\n"+
			"image hashes and the image cap, stray files, links and modes. Prints each\n"+
			"problem on its own line and exits 1, or prints ok. Takes no lock.")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	pkg, err := f.onePackage()
	if err != nil {
		return err
	}
	problems, err := archive.Check(pkg)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		fmt.Fprintln(st.out, "ok")
		return nil
	}
	for _, p := range problems {
		fmt.Fprintln(st.out, p)
	}
	return fmt.Errorf("%s: %d %s", pkg, len(problems), plural(len(problems), "problem", "problems"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
