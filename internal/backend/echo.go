package backend

import (
	"strings"

	"spbridge/internal/cliproc"
)

// maxEchoes is how many messages with a Context Echoes keeps: one a backend
// switch or reopen, and a CLI's stderr tail reaches back only so far.
const maxEchoes = 4

// Echoes are the messages with a Context (the "# Conversation so far"
// prefix) that a backend sent its CLI, so that their text can be cut out of
// what the CLI writes on stderr before that is shown or stored. The zero value is
// empty; it is a value, copied whole.
type Echoes struct{ sent [maxEchoes]string }

// Add records what the CLI receives for msg when msg has a Context.
func (e *Echoes) Add(msg Message) {
	if msg.Context == "" {
		return
	}
	copy(e.sent[:], e.sent[1:])
	e.sent[maxEchoes-1] = msg.CLIText()
}

// Clean makes a CLI's stderr tail fit to show and store: valid UTF-8,
// trimmed, every run of a message with a Context it echoes cut out
// (cliproc.CutEcho), and credentials masked (cliproc.MaskCredentials).
func (e Echoes) Clean(stderr string) string {
	s := strings.ToValidUTF8(strings.TrimSpace(stderr), "\uFFFD")
	for _, sent := range e.sent {
		if sent != "" {
			s = cliproc.CutEcho(s, sent)
		}
	}
	return cliproc.MaskCredentials(s)
}
