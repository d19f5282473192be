package backend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// A Plugin is one coding-agent CLI as spbridge knows it: everything the
// command line, the editor protocol and the session need of it, so that
// nothing outside the CLI's own package names it. Each CLI's package
// exports its Plugin (claude.Plugin, codex.Plugin); internal/clis lists
// them.
type Plugin struct {
	Name     string // as --backend, a session's _meta and the audit log say it
	Display  string // as the user knows it, in running text
	Provider string // format 1's provider
	// Settings are the CLI's own settings, beyond Options: what New and
	// Mapper take (the command line offers each as --NAME-SETTING).
	Settings []Setting
	// New makes a session's backend from the options every CLI takes
	// and the CLI's own settings (checked by Own first).
	New func(opts Options, own map[string]string) Backend
	// Program finds the CLI's program (its variable, else PATH).
	Program func() (string, error)
	// LoginArgs are the arguments of the CLI's own log-in.
	LoginArgs []string
	// AuthStatus says whether the CLI is logged in, and how.
	AuthStatus func(context.Context) (AuthStatus, error)
	// Logout makes the CLI forget the log-in it stored.
	Logout func(context.Context) error
	// StreamSettings are the settings of a recorded stream of the CLI
	// (replay's --NAME-SETTING), what Mapper takes.
	StreamSettings []Setting
	// Mapper maps the CLI's recorded stream, as the CLI wrote it with
	// the stream settings own.
	Mapper func(newID itemmap.IDFunc, own map[string]string) itemmap.Mapper
	// Models are the model choices offered before the CLI gave its own.
	Models []string
	// NotLoggedIn reports whether a turn's failure (its failure item's
	// text) is the CLI's missing or refused credentials, so that the
	// editor offers its log-in.
	NotLoggedIn func(failure string) bool
	// Continue is the command that continues the CLI's session id in a
	// terminal, in its folder.
	Continue func(id string) string
	// Trust is what trust weighs of it: its own record of the folders
	// it trusts, and what in a folder it would apply.
	Trust trust.CLI
	// Tools is its tool vocabulary: which of its tools' names are
	// commands, edits, reads and file changes, and their kinds.
	Tools Tools
	// History is the CLI's own store of past sessions: where they are,
	// how one is listed, told and imported (internal/history).
	History history.Store
}

// A Setting is one of a CLI's own settings.
type Setting struct {
	Name    string   // "transport": the command line's --NAME-SETTING (--codex-transport)
	Usage   string   // what it means, as a flag's usage says it
	Values  []string // the values it takes, in the order offered; nil: any
	Default string   // its value when not given
	Serve   bool     // serve takes it too (for each of its sessions); else only run does
}

// LoginMethod is the id of the CLI's log-in method in the editor
// protocol ("NAME-login").
func (p Plugin) LoginMethod() string { return p.Name + "-login" }

// Flag is the command line's name of the CLI's setting s: NAME-SETTING.
func (p Plugin) Flag(s Setting) string { return p.Name + "-" + s.Name }

// Own checks the CLI's own settings own, each one it declares and a value
// it takes, and returns them with the defaults of those not given.
func (p Plugin) Own(own map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range p.Settings {
		out[s.Name] = s.Default
	}
	for name, v := range own {
		i := slices.IndexFunc(p.Settings, func(s Setting) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%s has no setting %q", p.Name, name)
		}
		if err := p.Settings[i].Check(p.Name, v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// Check refuses a value v of cli's setting s that s does not take.
func (s Setting) Check(cli, v string) error {
	if s.Values != nil && !slices.Contains(s.Values, v) {
		return fmt.Errorf("unknown %s %s %q (want %s)", cli, s.Name, v, Choices(s.Values))
	}
	return nil
}

// Choices says names as a usage message wants them: "a, b or c".
func Choices(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
