package main

import (
	"context"

	"spbridge/internal/archive"
)

// conversationCommands returns the subcommands of "spbridge conversation".
func conversationCommands() []command {
	return []command{
		{"show", "print a package's conversation, or its last turn", runConversationShow},
		{"list", "list the packages under a folder that hold a conversation", runConversationListAll},
		{"search", "search every conversation for words, best first", runConversationSearch},
		{"new", "start a new conversation, removing the saved one", runConversationNew},
		{"recover", "show or take the recovery copy of a package's conversation", runConversationRecover},
	}
}

func runConversation(ctx context.Context, st stdio, args []string) error {
	return runGroup(ctx, st, args, "conversation",
		"Show, list, search, start over or recover the conversations saved in document packages.", conversationCommands())
}

// kindFlag is the --kind flag of the commands that open a package.
type kindFlag struct {
	f *flagSet
	s *string
}

func addKindFlag(f *flagSet) kindFlag {
	s := f.String("kind", string(archive.KindDocument), "the package's `KIND`: document, template or designSystem")
	return kindFlag{f, s}
}

// kind returns the parsed kind; a bad value is a usage error.
func (k kindFlag) kind() (archive.Kind, error) {
	kind, err := archive.ParseKind(*k.s)
	if err != nil {
		return "", &usageError{cmd: k.f.cmd, err: err}
	}
	return kind, nil
}
