// Package clis is the one table of the coding-agent CLIs spbridge drives:
// each one's name (as --backend and a session's _meta say it), how it is
// shown, its provider in format 1, how a session's backend is made, its
// program, its log-in status, log-in and log-out, and the mapper of its
// recorded stream. The command line and the editor protocol read it;
// nothing else names the CLIs.
package clis

import (
	"context"
	"slices"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/codex"
	"spbridge/internal/itemmap"
)

// Settings are what a session's backend is made with: the options every
// CLI takes, and Codex's own.
type Settings struct {
	backend.Options
	CodexHome string // Codex: its home folder, "" for CODEX_HOME or ~/.codex
	Transport string // Codex: codex.TransportAppServer or codex.TransportExec
}

// A CLI is one coding-agent CLI.
type CLI struct {
	Name     string // "claude", "codex"
	Display  string // "Claude Code", "the Codex CLI"
	Provider string // format 1's provider
	// New makes a session's backend.
	New func(Settings) backend.Backend
	// Program finds the CLI's program (its variable, else PATH).
	Program func() (string, error)
	// LoginArgs are the arguments of the CLI's own log-in.
	LoginArgs []string
	// AuthStatus says whether the CLI is logged in, and how.
	AuthStatus func(context.Context) (backend.AuthStatus, error)
	// Logout makes the CLI forget the log-in it stored.
	Logout func(context.Context) error
	// Mapper maps the CLI's recorded stream (of transport, for Codex).
	Mapper func(newID itemmap.IDFunc, transport string) itemmap.Mapper
	// Models are the model choices offered before the CLI gave its own.
	Models []string
}

// LoginMethod is the id of the CLI's log-in method in the editor
// protocol ("claude-login").
func (c CLI) LoginMethod() string { return c.Name + "-login" }

// All are the CLIs, in the order they are offered.
var All = []CLI{
	{
		Name: "claude", Display: "Claude Code", Provider: claude.Provider,
		New:        func(s Settings) backend.Backend { return claude.New(s.Options) },
		Program:    func() (string, error) { return claude.Program("") },
		LoginArgs:  claude.LoginArgs,
		AuthStatus: func(ctx context.Context) (backend.AuthStatus, error) { return claude.AuthStatus(ctx, "", nil) },
		Logout:     func(ctx context.Context) error { return claude.Logout(ctx, "", nil) },
		Mapper:     func(newID itemmap.IDFunc, _ string) itemmap.Mapper { return itemmap.NewClaude(newID) },
		Models:     []string{"default", "sonnet", "opus", "haiku"},
	},
	{
		Name: "codex", Display: "the Codex CLI", Provider: codex.Provider,
		New: func(s Settings) backend.Backend {
			return codex.New(codex.Options{Options: s.Options, CodexHome: s.CodexHome, Transport: s.Transport})
		},
		Program:    func() (string, error) { return codex.Program("") },
		LoginArgs:  codex.LoginArgs,
		AuthStatus: func(ctx context.Context) (backend.AuthStatus, error) { return codex.AuthStatus(ctx, "", nil) },
		Logout:     func(ctx context.Context) error { return codex.Logout(ctx, "", nil) },
		Mapper: func(newID itemmap.IDFunc, transport string) itemmap.Mapper {
			if transport == codex.TransportAppServer {
				return itemmap.NewCodexApp(newID)
			}
			return itemmap.NewCodex(newID)
		},
		Models: []string{"default"},
	},
}

// Lookup is the CLI named name.
func Lookup(name string) (CLI, bool) {
	i := slices.IndexFunc(All, func(c CLI) bool { return c.Name == name })
	if i < 0 {
		return CLI{}, false
	}
	return All[i], true
}

// Names are the CLIs' names, in order.
func Names() []string {
	var names []string
	for _, c := range All {
		names = append(names, c.Name)
	}
	return names
}

// Choices says the names as a usage message wants them: "claude or
// codex".
func Choices() string {
	names := Names()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
