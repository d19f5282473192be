package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/checkpoint"
)

func runConversationShow(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("conversation show", "PKG [--json] [--last] [--kind KIND]",
		"Print a package's conversation: one block of text per item, or with --json\n"+
			"the canonical format-1 encoding. A notice that ends a turn which changed\n"+
			"files is followed by each file (with --json: its \"changes\", from\n"+
			"agent/checkpoints/index.json). It ends with the CLI session the\n"+
			"conversation last ran on and, while the CLI keeps it, the command that\n"+
			"continues it in a terminal (--json: lastCLISession). Takes no lock and\n"+
			"changes nothing.")
	asJSON := f.Bool("json", false, "print the conversation as canonical format-1 JSON")
	last := f.Bool("last", false, "only the last turn: from the last user item to the end")
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
	if pkg, err = conversationPackage(pkg); err != nil {
		return err
	}
	p, err := archive.Open(pkg, kind, true)
	if err != nil {
		return err
	}
	if err := hasConversation(p); err != nil {
		return err
	}
	conv := p.Conv
	if *last {
		c := *conv // a shallow copy: the package's conversation is not changed
		c.Items = lastTurn(c.Items)
		conv = &c
	}
	changes := turnChanges(pkg)
	if *asJSON {
		if len(changes) > 0 {
			c := *conv // a shallow copy, its notices given their change sets
			c.Items = withChanges(c.Items, changes)
			conv = &c
		}
		data, err := conv.Encode()
		if err != nil {
			return fmt.Errorf("encode conversation of %s: %w", pkg, err)
		}
		if w, ok := lastCLISession(p.Conv.Identity()); ok && !*last && len(data) > 1 && data[0] == '{' {
			// The way back, before the conversation's own fields.
			head, err := json.Marshal(map[string]any{"lastCLISession": w})
			if err != nil {
				return err
			}
			if string(data) == "{}" {
				data = head
			} else {
				data = append(append(head[:len(head)-1:len(head)-1], ','), data[1:]...)
			}
		}
		_, err = fmt.Fprintf(st.out, "%s\n", data)
		return err
	}
	if err := writeItemsWith(st.out, conv.Items, changes); err != nil {
		return err
	}
	if line := continueLine(p.Conv.Identity()); line != "" && !*last {
		_, err = fmt.Fprintf(st.out, "\n%s", line)
		return err
	}
	return nil
}

// hasConversation fails when the package holds no saved conversation (no
// agent/conversation.json, or a kind that keeps none), rather than showing
// nothing. An unreadable conversation is one: it shows as its notice.
func hasConversation(p *archive.Package) error {
	if p.Unreadable != "" {
		return nil
	}
	if p.Kind != archive.KindDocument {
		return fmt.Errorf("%s %w: a %s keeps none", p.Dir, errNoConversation, p.Kind)
	}
	_, err := os.Lstat(filepath.Join(p.Dir, archive.AgentDir, archive.ConversationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %w (no %s/%s)", p.Dir, errNoConversation, archive.AgentDir, archive.ConversationFile)
	}
	return nil
}

// lastTurn returns the items from the last user item to the end, or all of
// them when there is no user item.
func lastTurn(items []archive.Item) []archive.Item {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type() == archive.TypeUser {
			return items[i:]
		}
	}
	return items
}

// writeItemsWith writes the items as readable text, blocks separated by a
// blank line, each change notice followed by its files, from changes (by
// the notice's id).
func writeItemsWith(w io.Writer, items []archive.Item, changes map[string]checkpoint.Entry) error {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(itemText(it))
		b.WriteByte('\n')
		if e, ok := changes[it.ID()]; ok {
			writeChanges(&b, e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// itemText is one item as readable text. Empty parts are left out with their
// punctuation.
func itemText(it archive.Item) string {
	switch it.Type() {
	case archive.TypeUser:
		s := "User: " + it.String("text")
		if it.Bool("hasImage") {
			s += " [image]"
		}
		return s
	case archive.TypeAssistant:
		return "Assistant: " + it.String("text")
	case archive.TypeThinking:
		return "Thinking: " + it.String("text")
	case archive.TypeTool:
		s := named("Tool", it.String("name"), it.String("summary"))
		if t := it.String("statusText"); t != "" {
			s += " (" + t + ")"
		}
		if t := it.String("status"); t != "" {
			s += " [" + t + "]"
		}
		return s
	case archive.TypeNotice:
		return "Notice: " + it.String("text")
	case archive.TypeFailure:
		s := "Failure: " + it.String("text")
		if d := it.String("detail"); d != "" {
			s += "\n  " + strings.ReplaceAll(strings.TrimRight(d, "\n"), "\n", "\n  ")
		}
		return s
	case archive.TypeQuestions:
		return "Questions: " + strings.Join(questions(it), " ")
	case archive.TypeDirections:
		return "Plan: " + it.String("text")
	case archive.TypeToolApproval:
		return named("Approval", it.String("name"), it.String("summary"))
	case archive.TypeWebSearch:
		return "Web search: " + it.String("query")
	default:
		return "[" + it.Type() + "]"
	}
}

// named is "<label> <name>: <summary>", leaving out an empty name or summary
// and its punctuation.
func named(label, name, summary string) string {
	s := label
	if name != "" {
		s += " " + name
	}
	if summary != "" {
		s += ": " + summary
	}
	return s
}

// questions returns the text of each question a questions item asks.
func questions(it archive.Item) []string {
	list, _ := it.Get("questions").([]any)
	var out []string
	for _, q := range list {
		m, _ := q.(map[string]any)
		if s, _ := m["question"].(string); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// turnChanges are the change sets of the package's checkpoints by the id
// of the notice that ends their turn; none when it has no checkpoints.
func turnChanges(pkg string) map[string]checkpoint.Entry {
	st, err := checkpoint.Open(pkg, checkpoint.Policy{})
	if err != nil {
		return nil
	}
	entries, err := st.Entries()
	if err != nil {
		return nil
	}
	out := make(map[string]checkpoint.Entry, len(entries))
	for _, e := range entries {
		if e.Kind == checkpoint.EntryTurn {
			out[e.Key] = e
		}
	}
	return out
}

// withChanges is items with each change notice a copy carrying its
// change set as "changes".
func withChanges(items []archive.Item, changes map[string]checkpoint.Entry) []archive.Item {
	out := make([]archive.Item, len(items))
	for i, it := range items {
		if e, ok := changes[it.ID()]; ok {
			it = it.Clone()
			it.Set("changes", checkpoint.ChangeSet{Files: e.Files, Skipped: e.Skipped}.Value())
		}
		out[i] = it
	}
	return out
}

// writeChanges writes a turn's files, one a line: "  modified notes.txt
// +2 −1".
func writeChanges(b *strings.Builder, e checkpoint.Entry) {
	for _, f := range e.Files {
		fmt.Fprintf(b, "  %s %s", f.Change, checkpoint.Display(f.Path))
		switch {
		case f.Binary:
			b.WriteString(" (binary)")
		case (f.Before != nil && f.Before.Link != "") || (f.After != nil && f.After.Link != ""):
			b.WriteString(" (link)")
		default:
			fmt.Fprintf(b, " +%d −%d", f.Added, f.Removed)
		}
		b.WriteByte('\n')
	}
	for _, s := range e.Skipped {
		fmt.Fprintf(b, "  not kept %s (%s)\n", checkpoint.Display(s.Path), s.Reason)
	}
}
