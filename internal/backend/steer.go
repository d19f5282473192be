package backend

import (
	"context"
	"errors"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

// Steerer is a Backend that can take a message into the turn it is
// running (steering): the user typed while the agent works. The session
// is its only caller (session.Steer), from any goroutine while Turn runs.
type Steerer interface {
	// Steer hands msg to the running turn. When it returns nil the CLI
	// takes the message in this turn: the turn does not end before the
	// CLI took it, and the turn's history (TurnEnd.History) holds it as a
	// user message where the CLI took it. Otherwise nothing was sent: an
	// error matching ErrNoTurn when no turn runs or the running one is
	// ending, one matching ErrCannotSteer when the running turn cannot take
	// a message (its error says why), else why the CLI refused it.
	Steer(msg Message) error
	// Untaken returns, and forgets, the messages Steer accepted that the
	// last turn's CLI never took (an interrupt came first and the CLI
	// dropped them): the session hands them back. Called after Turn.
	Untaken() []Message
}

// ErrNoTurn is matched by Steer's error when no turn runs, or the
// running one ended before it could take the message.
var ErrNoTurn = errors.New("no turn is running")

// ErrCannotSteer is matched by Steer's error when the running turn cannot
// take a message (codex exec's turns, a review or a compaction).
var ErrCannotSteer = errors.New("the running turn cannot take a message")

// SteeredItem is the user item of msg, a message the running turn took
// (Steer), named by newID when it is set: the backend reports it to the
// turn's host where the CLI took the message.
func SteeredItem(newID itemmap.IDFunc, msg Message) archive.Item {
	it := newItem(archive.TypeUser, newID, msg.Text)
	if len(msg.Images) > 0 {
		it.Set("hasImage", true)
	}
	return it
}

// SteeredMessage is msg as the turn's history holds it: a user message of
// its text and images. An image that cannot be stored is left out.
func SteeredMessage(msg Message) archive.Message {
	m := archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(msg.Text)}}
	for _, img := range msg.Images {
		if b, err := archive.NewImageBlock(img.MimeType, img.Data); err == nil {
			m.Content = append(m.Content, b)
		}
	}
	return m
}

// Rewinder is a Backend whose CLI can drop the last turns from the CLI
// session it holds, so that the next turn's request holds none of them
// (the conversation was rewound: session.RewindConversation). The session
// is its only caller, between turns.
type Rewinder interface {
	// Rewind drops the last n turns this backend ran (its last n calls of
	// Turn that reached the CLI) from its CLI's session. An error means
	// the CLI's context is as it was, or not known: the session then
	// starts a fresh CLI session told the conversation so far.
	Rewind(ctx context.Context, n int) error
}
