package wire

import (
	"time"
	"unicode/utf8"

	"spbridge/internal/catalog"
	"spbridge/internal/search"
)

// SessionInfo is one session of session/list's answer: its id, folder,
// last change, title and additional folders, and spbridge's _meta
// (listMeta).
func SessionInfo(e catalog.Entry) map[string]any {
	info := map[string]any{"sessionId": e.ID, "cwd": e.Cwd, "updatedAt": e.UpdatedAt.UTC().Format(time.RFC3339)}
	if e.Title != "" {
		info["title"] = e.Title
	}
	if len(e.Dirs) > 0 {
		info["additionalDirectories"] = e.Dirs
	}
	info["_meta"] = map[string]any{"spbridge": listMeta(e)}
	return info
}

// listMeta is an entry's _meta.spbridge: a package's path, the CLI
// session it was imported from and the one it last ran on (and how a
// terminal continues that one while that CLI still has it); a CLI's own
// session's CLI and id, and how a terminal continues it.
func listMeta(e catalog.Entry) map[string]any {
	meta := map[string]any{}
	if e.Package != "" {
		meta["package"] = e.Package
	}
	if e.From != nil {
		meta["backend"], meta["cliSession"] = e.From.CLI, e.From.ID
		if e.Package == "" {
			if c := e.From.Continue(); c != "" {
				meta["continueCommand"] = c
			}
		}
	}
	if e.Snippets != nil {
		snips := []any{}
		for _, sn := range e.Snippets {
			snips = append(snips, Snippet(sn))
		}
		meta["snippets"] = snips
	}
	if c := e.LastRan; c != nil {
		last := map[string]any{"backend": c.CLI, "id": c.ID}
		if cmd := c.Continue(); cmd != "" {
			last["continueCommand"] = cmd
		}
		meta["lastCLISession"] = last
	}
	return meta
}

// Snippet is a line a search matched: where it is ("User", "Tool
// Bash"…), its text, and the words found as [start, end) offsets in
// characters (code points) of the text.
func Snippet(s search.Snippet) map[string]any {
	matches := []any{}
	for _, m := range s.Matches {
		a := utf8.RuneCountInString(s.Text[:m[0]])
		matches = append(matches, []int{a, a + utf8.RuneCountInString(s.Text[m[0]:m[1]])})
	}
	return map[string]any{"where": s.Label, "text": s.Text, "matches": matches}
}
