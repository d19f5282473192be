package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/clis"
)

// This file holds the session's configuration as the editor sees it: its
// modes, models and reasoning effort (ACP's modes and configOptions), and
// the slash commands (spbridge's own and the CLI's).

// Own commands: a prompt that is exactly "/new" or "/save" runs spbridge's
// New Conversation or save instead of going to the CLI.
const (
	commandNew  = "new"
	commandSave = "save"
)

// ownCommands are spbridge's commands, listed before the CLI's.
var ownCommands = []backend.Command{
	{Name: commandNew, Description: "New Conversation: start over with a new CLI session (the document's conversation is cleared)"},
	{Name: commandSave, Description: "Save the conversation into the document now"},
}

// events are what the session's backend tells it besides items. They run
// on the backend's goroutines: they only send notifications.
func (ss *acpSession) events() backend.Events {
	return backend.Events{
		ModeChanged: func(id string) {
			ss.ctl.mu.Lock()
			changed := ss.ctl.mode != id
			ss.ctl.mode = id
			ss.ctl.mu.Unlock()
			if changed {
				ss.modeChanged()
			}
		},
		CommandsChanged: func(cmds []backend.Command) {
			ss.ctl.mu.Lock()
			ss.ctl.commands = slices.Clone(cmds)
			ss.ctl.mu.Unlock()
			ss.sendCommands()
		},
		ModelsChanged: func(list []backend.Model) {
			ss.ctl.mu.Lock()
			ss.ctl.models = slices.Clone(list)
			name, program := ss.ctl.listedBy, ss.ctl.program
			ss.ctl.mu.Unlock()
			if ss.ctl.modelsSeen != nil {
				ss.ctl.modelsOnce.Do(func() { close(ss.ctl.modelsSeen) })
			}
			ss.configChanged()
			if cache := ss.srv.cfg.Models; cache != nil && program != "" {
				// Kept for the next session's answer (a small file,
				// written once a CLI start).
				if err := cache.Store(name, program, list); err != nil {
					ss.srv.cfg.Log.Printf("session %s: keep the model list: %v", ss.id, err)
				}
			}
		},
	}
}

// modeChanged tells the client the session's mode changed.
func (ss *acpSession) modeChanged() {
	ss.ctl.mu.Lock()
	mode := ss.ctl.mode
	ss.ctl.mu.Unlock()
	ss.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": mode})
	ss.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": ss.configOptions()})
}

// modeState is session/new's modes: the backend's modes and the current
// one; nil when the backend has none.
func (ss *acpSession) modeState() any {
	avail, current := ss.modeEntries("id")
	if avail == nil {
		return nil
	}
	return map[string]any{"currentModeId": current, "availableModes": avail}
}

// modeOption is the mode as a config option, nil without modes.
func (ss *acpSession) modeOption() any {
	opts, current := ss.modeEntries("value")
	if opts == nil {
		return nil
	}
	return map[string]any{"id": "mode", "name": "Mode", "category": "mode", "type": "select",
		"currentValue": current, "options": opts}
}

// modeEntries lists the backend's modes, each named by idKey ("id" for
// modes, "value" for a config option's options), with the current mode;
// nil without modes.
func (ss *acpSession) modeEntries(idKey string) ([]any, string) {
	ss.ctl.mu.Lock()
	defer ss.ctl.mu.Unlock()
	if len(ss.ctl.modes) == 0 {
		return nil, ""
	}
	var entries []any
	for _, m := range ss.ctl.modes {
		e := map[string]any{idKey: m.ID, "name": m.Name}
		if m.Description != "" {
			e["description"] = m.Description
		}
		entries = append(entries, e)
	}
	return entries, ss.ctl.mode
}

// controls returns the session's backend's controls, nil when it has none.
func (ss *acpSession) controls() backend.Controls {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.conv == nil {
		return nil
	}
	c, _ := ss.conv.CurrentBackend().(backend.Controls)
	return c
}

// takeControls reads what the backend's controls offer at open.
func (ss *acpSession) takeControls(c backend.Controls) {
	if c == nil {
		return
	}
	modes, mode, cmds, models, effort := c.Modes(), c.Mode(), c.Commands(), c.Models(), c.Effort()
	ss.ctl.mu.Lock()
	ss.ctl.modes, ss.ctl.mode, ss.ctl.commands, ss.ctl.models, ss.ctl.effort = modes, mode, cmds, models, effort
	ss.ctl.mu.Unlock()
}

