package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"spbridge/internal/checkpoint"
	"spbridge/internal/clis"
	"spbridge/internal/session"
)

func runRewind(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("rewind", "PKG --to ITEM [--files | --conversation] [--dry-run] [--force] | PKG --undo [--dry-run]",
		"Rewind a package to before a user message: the files its turns changed go\n"+
			"back (from the package's checkpoints, newest turn first; a file changed since\n"+
			"by someone else is a conflict, left as it is unless --force), and the message\n"+
			"and everything after it leave the conversation (its history, ratings and\n"+
			"cards with them; the usage stays counted: it was spent). --files or\n"+
			"--conversation rewinds one half. ITEM is the id of the user item (spbridge\n"+
			"conversation show --json prints the ids), or a turn's number (1 for the\n"+
			"first user message). What is removed is kept in the package (agent/rewinds/,\n"+
			"agent/checkpoints/) for --undo, which puts the last rewind back. The next\n"+
			"turn starts a new CLI session told the conversation so far. --dry-run prints\n"+
			"every file it would restore or delete and the items it would remove, and\n"+
			"changes nothing. Takes the package lock.")
	to := f.String("to", "", "the user `ITEM` (an item id, or a turn number) to rewind to before")
	filesOnly := f.Bool("files", false, "rewind only the files the turns changed")
	convOnly := f.Bool("conversation", false, "rewind only the conversation")
	dryRun := f.Bool("dry-run", false, "print what would change, and change nothing")
	force := f.Bool("force", false, "also restore files changed since the turn by someone else (conflicts)")
	undo := f.Bool("undo", false, "put back what the last rewind removed")
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
	switch {
	case *filesOnly && *convOnly:
		return usagef(f.cmd, "--files and --conversation each rewind one half; give neither for both")
	case *undo && *to != "":
		return usagef(f.cmd, "--undo puts the last rewind back; it takes no --to")
	case !*undo && *to == "":
		return usagef(f.cmd, "rewind needs --to ITEM (or --undo)")
	}
	if pkg, err = conversationPackage(pkg); err != nil {
		return err
	}
	s, err := session.Open(session.Options{Dir: pkg, Kind: kind, Keep: true, Saving: session.SaveByCaller, CLIs: clis.All,
		Settings: session.Settings{DefaultCLI: clis.Default()}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	var res *session.Rewound
	err = writing(ctx, func() (err error) {
		if *undo {
			res, err = s.Undo(*dryRun, *force)
			return err
		}
		item := *to
		if n, aerr := strconv.Atoi(item); aerr == nil && n > 0 && s.ItemMap(item) == nil {
			if item, err = s.TurnItem(n); err != nil {
				return err
			}
		}
		res, err = s.Rewind(session.RewindOptions{Before: item, Files: !*convOnly, Conversation: !*filesOnly,
			DryRun: *dryRun, Force: *force})
		return err
	})
	if res != nil {
		printRewind(st.out, res, *undo, *dryRun)
	}
	return err
}

// printRewind says what a rewind or its undo did, or would do: every file
// restored or deleted (and each conflict, left alone), then the
// conversation's items.
func printRewind(w io.Writer, r *session.Rewound, undo, dryRun bool) {
	var b strings.Builder
	if f := r.Files; f != nil && f.Plan != nil {
		printFiles(&b, f, dryRun)
	}
	if r.FilesErr != nil {
		fmt.Fprintf(&b, "files: not rewound: %v\n", r.FilesErr)
	}
	if c := r.Conversation; c != nil && (len(c.Removed) > 0 || r.Files == nil) {
		printConversation(&b, c, undo)
	}
	io.WriteString(w, b.String())
}

// printFiles lists a rewind's files.
func printFiles(b *strings.Builder, f *session.FileRewind, dryRun bool) {
	p := f.Plan
	verb := map[checkpoint.Op]string{checkpoint.Restore: "restored", checkpoint.Remove: "deleted"}
	if dryRun {
		verb = map[checkpoint.Op]string{checkpoint.Restore: "would restore", checkpoint.Remove: "would delete"}
	}
	if len(p.Actions) == 0 && len(p.Folders) == 0 {
		b.WriteString("files: nothing to restore\n")
	}
	for _, a := range p.Actions {
		path := checkpoint.Display(filepath.Join(a.Root, filepath.FromSlash(a.Path)))
		switch {
		case a.Conflict && !p.Force:
			fmt.Fprintf(b, "conflict %s: changed since the turn by someone else; left as it is (--force %s it)\n", path, strings.TrimPrefix(string(a.Op), "would "))
		default:
			fmt.Fprintf(b, "%s %s\n", verb[a.Op], path)
		}
	}
	folderVerb := map[checkpoint.Op]string{checkpoint.Restore: "made folder", checkpoint.Remove: "removed folder"}
	if dryRun {
		folderVerb = map[checkpoint.Op]string{checkpoint.Restore: "would make folder", checkpoint.Remove: "would remove folder (when empty)"}
	}
	for _, d := range p.Folders {
		fmt.Fprintf(b, "%s %s\n", folderVerb[d.Op], checkpoint.Display(filepath.Join(d.Root, filepath.FromSlash(d.Path))))
	}
	if len(p.Missing) > 0 {
		fmt.Fprintf(b, "files: %d stored contents missing or damaged: nothing was changed (%s)\n", len(p.Missing), strings.Join(p.Missing, ", "))
	}
	if len(p.Dropped) > 0 || f.Untracked {
		b.WriteString("files: some of these turns' files were not checkpointed (before checkpoints, or dropped by the policy): those are not restored\n")
	}
}

// printConversation says what a rewind or its undo did to the
// conversation, or would do.
func printConversation(b *strings.Builder, r *session.ConversationRewind, undo bool) {
	what := fmt.Sprintf("%d %s, %d %s", len(r.Removed), plural(len(r.Removed), "item", "items"), r.Messages, plural(r.Messages, "history message", "history messages"))
	switch {
	case undo && r.DryRun:
		fmt.Fprintf(b, "would put back into the conversation (%s) from %s:\n", what, recordName(r))
	case undo:
		fmt.Fprintf(b, "put back into the conversation (%s) from %s\n", what, recordName(r))
	case r.DryRun:
		fmt.Fprintf(b, "would remove from the conversation, turn %d on (%s):\n", r.Turn, what)
	default:
		fmt.Fprintf(b, "removed from the conversation, turn %d on (%s); %s keeps them for --undo\n", r.Turn, what, recordName(r))
	}
	if r.DryRun {
		for _, it := range r.Removed {
			line, _, _ := strings.Cut(itemText(it), "\n")
			fmt.Fprintf(b, "  %s %s\n", it.ID(), line)
		}
	}
	if r.Dropped > 0 {
		fmt.Fprintf(b, "dropped %d older %s: a turn ran after them\n", r.Dropped, plural(r.Dropped, "rewind record", "rewind records"))
	}
}

func recordName(r *session.ConversationRewind) string {
	if r.Record == "" {
		return "memory"
	}
	return r.Record
}
