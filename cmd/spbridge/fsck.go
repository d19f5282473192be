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
			"problem on its own line and exits 1, or prints ok. What an interrupted save\n"+
			"left behind (its temporary files, images stored before the conversation\n"+
			"that references them) is no problem: it is listed as a leftover, which the\n"+
			"next save removes. Follows no link. Takes no lock.")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	pkg, err := f.onePackage()
	if err != nil {
		return err
	}
	if err := checkPackage(pkg); err != nil {
		return err
	}
	rep, err := archive.Inspect(pkg)
	if err != nil {
		return err
	}
	for _, path := range rep.Leftovers {
		fmt.Fprintf(st.out, "%s: %s\n", path, archive.LeftoverNote)
	}
	if len(rep.Problems) == 0 {
		fmt.Fprintln(st.out, "ok")
		return nil
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(st.out, p)
	}
	return fmt.Errorf("%s: %d %s", pkg, len(rep.Problems), plural(len(rep.Problems), "problem", "problems"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
