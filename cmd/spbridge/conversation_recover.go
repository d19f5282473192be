package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/session"
)

func runConversationRecover(ctx context.Context, st stdio, args []string) error {
	f := newFlagSet("conversation recover", "PKG [--take [--force]]",
		"Show the recovery copy spbridge kept of a package's conversation: at each\n"+
			"turn's end of a document an editor saves itself, in the state folder's\n"+
			"recovery/. It is newer than the package while the package still holds the\n"+
			"conversation it held when the copy was written. --take puts the copy into\n"+
			"the package (taking its lock) and removes it; a copy the package was saved\n"+
			"over since is taken only with --force.")
	take := f.Bool("take", false, "put the copy into the package")
	force := f.Bool("force", false, "with --take: also a copy older than the package")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	pkg, err := f.onePackage()
	if err != nil {
		return err
	}
	if *force && !*take {
		return usagef(f.cmd, "--force goes with --take")
	}
	if pkg, err = conversationPackage(pkg); err != nil {
		return err
	}
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return err
	}
	state, err := audit.StateDir()
	if err != nil {
		return err
	}
	r, err := session.ReadRecovery(filepath.Join(state, "recovery"), abs)
	if err != nil {
		return err
	}
	if r == nil {
		fmt.Fprintln(st.out, "no recovery copy")
		return nil
	}
	return session.WithLock(pkg, func() error {
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			return err
		}
		newer := r.Newer(p.SavedHash())
		state := "newer than the package: the package was not saved since"
		if !newer {
			state = "older than the package: the package was saved since"
		}
		fmt.Fprintf(st.out, "recovery copy of %s\n  %d items, written %s; the package holds %d\n  %s\n  %s\n",
			abs, r.Items, r.Time.Local().Format("2006-01-02 15:04:05"), len(p.Conv.Items), state, r.Dir)
		if !*take {
			return nil
		}
		if !newer && !*force {
			return errors.New("the package was saved since the copy was written; --force takes the copy all the same")
		}
		conv, err := r.Conversation()
		if err != nil {
			return err
		}
		p.ResetConversation()
		p.Conv = conv
		return writing(ctx, func() error {
			rep, err := p.SaveContext(ctx, true)
			printReport(st.out, rep)
			if err != nil {
				return leftAsItWas(err, pkg)
			}
			return r.Remove()
		})
	})
}
