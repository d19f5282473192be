package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"spbridge/internal/audit"
	"spbridge/internal/regfile"
	"spbridge/internal/session"
)

// stateCommands returns the subcommands of "spbridge state".
func stateCommands() []command {
	return []command{
		{"prune", "remove audit logs and editor sessions older than a duration", runStatePrune},
	}
}

func runState(ctx context.Context, st stdio, args []string) error {
	return runGroup(ctx, st, args, "state",
		"Look after spbridge's state folder: the audit logs, their key and index, and\n"+
			"the packages of editor sessions that name none.\n\n"+stateDirHelp, stateCommands())
}

func runStatePrune(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("state prune", "--older-than DURATION [--dry-run]",
		"Remove the audit logs that have not changed for DURATION (marked in the\n"+
			"index, so that audit verify reports them as pruned, not missing), and the\n"+
			"packages under sessions/ of editor sessions that named no package of their\n"+
			"own and have not changed for DURATION (a session open in a running spbridge\n"+
			"is left alone), and the recovery copies under recovery/ of documents an\n"+
			"editor saves itself, written that long ago (one whose package is open in a\n"+
			"running spbridge is left alone). Prints each thing removed. DURATION is a\n"+
			"Go duration (72h, 90m) or a number of days (30d).")
	older := f.String("older-than", "", "remove what has not changed for this `DURATION` (e.g. 30d, 720h)")
	dryRun := f.Bool("dry-run", false, "print what would be removed, remove nothing")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	if *older == "" {
		return usagef(f.cmd, "state prune needs --older-than DURATION")
	}
	age, err := parseAge(*older)
	if err != nil {
		return usagef(f.cmd, "--older-than: %v", err)
	}
	state, err := audit.StateDir()
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-age)
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	var logs []string
	err = writing(ctx, func() (err error) {
		logs, err = audit.Prune(state, cutoff, *dryRun)
		return err
	})
	for _, p := range logs {
		fmt.Fprintf(st.out, "%s %s\n", verb, relTo(state, p))
	}
	if err != nil {
		return err
	}
	sessions, err := pruneSessions(ctx, filepath.Join(state, "sessions"), cutoff, *dryRun, func(dir string, err error) {
		fmt.Fprintf(st.err, "spbridge: kept %s: %v\n", relTo(state, dir), err)
	})
	for _, p := range sessions {
		fmt.Fprintf(st.out, "%s %s\n", verb, relTo(state, p))
	}
	if err != nil {
		return err
	}
	copies, err := pruneRecovery(ctx, filepath.Join(state, "recovery"), cutoff, *dryRun, func(dir string, err error) {
		fmt.Fprintf(st.err, "spbridge: kept %s: %v\n", relTo(state, dir), err)
	})
	for _, p := range copies {
		fmt.Fprintf(st.out, "%s %s\n", verb, relTo(state, p))
	}
	if err != nil {
		return err
	}
	if len(logs)+len(sessions)+len(copies) == 0 {
		fmt.Fprintln(st.out, "nothing to remove")
	}
	return nil
}

// parseAge reads a duration: Go's form (72h, 90m) or whole days (30d).
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, err
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", s)
	}
	return d, nil
}

// pruneSessions removes the session packages under dir in which nothing
// changed since cutoff and that no running spbridge holds, and returns
// them. kept is told of each one left because it could not be taken.
func pruneSessions(ctx context.Context, dir string, cutoff time.Time, dryRun bool, kept func(string, error)) ([]string, error) {
	old, err := unchangedSince(dir, cutoff, kept)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, pkg := range old {
		var rmErr error
		err := writing(ctx, func() error {
			return session.WithLock(pkg, func() error {
				if !dryRun {
					rmErr = os.RemoveAll(pkg)
				}
				return nil
			})
		})
		if err != nil && ctx.Err() != nil { // a signal: stop here
			return removed, err
		}
		if rmErr != nil {
			return removed, fmt.Errorf("remove %s: %w", pkg, rmErr)
		}
		if err != nil { // the lock: another process holds the package
			kept(pkg, err)
			continue
		}
		removed = append(removed, pkg)
	}
	return removed, nil
}

// pruneRecovery removes the recovery copies under dir written before
// cutoff, unless a running spbridge holds the package a copy is of, and
// returns them. kept is told of each one left because it could not be
// taken.
func pruneRecovery(ctx context.Context, dir string, cutoff time.Time, dryRun bool, kept func(string, error)) ([]string, error) {
	old, err := unchangedSince(dir, cutoff, kept)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, copyDir := range old {
		remove := func() error {
			if dryRun {
				return nil
			}
			return writing(ctx, func() error { return os.RemoveAll(copyDir) })
		}
		var rmErr error
		var pkg string
		if data, err := regfile.ReadFile(filepath.Join(copyDir, session.RecoveryFile)); err == nil {
			var r session.Recovery
			if json.Unmarshal(data, &r) == nil {
				pkg = r.Package
			}
		}
		if fi, err := os.Stat(pkg); pkg != "" && err == nil && fi.IsDir() {
			// The package's lock: a session open on it writes the copy.
			err = session.WithLock(pkg, func() error { rmErr = remove(); return nil })
			if rmErr == nil && err != nil {
				kept(copyDir, err)
				continue
			}
		} else {
			rmErr = remove()
		}
		if rmErr != nil {
			return removed, fmt.Errorf("remove %s: %w", copyDir, rmErr)
		}
		removed = append(removed, copyDir)
	}
	return removed, nil
}

// unchangedSince are the folders in dir (not links, not files) in which
// nothing changed since cutoff; none when dir is missing. kept is told of
// each one that could not be looked at.
func unchangedSince(dir string, cutoff time.Time, kept func(string, error)) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var old []string
	for _, de := range entries {
		if !de.IsDir() {
			continue // a link or a file: nothing spbridge made there
		}
		path := filepath.Join(dir, de.Name())
		newest, err := newestChange(path)
		if err != nil {
			kept(path, err)
			continue
		}
		if newest.Before(cutoff) {
			old = append(old, path)
		}
	}
	return old, nil
}

// newestChange is the latest modification time of dir and everything in it
// (links are not followed).
func newestChange(dir string) (time.Time, error) {
	var newest time.Time
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		return nil
	})
	return newest, err
}

// relTo names path relative to base when it lies inside it.
func relTo(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
