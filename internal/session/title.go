package session

import (
	"path/filepath"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/sessionindex"
)

// Title is the title of a conversation whose items are items, in the
// package dir: its first message, as the sessions index titles it
// (sessionindex.Title), else, for a first message of images only, the
// package's name; "" before the first message.
func Title(items []archive.Item, dir string) string {
	for _, it := range items {
		if it.Type() != archive.TypeUser {
			continue
		}
		if t := sessionindex.Title(it.String("text")); t != "" {
			return t
		}
		return filepath.Base(dir)
	}
	return ""
}

// nameSessions has be name the CLI sessions it starts from now on after
// the conversation (backend.Titler): a CLI's own list of its sessions
// then shows the conversation, and not the "# Conversation so far" a
// session told what was said before begins with.
func nameSessions(be backend.Backend, title string) {
	if t, ok := be.(backend.Titler); ok {
		t.SetTitle(title)
	}
}
