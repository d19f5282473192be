package session

import (
	"errors"
	"fmt"
	"strings"

	"spbridge/internal/backend"
)

// Steering: a message the user sends while the agent works, for the
// running turn to take (Steer). The session decides what becomes of it,
// once, for every front end; the backend (backend.Steerer) only hands it
// to its CLI, and reports it, where the CLI took it, as a user item of the
// turn and a user message of the turn's history: so it is saved, audited
// and shown again in its place like the rest of the turn.

// SteerOutcome is what became of a steered message.
type SteerOutcome int

const (
	// SteerInjected: the running turn took it; the turn does not end
	// before its CLI did.
	SteerInjected SteerOutcome = iota + 1
	// SteerStarted: no turn was running, or the running one ended before
	// it could take the message: the message is the next turn's, as
	// Prompt (SteerResult.Queued when it waits for a turn that is ending).
	SteerStarted
	// SteerQueued: the running turn cannot take a message
	// (SteerResult.Reason says why): it is queued behind it, as Queue.
	SteerQueued
	// SteerHandedBack: as SteerStarted, but the caller asked for the
	// message back (HandBack): nothing was taken, and the caller sends it
	// as a prompt of its own.
	SteerHandedBack
)

func (o SteerOutcome) String() string {
	switch o {
	case SteerInjected:
		return "injected"
	case SteerStarted:
		return "startedNewTurn"
	case SteerQueued:
		return "queued"
	case SteerHandedBack:
		return "handedBack"
	}
	return fmt.Sprintf("SteerOutcome(%d)", int(o))
}

// SteerResult is Steer's answer.
type SteerResult struct {
	Outcome SteerOutcome
	// Reason says why a message was queued (the turn cannot take one) or
	// handed back (no turn was running).
	Reason string
	// Queued, with SteerStarted, says that the message waits behind a
	// turn that is ending, and begins the turn after it.
	Queued bool
}

// MaxSteerBytes is the most text a steered message may hold: a longer one
// is refused (ErrSteerTooLong), to be sent as a prompt.
const MaxSteerBytes = 256 << 10

// ErrSteerEmpty is Steer's error for a message with no text and no image.
var ErrSteerEmpty = errors.New("the message is empty")

// ErrSteerTooLong is matched by Steer's error for a message over
// MaxSteerBytes.
var ErrSteerTooLong = errors.New("the message is too long to steer the turn")

// NoRunningTurn is the Reason of a message handed back because no turn
// was running (or it ended before it could take the message).
const NoRunningTurn = "noRunningTurn"

// SteerOptions say what Steer does when no turn can take the message.
type SteerOptions struct {
	// HandBack: with no running turn, hand the message back
	// (SteerHandedBack) rather than start a turn with it.
	HandBack bool
}

// Steer hands r to the running turn, which takes it in (SteerInjected)
// when its backend can (backend.Steerer). A running turn that cannot take
// a message (its backend, a kind of turn its CLI cannot steer) gets it
// queued behind it (SteerQueued, as Queue). With no turn running, or one
// that ended, is ending or was cancelled before it could take it, the
// message starts the next turn (SteerStarted, as Prompt) or, with
// opts.HandBack, is handed back untouched (SteerHandedBack). A message is
// never both taken and started or queued, and never dropped: each error
// means nothing was taken. Empty (ErrSteerEmpty) and too long
// (ErrSteerTooLong) messages are refused, as is any message after Stop or
// Close (ErrClosed).
//
// A turn run by Send (whose caller waits for it: spbridge run) has no queue
// of the session's behind it: a message it cannot take, or that comes as
// it ends, is handed back (SteerHandedBack, with the reason) for the
// caller to send as its next turn.
func (s *Session) Steer(front Front, r Request, opts SteerOptions) (SteerResult, error) {
	if strings.TrimSpace(r.Text) == "" && len(r.Images) == 0 {
		return SteerResult{}, ErrSteerEmpty
	}
	if len(r.Text) > MaxSteerBytes {
		return SteerResult{}, fmt.Errorf("%w: %d bytes, at most %d", ErrSteerTooLong, len(r.Text), MaxSteerBytes)
	}
	s.mu.Lock()
	if s.stopping || s.closed {
		s.mu.Unlock()
		return SteerResult{}, ErrClosed
	}
	t, be := s.turn, s.be
	// A turn of Send's: its caller waits for it, and the session keeps no
	// queue behind it.
	own := t == nil && s.running
	running := own || (t != nil && !t.ending && t.ctx.Err() == nil)
	s.mu.Unlock()
	if running {
		st, ok := be.(backend.Steerer)
		if !ok {
			why := be.Name() + " cannot take a message into a running turn"
			if own {
				return SteerResult{Outcome: SteerHandedBack, Reason: why}, nil
			}
			return s.steerQueued(front, r, why)
		}
		// No lock of the session is held: the backend writes to its CLI.
		err := st.Steer(backend.Message{Text: r.Text, Images: r.Images})
		switch {
		case err == nil:
			return SteerResult{Outcome: SteerInjected}, nil
		case errors.Is(err, backend.ErrCannotSteer) && own:
			return SteerResult{Outcome: SteerHandedBack, Reason: err.Error()}, nil
		case errors.Is(err, backend.ErrCannotSteer):
			return s.steerQueued(front, r, err.Error())
		case !errors.Is(err, backend.ErrNoTurn):
			return SteerResult{}, err
		}
		// The turn ended (or has not reached its CLI yet): the message is
		// the next turn's.
	}
	if opts.HandBack || own {
		return SteerResult{Outcome: SteerHandedBack, Reason: NoRunningTurn}, nil
	}
	queued, err := s.Prompt(front, r)
	if err != nil {
		return SteerResult{}, err
	}
	return SteerResult{Outcome: SteerStarted, Queued: queued}, nil
}

// steerQueued queues r behind the running turn, which cannot take it.
func (s *Session) steerQueued(front Front, r Request, why string) (SteerResult, error) {
	queued, err := s.Queue(front, r)
	if err != nil {
		return SteerResult{}, err
	}
	if !queued {
		// The turn ended meanwhile: r began the next one.
		return SteerResult{Outcome: SteerStarted}, nil
	}
	return SteerResult{Outcome: SteerQueued, Reason: why}, nil
}
