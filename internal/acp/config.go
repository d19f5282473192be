package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// This file holds the session's configuration as the editor sees it: its
// modes, models and reasoning effort (ACP's modes and configOptions), and
// the slash commands (spbridge's own and the CLI's). The conversation
// (session.Session) keeps them and carries them over; what they look like
// over ACP is wire's (wire.ConfigOptions, ModeState, CommandList); acp
// tells the client and sets what it asks.

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

// modelsWait is how long an open's answer waits for a CLI that lists its
// models, when no list of its program is kept (session.WaitModels).
const modelsWait = 3 * time.Second

// settingsChanged tells the client what of the session's settings
// changed (session.Options.Changed), on the backend's goroutines: the
// mode at once, the commands and the options once the client knows the
// session (its open was answered).
func (ss *acpSession) settingsChanged(what session.What) {
	conv := ss.openConv()
	if conv == nil {
		return
	}
	switch {
	case what == session.ModeChanged:
		_, mode := conv.Modes()
		ss.send.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": mode})
		ss.send.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": wire.ConfigOptions(conv, ss.srv.booleans.Load())})
	case !ss.told.isAnnounced():
	case what == session.CommandsChanged:
		ss.send.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": wire.CommandList(ownCommands, conv)})
	case what == session.ModelsChanged:
		ss.send.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": wire.ConfigOptions(conv, ss.srv.booleans.Load())})
	}
}

// isAnnounced reports whether the client knows the session (its
// session/new or load was answered): commands and options may go out.
func (t *told) isAnnounced() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.announced
}

// afterOpen runs once the client has the answer to the session's open (a
// load's runs before its answer, so that nothing of the load comes after
// it; the second run does nothing): the commands known so far go out, and
// the options when the CLI listed its models before the answer (which
// carried them: a client that waits for the list hears of it too); then
// the CLI starts in the background so that its own commands follow.
func (ss *acpSession) afterOpen() {
	conv := ss.openConv()
	if conv == nil || !conv.HasControls() {
		// A backend without controls (a test's) has no commands to run.
		return
	}
	ss.told.mu.Lock()
	was := ss.told.announced
	ss.told.announced = true
	ss.told.mu.Unlock()
	if was {
		return
	}
	ss.settingsChanged(session.CommandsChanged)
	if conv.ModelsSeen() {
		ss.settingsChanged(session.ModelsChanged)
	}
	conv.Prepare()
}

// setMode handles session/set_mode.
func (ss *acpSession) setMode(j *job) (any, error) {
	var p struct {
		ModeID string `json:"modeId"`
	}
	conv, err := ss.begin(j, &p, nil)
	if err != nil {
		return nil, err
	}
	if err := switchMode(conv, p.ModeID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// setConfigOption handles session/set_config_option: the model, the
// reasoning effort, the mode or the CLI.
func (ss *acpSession) setConfigOption(j *job) (any, error) {
	var p struct {
		ConfigID string `json:"configId"`
		Value    any    `json:"value"`
	}
	var value string
	conv, err := ss.begin(j, &p, func() error {
		v, ok := p.Value.(string)
		if !slices.Contains(wire.SelectOptions, p.ConfigID) && p.ConfigID != "" && ss.srv.booleans.Load() {
			return nil // an on/off setting: setSwitch checks it
		}
		if !ok || v == "" {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the options are \"model\", \"reasoning_effort\", \"mode\" and \"cli\", each a string value")
		}
		value = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch p.ConfigID {
	case wire.OptionMode:
		err = switchMode(conv, value)
	case wire.OptionEffort:
		err = setEffort(conv, value)
	case wire.OptionCLI:
		err = switchCLI(conv, value)
	case wire.OptionModel:
		conv.SetModel(value)
	default:
		err = setSwitch(conv, p.ConfigID, p.Value, ss.srv.booleans.Load())
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"configOptions": wire.ConfigOptions(conv, ss.srv.booleans.Load())}, nil
}

// switchCLI asks the conversation to run on the CLI named name, as ACP's
// errors.
func switchCLI(conv *session.Session, name string) error {
	err := conv.SwitchCLI(name)
	switch {
	case errors.Is(err, session.ErrUnknownCLI):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	case errors.Is(err, session.ErrBusy):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "a turn is running: the CLI can be switched between turns")
	}
	return err
}

// switchMode asks the conversation for mode id (it tells the client when the
// mode changed: settingsChanged), as ACP's errors.
func switchMode(conv *session.Session, id string) error {
	switch err := conv.SetMode(context.Background(), id); {
	case errors.Is(err, session.ErrNoModes):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: this session has no modes")
	case errors.Is(err, backend.ErrUnknownMode):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: unknown mode %q", id)
	case err != nil:
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "set mode %s: %v", id, err)
	}
	return nil
}

// setEffort chooses the reasoning effort of the next turns: one the
// current model takes, or "default" for the CLI's own.
func setEffort(conv *session.Session, value string) error {
	if value == wire.EffortDefault {
		value = ""
	}
	_, model := conv.Models()
	switch err := conv.SetEffort(value); {
	case errors.Is(err, session.ErrNoEffort):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the model %q has no reasoning effort", model)
	case errors.Is(err, session.ErrUnknownEffort):
		levels, _ := conv.Efforts()
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the model %q takes the reasoning efforts %s", model, strings.Join(levels, ", "))
	}
	return nil
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
		if _, err := ss.newConversation(&job{m: &jsonrpc.Message{Params: json.RawMessage("{}")}}); err != nil {
			return nil, err
		}
		say = "Started a new conversation."
	case commandSave:
		r, err := ss.save(&job{m: &jsonrpc.Message{Params: json.RawMessage("{}")}})
		if err != nil {
			return nil, err
		}
		n := len(r.(map[string]any)["written"].([]string))
		say = fmt.Sprintf("Saved the conversation (%d files written).", n)
	}
	// A message of no item (never replayed): an id of its own.
	ss.send.chunk(wire.AgentMessageChunk, archive.NewID(), say)
	return map[string]any{"stopReason": "end_turn"}, nil
}
