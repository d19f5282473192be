// Package clis is the list of the coding-agent CLIs spbridge drives: each
// one's row (a backend.Plugin, exported by its own package) in the order
// they are offered, the first being the default, and what is read across
// the rows (their names, stores of past sessions, what trust weighs, a
// tool's kind). The command line and the editor protocol read it; a new
// CLI is one more line here.
package clis

import (
	"maps"
	"slices"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/codex"
	"spbridge/internal/history"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// All are the CLIs, in the order they are offered.
var All = []backend.Plugin{
	claude.Plugin,
	codex.Plugin,
}

// Default is the name of the CLI of a session that names none: the first.
func Default() string { return All[0].Name }

// Lookup is the CLI named name.
func Lookup(name string) (backend.Plugin, bool) {
	i := slices.IndexFunc(All, func(c backend.Plugin) bool { return c.Name == name })
	if i < 0 {
		return backend.Plugin{}, false
	}
	return All[i], true
}

// Stores are the CLIs' stores of past sessions, in order: what
// history.Options and history.ImportOptions read.
func Stores() []history.Store {
	var out []history.Store
	for _, c := range All {
		out = append(out, c.History)
	}
	return out
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
func Choices() string { return backend.Choices(Names()) }

// ToolKind is the kind of the tool called name as the CLIs' vocabularies
// say it (itemmap's Kind constants), itemmap.KindOther when none does. A
// conversation may hold the tools of more than one CLI; no two CLIs give
// one name different kinds.
func ToolKind(name string) string {
	if k, ok := kinds[name]; ok {
		return k
	}
	return itemmap.KindOther
}

// kinds are the kinds of every CLI's tools, the first CLI's where two
// name one tool (made once: a tool update asks for each).
var kinds = kindsOf(All)

func kindsOf(all []backend.Plugin) map[string]string {
	m := map[string]string{}
	for i := len(all) - 1; i >= 0; i-- {
		maps.Copy(m, all[i].Tools.Kinds)
	}
	return m
}

// Register adds cli to the list, last, until undo is called: for a test
// that runs a CLI of its own through the command line or the editor
// protocol (TestThirdCLI). Nothing may read the list meanwhile.
func Register(cli backend.Plugin) (undo func()) {
	before, beforeKinds := All, kinds
	All = append(slices.Clip(All), cli)
	kinds = kindsOf(All)
	return func() { All, kinds = before, beforeKinds }
}

// Trust is what trust weighs of each CLI, in order.
func Trust() []trust.CLI {
	var out []trust.CLI
	for _, c := range All {
		out = append(out, c.Trust)
	}
	return out
}

// SummaryFile reports whether the tool called name is, for a CLI, one
// whose item's summary is the one file it reads or changes.
func SummaryFile(name string) bool {
	return slices.ContainsFunc(All, func(c backend.Plugin) bool { return slices.Contains(c.Tools.SummaryFiles, name) })
}