// setMode handles session/set_mode.
func (ss *acpSession) setMode(j *job) (any, error) {
	var p struct {
		ModeID string `json:"modeId"`
	}
	if err := decode(j.m.Params, &p); err != nil {
		return nil, err
	}
	if err := ss.switchMode(p.ModeID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// switchMode asks the backend for mode id; the backend's ModeChanged tells
// the client.
func (ss *acpSession) switchMode(id string) error {
	c := ss.controls()
	if c == nil {
		return rpcErrorf(CodeInvalidParams, "invalid params: this session has no modes")
	}
	err := c.SetMode(context.Background(), id)
	switch {
	case errors.Is(err, backend.ErrUnknownMode):
		return rpcErrorf(CodeInvalidParams, "invalid params: unknown mode %q", id)
	case err != nil:
		return rpcErrorf(CodeInternalError, "set mode %s: %v", id, err)
	}
	// A backend that fires no ModeChanged (the mode was already id) leaves
	// the session's mode as it is.
	ss.ctl.mu.Lock()
	changed := ss.ctl.mode != id
	ss.ctl.mode = id
	ss.ctl.mu.Unlock()
	if changed {
		ss.modeChanged()
	}
	return nil
}

// commandList is the available_commands_update's list: spbridge's own
// commands, then the CLI's (one of the same name as spbridge's is left
// out).
func (ss *acpSession) commandList() []any {
	ss.ctl.mu.Lock()
	cmds := slices.Concat(ownCommands, ss.ctl.commands)
	ss.ctl.mu.Unlock()
	seen := make(map[string]bool)
	list := []any{}
	for _, c := range cmds {
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

// sendCommands sends available_commands_update, once the client knows the
// session (its session/new or load was answered).
func (ss *acpSession) sendCommands() {
	ss.ctl.mu.Lock()
	announced := ss.ctl.announced
	ss.ctl.mu.Unlock()
	if !announced {
		return
	}
	ss.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": ss.commandList()})
}

// afterOpen runs once the client has the answer to the session's open: the
// commands known so far go out, and the CLI starts in the background so
// that its own commands follow.
func (ss *acpSession) afterOpen() {
	c := ss.controls()
	if c == nil {
		// A backend without controls (a test's) has no commands to run.
		return
	}
	ss.ctl.mu.Lock()
	ss.ctl.announced = true
	ss.ctl.mu.Unlock()
	ss.sendCommands()
	select {
	case <-ss.ctl.modelsSeen:
		// The CLI listed its models before the answer, which carried
		// them; a client that waits for the list hears of it too.
		ss.configChanged()
	default:
	}
	ss.prepare(c)
}

// modelsWait is how long an open's answer waits for a CLI that lists its
// models, when no list of its program is kept.
const modelsWait = 3 * time.Second

// openModels gives the open's answer the CLI's own models: those its
// program listed last (kept by Config.Models), else, for a backend whose
// CLI lists them as it starts (claude; codex app-server), what it lists
// within modelsWait of its early start (less when the CLI cannot start). The list that arrives later
// replaces them with a config_option_update as before.
func (ss *acpSession) openModels(name string, be backend.Backend, c backend.Controls) {
	program, err := be.Program()
	if c == nil || err != nil {
		return
	}
	ss.ctl.mu.Lock()
	ss.ctl.listedBy, ss.ctl.program = name, program
	ss.ctl.mu.Unlock()
	if cache := ss.srv.cfg.Models; cache != nil {
		if list := cache.Load(name, program); len(list) > 0 {
			ss.ctl.mu.Lock()
			ss.ctl.models = list // in place of the backend's list from before its CLI said
			ss.ctl.mu.Unlock()
			return
		}
	}
	if l, ok := be.(interface{ ListsModels() bool }); !ok || !l.ListsModels() {
		return
	}
	failed := ss.prepare(c)
	t := time.NewTimer(modelsWait)
	defer t.Stop()
	select {
	case <-ss.ctl.modelsSeen:
	case <-failed: // the CLI could not start (missing, say): no list comes
	case <-t.C:
	}
}

// prepare starts the CLI ahead of the first turn (Controls.Prepare), once,
// in the background: from the open when its answer waits for the CLI's
// models, else after it. The channel it returns is closed when the start
// failed (nil when it was started before).
func (ss *acpSession) prepare(c backend.Controls) <-chan struct{} {
	ss.mu.Lock()
	if ss.closed || ss.bg.cancel != nil {
		ss.mu.Unlock()
		return nil
	}
	failed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	ss.bg.cancel = cancel
	ss.bg.preparing.Add(1)
	ss.mu.Unlock()
	go func() {
		defer ss.bg.preparing.Done()
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				ss.srv.recovered("the CLI's start of session "+ss.id, r)
			}
		}()
		if err := c.Prepare(ctx); err != nil {
			close(failed)
			if ctx.Err() == nil {
				ss.srv.cfg.Log.Printf("session %s: start the CLI: %v", ss.id, err)
			}
		}
	}()
	return failed
}

// ownCommand reports which of spbridge's commands a prompt is ("" for
// none): the whole prompt is "/new" or "/save".
func ownCommand(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return ""
	}
	switch name := t[1:]; name {
	case commandNew, commandSave:
		return name
	}
	return ""
}

// runOwnCommand runs spbridge's own command for a prompt and answers it as
// a turn that ended, with a line saying what was done.
func (ss *acpSession) runOwnCommand(j *job, name string) (any, error) {
	var say string
	switch name {
	case commandNew:
		if _, err := ss.newConversation(&job{m: &message{Params: json.RawMessage("{}")}}); err != nil {
			return nil, err
		}
		say = "Started a new conversation."
	case commandSave:
		r, err := ss.save(&job{m: &message{Params: json.RawMessage("{}")}})
		if err != nil {
			return nil, err
		}
		n := len(r.(map[string]any)["written"].([]string))
		say = fmt.Sprintf("Saved the conversation (%d files written).", n)
	}
	ss.chunk(agentMessageChunk, say)
	return map[string]any{"stopReason": "end_turn"}, nil
}

// modelSetter is a backend whose model can change between turns.
type modelSetter interface{ SetModel(string) }

// provider is the archive's provider name of backend.
func provider(backend string) string {
	cli, _ := clis.Lookup(backend)
	return cli.Provider
}

// Config option ids.
const (
	optionModel  = "model"
	optionMode   = "mode"
	optionEffort = "reasoning_effort"
)

// effortDefault is the reasoning effort option's value for the CLI's own.
const effortDefault = "default"

// modelList is the models offered: the backend's, else the static list of
// its name; the current model (id, "default" for the CLI's own) is added
// when it is not among them.
func (ss *acpSession) modelList(current string) []backend.Model {
	ss.ctl.mu.Lock()
	list := slices.Clone(ss.ctl.models)
	ss.ctl.mu.Unlock()
	if list == nil {
		cli, _ := clis.Lookup(ss.backendName())
		for _, v := range cli.Models {
			list = append(list, backend.Model{ID: v, Name: v})
		}
	}
	if !slices.ContainsFunc(list, func(m backend.Model) bool { return m.ID == current }) {
		list = append(list, backend.Model{ID: current, Name: current})
	}
	for i := range list {
		if list[i].ID == "default" && (list[i].Name == "" || list[i].Name == "default") {
			list[i].Name = "Default (the CLI's own choice)"
		}
	}
	return list
}

// backendName is the session's backend's name.
func (ss *acpSession) backendName() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.set.backend
}

