package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/session"
	"spbridge/internal/statedir"
)

func runImport(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("import", "[--backend claude|codex] [--replace] [--plain-folder] ID|FILE PKG",
		"Import a session of Claude Code or the Codex CLI into the package PKG: its\n"+
			"messages, thinking, tools with their results, images, usage, cost and model,\n"+
			"as format 1 keeps a conversation run in spbridge. ID is a session id as\n"+
			"'spbridge conversation list --cli' shows it, looked up in Claude Code's\n"+
			"sessions ($CLAUDE_CONFIG_DIR, else ~/.claude) and Codex's rollouts\n"+
			"($CODEX_HOME, else ~/.codex); FILE a session file itself. The CLI's files\n"+
			"are only read. A package that already holds a conversation is left as it\n"+
			"is unless --replace is given. Takes the package lock.\n"+
			"PKG is made when it is not there (its folder must be): a package holding the\n"+
			"conversation only (agent/), which spbridge run and serve open as any package;\n"+
			"the document's own files are the editor's to write. A folder that is not a\n"+
			"document package (a repository, any folder) gets the conversation that\n"+
			"spbridge run DIR continues, kept in spbridge's state folder, and nothing is\n"+
			"written into it; --plain-folder puts it into the folder's agent/ instead.")
	backend := f.String("backend", "", "the CLI whose session it is: claude or codex (default: either, told by the file)")
	replace := f.Bool("replace", false, "replace the conversation the package holds")
	plain := f.Bool("plain-folder", false, "take PKG as a package even when it is a plain folder: its conversation goes into its agent/ folder")
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
	// Where it goes is checked before anything is read or made.
	to, err := importTarget(pkg, *plain)
	if err != nil {
		return err
	}
	paceGC()
	// What to import is read before the package is touched: a session
	// that cannot be read changes nothing.
	var conv *archive.Conversation
	var rep *history.Report
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
	dir, made := pkg, false // the package written, and whether it was made now
	switch {
	case to.make:
		if err := os.Mkdir(pkg, 0o755); err != nil {
			return fmt.Errorf("make the package %s: %w", pkg, err)
		}
		made = true
	case to.folder:
		if dir, err = folderConversation(to.state, pkg); err != nil {
			return err
		}
		if dir == "" {
			if dir, err = newFolderConversation(to.state); err != nil {
				return err
			}
			made = true
		}
	}
	err = session.WithLock(dir, func() error {
		p, err := archive.Open(dir, archive.KindDocument, true)
		if err != nil {
			return err
		}
		if held := p.Unreadable != "" || !p.Conv.IsEmpty(); held && !*replace {
			what := fmt.Sprintf("a conversation of %d items", len(p.Conv.Items))
			if p.Unreadable != "" {
				what = "a conversation that cannot be read (" + p.Unreadable + ")"
			}
			if to.folder {
				return fmt.Errorf("%s already has %s (kept in %s); nothing was changed (--replace replaces it)", pkg, what, dir)
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
		if !to.folder {
			printReport(st.out, r)
		}
		if err != nil {
			return leftAsItWas(err, pkg)
		}
		if to.folder {
			// Listed where serve and run find the folder's conversation.
			if err := recordFolderTurn(to.state, dir, pkg, firstMessage(conv), rep.Backend, rep.ID); err != nil {
				return fmt.Errorf("sessions index: %w", err)
			}
		}
		fmt.Fprintf(st.out, "imported %s session %s: %d %s, %d %s\n", cliName(rep.Backend), rep.ID,
			rep.Turns, plural(rep.Turns, "message", "messages"), len(conv.Items), plural(len(conv.Items), "item", "items"))
		switch {
		case to.folder:
			fmt.Fprintf(st.out, "%s is not a document package: its conversation is kept in spbridge's state folder (%s); spbridge run %s continues it\n", pkg, dir, pkg)
		case made:
			fmt.Fprintf(st.out, "made the package %s\n", pkg)
		}
		if rep.Skipped > 0 {
			fmt.Fprintf(st.err, "skipped %d lines of %s that were not understood\n", rep.Skipped, rep.Path)
		}
		if rep.Omitted != "" {
			fmt.Fprintln(st.err, rep.Omitted)
		}
		return nil
	})
	if err != nil && made {
		// A package made for the import goes again with it.
		os.RemoveAll(dir)
	}
	return err
}

// importDest is where import writes: an existing package, a package to
// make (make), or the conversation of a plain folder in the state folder
// (folder, with the state folder).
type importDest struct {
	make, folder bool
	state        string
}

// importTarget says where import writes pkg: a document package as it is;
// nothing there, a package it makes (its folder, which must exist,
// holding the conversation only); a plain folder, its conversation in the
// state folder where spbridge run finds it, or with plain its agent/.
func importTarget(pkg string, plain bool) (importDest, error) {
	fi, err := os.Stat(pkg)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		parent := filepath.Dir(pkg)
		pfi, err := os.Stat(parent)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return importDest{}, fmt.Errorf("cannot make the package %s: the folder %s does not exist", pkg, parent)
		case err != nil:
			return importDest{}, fmt.Errorf("cannot make the package %s: %w", pkg, err)
		case !pfi.IsDir():
			return importDest{}, fmt.Errorf("cannot make the package %s: %s is not a folder", pkg, parent)
		}
		return importDest{make: true}, nil
	case err != nil:
		return importDest{}, err
	case !fi.IsDir():
		return importDest{}, fmt.Errorf("not a document package: %s (a file, not a folder)", pkg)
	case plain:
		return importDest{}, nil
	}
	if ok, err := isPackage(pkg); ok || err != nil {
		return importDest{}, err
	}
	state, err := statedir.Dir()
	if err != nil {
		return importDest{}, err
	}
	return importDest{folder: true, state: state}, nil
}

// firstMessage is the text of the conversation's first user message (the
// title a listing gives it), "" when it has none.
func firstMessage(conv *archive.Conversation) string {
	for _, it := range conv.Items {
		if it.Type() == archive.TypeUser {
			return it.String("text")
		}
	}
	return ""
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
