package wire

import (
	"slices"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/session"
)

// This file holds a session's configuration as ACP shows it: its modes,
// models, reasoning effort, CLI and on/off settings (ACP's modes and
// configOptions), and the slash commands.

// Settings are what a session's configuration shows (session.Session
// has them).
type Settings interface {
	Models() ([]backend.Model, string)
	Efforts() ([]string, string)
	Modes() ([]backend.Mode, string)
	CLIs() []backend.Plugin
	CLI() string
	Switches() []session.SwitchState
	Commands() []backend.Command
}

// Config option ids.
const (
	OptionModel  = "model"
	OptionMode   = "mode"
	OptionEffort = "reasoning_effort"
	OptionCLI    = "cli"
)

// EffortDefault is the reasoning effort option's value for the CLI's own.
const EffortDefault = "default"

// ModeState is session/new's modes: the backend's modes and the current
// one; nil when the backend has none.
func ModeState(conv Settings) any {
	avail, current := modeEntries(conv, "id")
	if avail == nil {
		return nil
	}
	return map[string]any{"currentModeId": current, "availableModes": avail}
}

// modeEntries lists the backend's modes, each named by idKey ("id" for
// modes, "value" for a config option's options), with the current mode;
// nil without modes.
func modeEntries(conv Settings, idKey string) ([]any, string) {
	modes, current := conv.Modes()
	var entries []any
	for _, m := range modes {
		e := map[string]any{idKey: m.ID, "name": m.Name}
		if m.Description != "" {
			e["description"] = m.Description
		}
		entries = append(entries, e)
	}
	return entries, current
}

// CommandList is the available_commands_update's list: spbridge's own
// commands (own), then the CLI's (one of the same name as spbridge's is left
// out).
func CommandList(own []backend.Command, conv Settings) []any {
	seen := make(map[string]bool)
	list := []any{}
	for _, c := range slices.Concat(own, conv.Commands()) {
		if c.Name == "" || seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		desc := c.Description
		if desc == "" {
			desc = "/" + c.Name
		}
		e := map[string]any{"name": c.Name, "description": desc}
		if c.InputHint != "" {
			e["input"] = map[string]any{"hint": c.InputHint}
		}
		list = append(list, e)
	}
	return list
}

// ConfigOptions are the session's config options: the model, the
// reasoning effort where the current model takes one, and the mode.
func ConfigOptions(conv Settings, booleans bool) []any {
	list, current := conv.Models()
	var opts []any
	for _, m := range list {
		name := m.Name
		if m.ID == session.DefaultModel && (name == "" || name == session.DefaultModel) {
			name = "Default (the CLI's own choice)"
		}
		o := map[string]any{"value": m.ID, "name": name}
		if m.Description != "" {
			o["description"] = m.Description
		}
		opts = append(opts, o)
	}
	all := []any{map[string]any{"id": OptionModel, "name": "Model", "category": "model", "type": "select",
		"currentValue": current, "options": opts}}
	if levels, effort := conv.Efforts(); len(levels) > 0 {
		if effort == "" {
			effort = EffortDefault
		}
		eopts := []any{map[string]any{"value": EffortDefault, "name": "Default (the CLI's own choice)"}}
		for _, l := range levels {
			eopts = append(eopts, map[string]any{"value": l, "name": l})
		}
		all = append(all, map[string]any{"id": OptionEffort, "name": "Reasoning effort", "category": "thought_level",
			"type": "select", "currentValue": effort, "options": eopts})
	}
	if modes, current := modeEntries(conv, "value"); modes != nil {
		all = append(all, map[string]any{"id": OptionMode, "name": "Mode", "category": "mode", "type": "select",
			"currentValue": current, "options": modes})
	}
	if rows := conv.CLIs(); len(rows) > 1 {
		var copts []any
		for _, r := range rows {
			// A display name reads in a sentence ("the Codex CLI").
			name := strings.TrimPrefix(r.Display, "the ")
			copts = append(copts, map[string]any{"value": r.Name, "name": name})
		}
		all = append(all, map[string]any{"id": OptionCLI, "name": "CLI", "type": "select",
			"description":  "The CLI the next turns run on; a switch tells it the conversation so far",
			"currentValue": conv.CLI(), "options": copts})
	}
	return append(all, switchOptions(conv, booleans)...)
}

// switchOptions are the current model's on/off settings (Codex's fast
// service tier) as boolean config options (category model_config), for a
// client that advertised clientCapabilities.session.configOptions.boolean;
// nothing for another client, which keeps the select options it had.
func switchOptions(conv Settings, booleans bool) []any {
	if !booleans {
		return nil
	}
	var out []any
	for _, sw := range conv.Switches() {
		if slices.Contains(SelectOptions, sw.ID) {
			continue
		}
		o := map[string]any{"id": sw.ID, "name": sw.Name, "category": "model_config", "type": "boolean", "currentValue": sw.On}
		if sw.Description != "" {
			o["description"] = sw.Description
		}
		out = append(out, o)
	}
	return out
}

// SelectOptions are the ids of the select config options.
var SelectOptions = []string{OptionModel, OptionEffort, OptionMode, OptionCLI}
