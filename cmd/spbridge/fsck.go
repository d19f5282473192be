package main

import (
	"context"
	"fmt"

	"errors"
	"os"
	"path/filepath"

	"spbridge/internal/archive"
	"spbridge/internal/checkpoint"
)

func runFsck(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("fsck", "PKG",
		"Check a package's saved conversation without changing it: format version,\n"+
			"image hashes and the image cap, stray files, links and modes. Prints each\n"+
			"problem on its own line and exits 1, or prints ok. What an interrupted save\n"+
			"left behind (its temporary files, images stored before the conversation\n"+
			"that references them) is no problem: it is listed as a leftover, which the\n"+
			"next save removes. The checkpoints of the files turns changed\n"+
			"(agent/checkpoints) get a line of their own: the turns and rewinds kept,\n"+
			"those dropped, and the space their stored contents take; a stored\n"+
			"contents missing or damaged, or an index that cannot be read, is a\n"+
			"problem. Follows no link. Takes no lock.")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	pkg, err := f.onePackage()
	if err != nil {
		return err
	}
	if pkg, err = conversationPackage(pkg); err != nil {
		return err
	}
	rep, err := archive.Inspect(pkg)
	if err != nil {
		return err
	}
	for _, path := range rep.Leftovers {
		fmt.Fprintf(st.out, "%s: %s\n", path, archive.LeftoverNote)
	}
	rep.Problems = append(rep.Problems, checkCheckpoints(st, pkg)...)
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

// checkCheckpoints prints what the package's checkpoints hold and returns
// their problems (none when it has none).
func checkCheckpoints(st stdio, pkg string) []string {
	// A link on the way is archive.Inspect's problem, said once.
	for _, d := range []string{archive.AgentDir, checkpoint.Dir} {
		if fi, err := os.Lstat(filepath.Join(pkg, filepath.FromSlash(d))); err != nil || !fi.IsDir() {
			return nil
		}
	}
	cs, err := checkpoint.Open(pkg, checkpoint.Policy{})
	if err != nil {
		return nil
	}
	u, err := cs.Usage()
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoints):
		return nil
	case err != nil:
		return []string{checkpoint.Dir + ": " + err.Error()}
	}
	fmt.Fprintf(st.out, "%s: %d %s and %d %s kept, %d dropped; %d stored %s, %d bytes\n", checkpoint.Dir,
		u.Turns, plural(u.Turns, "turn", "turns"), u.Entries-u.Turns, plural(u.Entries-u.Turns, "rewind", "rewinds"), u.Dropped,
		u.Blobs, "contents", u.Bytes)
	var problems []string
	for _, h := range u.Missing {
		problems = append(problems, checkpoint.BlobsDir+"/"+h+": missing (the files it held cannot be restored)")
	}
	for _, h := range u.Damaged {
		problems = append(problems, checkpoint.BlobsDir+"/"+h+": damaged, its bytes do not match its name (the files it held cannot be restored)")
	}
	return problems
}
