package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"spbridge/internal/session"

	"spbridge/internal/archive"
)

func runSave(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("save", "PKG [--keep-conversation=false] [--kind KIND]",
		"Save the package's conversation as the host's save of the document does:\n"+
			"rewrite agent/ in canonical format 1 when it changed, store and prune\n"+
			"images, and leave an unchanged conversation untouched. An unreadable\n"+
			"conversation is kept byte-identical. Takes the package lock.")
	keep := f.Bool("keep-conversation", true, "keep the agent conversation in the document (false removes agent/)")
	kindf := addKindFlag(f)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	pkg, err := f.onePackage()
	if err != nil {
		return err
	}
	kind, err := kindf.kind()
	if err != nil {
		return err
	}
	if err := checkPackage(pkg); err != nil {
		return err
	}
	return session.WithLock(pkg, func() error {
		p, err := archive.Open(pkg, kind, *keep)
		if err != nil {
			return err
		}
		var r *archive.SaveReport
		err = writing(ctx, func() (err error) {
			r, err = p.SaveContext(ctx, *keep)
			return err
		})
		printReport(st.out, r)
		if err != nil {
			return leftAsItWas(err, pkg)
		}
		if !r.Changed() {
			fmt.Fprintln(st.out, "unchanged")
		}
		if p.Unreadable != "" {
			fmt.Fprintf(st.err, "kept unreadable conversation: %s\n", p.Unreadable)
		}
		return nil
	})
}

// leftAsItWas adds to the error of a save given up on a signal that the
// package is as it was.
func leftAsItWas(err error, pkg string) error {
	var se *signalError
	if errors.As(err, &se) {
		return fmt.Errorf("%w; %s is as it was", err, pkg)
	}
	return err
}

// printReport prints what a save changed, one path a line. A save that
// failed midway may have changed some files; they are printed too.
func printReport(w io.Writer, r *archive.SaveReport) {
	if r == nil {
		return
	}
	for _, path := range r.Written {
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	for _, path := range r.Removed {
		fmt.Fprintf(w, "removed %s\n", path)
	}
}
