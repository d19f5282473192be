package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"spbridge/internal/clis"
	"spbridge/internal/session"
)

func runRewind(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("rewind", "PKG --to ITEM [--files | --conversation] [--dry-run] [--force] | PKG --undo [--dry-run]",
		"Rewind a package's conversation to before a user message: that message and\n"+
			"everything after it leave the conversation (its history, ratings and cards\n"+
			"with them; the usage stays counted: it was spent). ITEM is the id of the\n"+
			"user item (spbridge conversation show --json prints the ids), or a turn's\n"+
			"number (1 for the first user message). What is removed is kept in the\n"+
			"package (agent/rewinds/) for --undo, which puts the last rewind back. The\n"+
			"next turn starts a new CLI session told the conversation so far. --dry-run\n"+
			"prints what would go and changes nothing. Takes the package lock.")
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
	if *filesOnly {
		return errors.New("this spbridge keeps no checkpoints of files: only the conversation can be rewound (--conversation)")
	}
	_ = force
	if err := checkPackage(pkg); err != nil {
		return err
	}
	s, err := session.Open(session.Options{Dir: pkg, Kind: kind, Keep: true, Saving: session.SaveByCaller, CLIs: clis.All,
		Settings: session.Settings{DefaultCLI: clis.Default()}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	var res *session.ConversationRewind
	err = writing(ctx, func() (err error) {
		if *undo {
			res, err = s.UndoRewind(*dryRun)
			return err
		}
		item := *to
		if n, aerr := strconv.Atoi(item); aerr == nil && n > 0 && s.ItemMap(item) == nil {
			if item, err = s.TurnItem(n); err != nil {
				return err
			}
		}
		res, err = s.RewindConversation(item, *dryRun)
		return err
	})
	if res != nil {
		printRewind(st.out, res, *undo)
	}
	return err
}

// printRewind says what a rewind or its undo did to the conversation, or
// would do.
func printRewind(w io.Writer, r *session.ConversationRewind, undo bool) {
	var b strings.Builder
	what := fmt.Sprintf("%d %s, %d %s", len(r.Removed), plural(len(r.Removed), "item", "items"), r.Messages, plural(r.Messages, "history message", "history messages"))
	switch {
	case undo && r.DryRun:
		fmt.Fprintf(&b, "would put back into the conversation (%s) from %s:\n", what, recordName(r))
	case undo:
		fmt.Fprintf(&b, "put back into the conversation (%s) from %s\n", what, recordName(r))
	case r.DryRun:
		fmt.Fprintf(&b, "would remove from the conversation, turn %d on (%s):\n", r.Turn, what)
	default:
		fmt.Fprintf(&b, "removed from the conversation, turn %d on (%s); %s keeps them for --undo\n", r.Turn, what, recordName(r))
	}
	if r.DryRun {
		for _, it := range r.Removed {
			line, _, _ := strings.Cut(itemText(it), "\n")
			fmt.Fprintf(&b, "  %s %s\n", it.ID(), line)
		}
	}
	if r.Dropped > 0 {
		fmt.Fprintf(&b, "dropped %d older %s: a turn ran after them\n", r.Dropped, plural(r.Dropped, "rewind record", "rewind records"))
	}
	io.WriteString(w, b.String())
}

func recordName(r *session.ConversationRewind) string {
	if r.Record == "" {
		return "memory"
	}
	return r.Record
}
