package backend

import (
	"context"
	"errors"
	"slices"
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

// Model is one of the models a backend's CLI offers. ID is what SetModel
// takes ("default": the CLI's own choice). Efforts are the reasoning
// efforts it takes, in the CLI's order, none when it takes none;
// DefaultEffort is the one it runs with when none is chosen ("" when the
// CLI does not say).
type Model struct {
	ID            string
	Name          string
	Description   string
	Efforts       []string
	DefaultEffort string
	// Switches are the on/off settings the model takes (Codex's fast
	// service tier), none when it takes none.
	Switches []Switch
}

// Switch is an on/off setting of a CLI's model: ID is what
// Switcher.SetSwitch takes, Default whether it is on when not chosen.
type Switch struct {
	ID          string
	Name        string
	Description string
	Default     bool
}

// Switcher is a backend with on/off settings (Model.Switches).
type Switcher interface {
	// SetSwitch turns the setting id on or off for the next turns; see
	// each backend for when it applies. The backend does not check it
	// against the model's Switches: the model may change.
	SetSwitch(id string, on bool)
}

// EqualModels reports whether two lists of models are the same.
func EqualModels(a, b []Model) bool {
	return slices.EqualFunc(a, b, func(x, y Model) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Description == y.Description &&
			slices.Equal(x.Efforts, y.Efforts) && x.DefaultEffort == y.DefaultEffort && slices.Equal(x.Switches, y.Switches)
	})
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
	// ModelsChanged is called when the list of models changes (the CLI
	// started and said which it offers).
	ModelsChanged func([]Model)
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
	// Models lists the models the CLI offers, as known now: before the
	// CLI said, a static list.
	Models() []Model
	// Effort returns the reasoning effort chosen for the next turns, ""
	// for the CLI's own.
	Effort() string
	// SetEffort chooses the reasoning effort of the next turns ("" for the
	// CLI's own); see each backend for when it applies. The backend does
	// not check it against the model's Efforts: the model may change.
	SetEffort(effort string)
}

// Errors of Controls.
var (
	ErrUnknownMode = errors.New("unknown mode")
	ErrModeRefused = errors.New("the CLI refused the mode")
)
