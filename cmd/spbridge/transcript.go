package main

import (
	"context"
	"fmt"

	"spbridge/internal/archive"
	"spbridge/internal/transcript"
)

func runTranscript(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("transcript", "PKG",
		"Print the saved conversation of PKG as the plain-text transcript a fresh CLI\n"+
			"session is told after a reopen (transcriptText): user, assistant, tool,\n"+
			"failure, questions, plan and web-search blocks separated by blank lines.")
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
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		return err
	}
	text := transcript.Text(p.Conv.Items, p.Conv.History)
	if text == "" {
		return nil
	}
	_, err = fmt.Fprintln(st.out, text)
	return err
}
