package acp

import (
	"errors"

	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

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