// currentModel is the model of the next turns, "default" for the CLI's own.
func (ss *acpSession) currentModel() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.set.model == "" {
		return "default"
	}
	return ss.set.model
}

// efforts are the reasoning efforts model takes, none when it takes none
// or is not listed.
func efforts(list []backend.Model, model string) []string {
	if i := slices.IndexFunc(list, func(m backend.Model) bool { return m.ID == model }); i >= 0 {
		return list[i].Efforts
	}
	return nil
}

// configOptions are the session's config options: the model, the
// reasoning effort where the current model takes one, and the mode.
func (ss *acpSession) configOptions() []any {
	current := ss.currentModel()
	list := ss.modelList(current)
	var opts []any
	for _, m := range list {
		o := map[string]any{"value": m.ID, "name": m.Name}
		if m.Description != "" {
			o["description"] = m.Description
		}
		opts = append(opts, o)
	}
	all := []any{map[string]any{"id": optionModel, "name": "Model", "category": "model", "type": "select",
		"currentValue": current, "options": opts}}
	if levels := efforts(list, current); len(levels) > 0 {
		ss.ctl.mu.Lock()
		effort := ss.ctl.effort
		ss.ctl.mu.Unlock()
		if effort == "" || !slices.Contains(levels, effort) {
			effort = effortDefault
		}
		eopts := []any{map[string]any{"value": effortDefault, "name": "Default (the CLI's own choice)"}}
		for _, l := range levels {
			eopts = append(eopts, map[string]any{"value": l, "name": l})
		}
		all = append(all, map[string]any{"id": optionEffort, "name": "Reasoning effort", "category": "thought_level",
			"type": "select", "currentValue": effort, "options": eopts})
	}
	if mode := ss.modeOption(); mode != nil {
		all = append(all, mode)
	}
	return all
}

