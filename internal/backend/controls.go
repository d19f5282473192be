package backend

import (
	"context"
	"errors"
)

// Mode is one of the modes a backend offers: how much its CLI may do
// without asking. ID is what SetMode takes.
type Mode struct {
	ID          string
	Name        string
	Description string
}

// Command is a slash command the CLI offers: a prompt that starts with
// "/"+Name runs it. InputHint says what may follow the name ("" for
// nothing).
type Command struct {
	Name        string
	Description string
	InputHint   string
}

// Events are told what a backend's CLI changes besides the conversation's
// items. Each func may be nil. They are called from the goroutine that runs
// Turn, Prepare or SetMode, and must neither block long nor call back into
// the backend.
type Events struct {
	// ModeChanged is called when the CLI reports another mode than the one
	// it had, on its own (Claude Code leaves plan mode when ExitPlanMode is
	// approved) or after SetMode; id is one of Modes.
	ModeChanged func(id string)
	// CommandsChanged is called when the list of commands changes (the CLI
	// started and said which it has).
	CommandsChanged func([]Command)
}

// Controls are what a backend offers besides turns: modes, commands and
// an early start. Both CLI backends implement it.
type Controls interface {
	// Modes lists the modes the backend offers, in the order to show them.
	Modes() []Mode
	// Mode returns the current mode's id.
	Mode() string
	// SetMode switches to mode id; see each backend for when it applies.
	// An id not among Modes is ErrUnknownMode; the CLI's refusal is
	// ErrModeRefused.
	SetMode(ctx context.Context, id string) error
	// Commands lists the slash commands, as known now: before the CLI
	// started, those that need no CLI to list them.
	Commands() []Command
	// Prepare starts the CLI ahead of the first turn, where the backend
	// has a long-lived one, so that Commands lists what it says it has; it
	// returns when the CLI answered, or ctx ends. It does nothing when the
	// CLI runs or the backend starts one a turn.
	Prepare(ctx context.Context) error
}

// Errors of Controls.
var (
	ErrUnknownMode = errors.New("unknown mode")
	ErrModeRefused = errors.New("the CLI refused the mode")
)
