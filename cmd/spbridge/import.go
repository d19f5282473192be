package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"spbridge/internal/session"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/history"
)

func runImport(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("import", "[--backend claude|codex] [--replace] ID|FILE PKG",
		"Import a session of Claude Code or the Codex CLI into the package PKG: its\n"+
			"messages, thinking, tools with their results, images, usage, cost and model,\n"+
			"as format 1 keeps a conversation run in spbridge. ID is a session id as\n"+
			"'spbridge conversation list --cli' shows it, looked up in Claude Code's\n"+
			"sessions ($CLAUDE_CONFIG_DIR, else ~/.claude) and Codex's rollouts\n"+
			"($CODEX_HOME, else ~/.codex); FILE a session file itself. The CLI's files\n"+
			"are only read. A package that already holds a conversation is left as it\n"+
			"is unless --replace is given. Takes the package lock.")
	backend := f.String("backend", "", "the CLI whose session it is: claude or codex (default: either, told by the file)")
	replace := f.Bool("replace", false, "replace the conversation the package holds")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if f.NArg() != 2 {
		return usagef(f.cmd, "import takes a session (ID or FILE) and a package folder (PKG), got %d arguments", f.NArg())
	}
	if _, ok := clis.Lookup(*backend); *backend != "" && !ok {
		return usagef(f.cmd, "--backend: %q is not %s", *backend, clis.Choices())
	}
	src, pkg := f.Arg(0), f.Arg(1)
	if _, err := os.Stat(pkg); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no such package: %s", pkg)
	}
	paceGC()
	// What to import is read before the package is touched: a session
	// that cannot be read changes nothing.
	var conv *archive.Conversation
	var rep *history.Report
	var err error
	if isSessionFile(src) {
		conv, rep, err = history.ImportFile(*backend, src, history.ImportOptions{Stores: clis.Stores()})
	} else {
		var e history.Entry
		if e, err = history.Find(history.Options{Stores: clis.Stores(), Backend: *backend}, src); err == nil {
			conv, rep, err = history.Import(e, history.ImportOptions{Stores: clis.Stores()})
		}
	}
	if err != nil {
		return err
	}
	return session.WithLock(pkg, func() error {
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			return err
		}
		if held := p.Unreadable != "" || !p.Conv.IsEmpty(); held && !*replace {
			what := fmt.Sprintf("a conversation of %d items", len(p.Conv.Items))
			if p.Unreadable != "" {
				what = "a conversation that cannot be read (" + p.Unreadable + ")"
			}
			return fmt.Errorf("%s already holds %s; nothing was changed (--replace replaces it)", pkg, what)
		}
		p.BeginTurn() // an unreadable conversation is replaced, not kept
		p.Conv = conv
		var r *archive.SaveReport
		err = writing(ctx, func() (err error) {
			r, err = p.SaveContext(ctx, true)
			return err
		})
		printReport(st.out, r)
		if err != nil {
			return leftAsItWas(err, pkg)
		}
		fmt.Fprintf(st.out, "imported %s session %s: %d %s, %d %s\n", cliName(rep.Backend), rep.ID,
			rep.Turns, plural(rep.Turns, "message", "messages"), len(conv.Items), plural(len(conv.Items), "item", "items"))
		if rep.Skipped > 0 {
			fmt.Fprintf(st.err, "skipped %d lines of %s that were not understood\n", rep.Skipped, rep.Path)
		}
		if rep.Omitted != "" {
			fmt.Fprintln(st.err, rep.Omitted)
		}
		return nil
	})
}

// isSessionFile reports whether the argument names a file rather than a
// session id: a path with a folder in it, or a file that is there.
func isSessionFile(s string) bool {
	if strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".jsonl") {
		return true
	}
	_, err := os.Lstat(s)
	return err == nil
}

// cliName is how a backend's CLI is named to people (as its store of
// sessions says it), the first CLI's name for one it does not know.
func cliName(backend string) string {
	if c, ok := clis.Lookup(backend); ok {
		return c.History.Display()
	}
	return clis.All[0].History.Display()
}