// configChanged tells the client the config options changed, once it
// knows the session.
func (ss *acpSession) configChanged() {
	ss.ctl.mu.Lock()
	announced := ss.ctl.announced
	ss.ctl.mu.Unlock()
	if announced {
		ss.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": ss.configOptions()})
	}
}

func (ss *acpSession) setConfigOption(j *job) (any, error) {
	var p struct {
		ConfigID string `json:"configId"`
		Value    any    `json:"value"`
	}
	if err := decode(j.m.Params, &p); err != nil {
		return nil, err
	}
	value, ok := p.Value.(string)
	if (p.ConfigID != optionModel && p.ConfigID != optionMode && p.ConfigID != optionEffort) || !ok || value == "" {
		return nil, rpcErrorf(CodeInvalidParams, "invalid params: the options are \"model\", \"reasoning_effort\" and \"mode\", each a string value")
	}
	switch p.ConfigID {
	case optionMode:
		if err := ss.switchMode(value); err != nil {
			return nil, err
		}
	case optionEffort:
		if err := ss.setEffort(value); err != nil {
			return nil, err
		}
	default:
		if err := ss.setModel(value); err != nil {
			return nil, err
		}
	}
	return map[string]any{"configOptions": ss.configOptions()}, nil
}

// setModel chooses the model of the next turns ("default": the CLI's own).
// An effort the new model does not take goes back to the CLI's own.
func (ss *acpSession) setModel(value string) error {
	if err := ss.ready(); err != nil {
		return err
	}
	ss.set.model = value
	if value == "default" {
		ss.set.model = ""
	}
	model := ss.set.model
	be := ss.conv.CurrentBackend()
	ss.mu.Unlock()
	if ms, ok := be.(modelSetter); ok {
		ms.SetModel(model)
	}
	c, _ := be.(backend.Controls)
	if c == nil {
		return nil
	}
	levels := efforts(ss.modelList(value), value)
	ss.ctl.mu.Lock()
	reset := ss.ctl.effort != "" && !slices.Contains(levels, ss.ctl.effort)
	if reset {
		ss.ctl.effort = ""
	}
	ss.ctl.mu.Unlock()
	if reset {
		c.SetEffort("")
	}
	return nil
}

// setEffort chooses the reasoning effort of the next turns: one the
// current model takes, or "default" for the CLI's own.
func (ss *acpSession) setEffort(value string) error {
	c := ss.controls()
	current := ss.currentModel()
	levels := efforts(ss.modelList(current), current)
	if c == nil || len(levels) == 0 {
		return rpcErrorf(CodeInvalidParams, "invalid params: the model %q has no reasoning effort", current)
	}
	if value != effortDefault && !slices.Contains(levels, value) {
		return rpcErrorf(CodeInvalidParams, "invalid params: the model %q takes the reasoning efforts %s", current, strings.Join(levels, ", "))
	}
	if value == effortDefault {
		value = ""
	}
	ss.ctl.mu.Lock()
	ss.ctl.effort = value
	ss.ctl.mu.Unlock()
	c.SetEffort(value)
	return nil
}
