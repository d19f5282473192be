package main

import (
	"context"
	"fmt"

	"spbridge/internal/archive"
	"spbridge/internal/session"
	"spbridge/internal/sessionindex"
	"spbridge/internal/statedir"
)

func runConversationNew(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("conversation new", "PKG --yes [--kind KIND]",
		"Start a new conversation (New Conversation): remove the package's saved\n"+
			"conversation, agent/ with its images, readable or not. Takes the package lock.")
	yes := f.Bool("yes", false, "confirm removing the saved conversation")
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
	if !*yes {
		return usagef(f.cmd, "conversation new removes the saved conversation of %s; confirm with --yes", pkg)
	}
	given := pkg
	if pkg, err = conversationPackage(pkg); err != nil {
		return err
	}
	return session.WithLock(pkg, func() error {
		p, err := archive.Open(pkg, kind, true)
		if err != nil {
			return err
		}
		var r *archive.SaveReport
		err = writing(ctx, func() (err error) {
			r, err = p.NewConversation()
			return err
		})
		printReport(st.out, r)
		if err != nil {
			return err
		}
		if !r.Changed() {
			fmt.Fprintln(st.out, "no conversation")
		}
		if pkg != given {
			// A plain folder's conversation: its listing's title goes
			// with it, as New Conversation in an editor does.
			state, err := statedir.Dir()
			if err != nil {
				return err
			}
			return sessionindex.New(state).SetTitle(pkg, "")
		}
		return nil
	})
}
