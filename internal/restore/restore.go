// Package restore decides what a CLI is told when a conversation was
// reopened: the CLI's own session cannot be resumed after a reopen, so the
// first turn of a new session opens with the "# Conversation so far" prefix,
// which the session hands its backend as the message's Context
// (backend.Message), apart from the user's words.
package restore

import (
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/transcript"
)

// Heading opens the prefix.
const Heading = "# Conversation so far\n"

// Closing ends the prefix: the user's own words follow it. It lets a CLI
// session spbridge began with the prefix be read back without it (Split).
const Closing = "\n\n# New message\n\n"

// Split is the user's own words of a message a CLI got (text): false when
// it does not begin with the prefix. A prefix written before Closing was
// (ended by a blank line alone) is taken to end at the text's last blank
// line: the user's words are the last paragraph.
func Split(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, Heading)
	if !ok {
		return text, false
	}
	if _, words, ok := strings.Cut(rest, Closing); ok {
		return words, true
	}
	if i := strings.LastIndex(rest, "\n\n"); i >= 0 {
		return rest[i+2:], true
	}
	return "", true
}

// Prefix returns the prefix for a conversation whose items are items and
// history is history: the heading, the last transcript.TailLength characters
// of their transcript (an image dropped from the saved conversation reads as
// archive.ImageOmittedText, one kept as [image]) and Closing; "" when
// the transcript is empty. Only the items after the last reset of the CLI's
// context (archive.LastReset: Claude Code's /clear) are told: what came
// before it was no longer the CLI's context when the conversation was left.
func Prefix(items []archive.Item, history []archive.Message) string {
	text := transcript.TextFrom(items, history, archive.LastReset(items)+1)
	if text == "" {
		return ""
	}
	return Heading + transcript.Tail(text, transcript.TailLength) + Closing
}

// State follows one open of a conversation. The zero State is a
// conversation that was not restored. It is not safe for concurrent use.
type State struct {
	earlier     []archive.Item // what the new session must be told about
	pending     bool           // the prefix is still owed
	established string         // the backend a CLI session was established with
}

// Restored returns the state of a conversation restored from disk with
// items: the prefix is owed until a CLI session is established.
func Restored(items []archive.Item) *State {
	return &State{earlier: items, pending: len(items) > 0}
}

// Context returns what the CLI is told before the user's words in a turn on
// backend (backend.Message.Context), given the conversation's items and
// history before the turn (the history tells which of the users' images were
// omitted): the prefix while it is owed, else "". Switching to another
// backend than the one a session was established with owes it again, told
// about every item so far. The result goes to the CLI only: never into the
// items, the history or a log.
func (s *State) Context(backend string, items []archive.Item, history []archive.Message) string {
	if s.established != "" && s.established != backend {
		// Like a reopen: the new CLI knows nothing of this conversation.
		s.earlier, s.pending, s.established = items, len(items) > 0, ""
	}
	if !s.pending {
		return ""
	}
	return Prefix(s.earlier, history)
}

// Pending reports whether the prefix is still owed: no CLI session holds
// the conversation yet.
func (s *State) Pending() bool { return s.pending || s.established == "" }

// Established records that a turn on backend reached its CLI and the CLI
// established its session: later turns send the usual message. A turn that
// failed before the CLI took it must not call it.
func (s *State) Established(backend string) {
	s.pending = false
	s.established = backend
}
