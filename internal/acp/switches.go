package acp

import (
	"errors"
	"slices"

	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// switchOptions are the current model's on/off settings (Codex's fast
// service tier) as boolean config options (category model_config), for a
// client that advertised clientCapabilities.session.configOptions.boolean;
// nothing for another client, which keeps the select options it had.
func switchOptions(conv *session.Session, booleans bool) []any {
	if !booleans {
		return nil
	}
	var out []any
	for _, sw := range conv.Switches() {
		if slices.Contains(selectOptions, sw.ID) {
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

// selectOptions are the ids of the select config options.
var selectOptions = []string{optionModel, optionEffort, optionMode, optionCLI}

// setSwitch handles session/set_config_option of an on/off setting: type
// "boolean" and a boolean value, from a client that advertised boolean
// options.
func setSwitch(conv *session.Session, id string, value any, booleans bool) error {
	on, ok := value.(bool)
	if !booleans || !ok {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %q takes a boolean value (type \"boolean\"), for a client that advertised clientCapabilities.session.configOptions.boolean", id)
	}
	if err := conv.SetSwitch(id, on); errors.Is(err, session.ErrUnknownSwitch) {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the current model has no on/off setting %q", id)
	} else if err != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "set %s: %v", id, err)
	}
	return nil
}
