package acp

import (
	"spbridge/internal/acp/wire"
	"spbridge/internal/jsonrpc"
)

// setModel handles session/set_model, which ACP dropped for the model
// configuration option and claude-agent-acp and the clients built on it
// (the AI SDK's ACP provider) still send: its modelId is set as
// session/set_config_option's "model" is, a config_option_update tells
// the options as they now stand, and the answer is {} as the method's was.
func (ss *acpSession) setModel(j *job) (any, error) {
	var p struct {
		ModelID string `json:"modelId"`
	}
	conv, err := ss.begin(j, &p, func() error {
		if p.ModelID == "" {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: modelId (a model of the model option) is required")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	conv.SetModel(p.ModelID)
	ss.send.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": wire.ConfigOptions(conv, ss.srv.booleans.Load())})
	return struct{}{}, nil
}
