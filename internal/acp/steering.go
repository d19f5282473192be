package acp

import (
	"encoding/json"
	"errors"

	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// Steering: `_session/steering`, the extension the ACP adapters of Claude
// Code and Codex offer for a message typed while the agent works,
// advertised as `_meta.steering.supported` at the top of the initialize
// answer. Its params are {sessionId, prompt} (a prompt's content blocks),
// and `_meta.steering.idleBehavior: "promptRequired"` when the client
// wants a message that finds no running turn back, to send it as a
// session/prompt of its own. What becomes of the message is the
// session's to decide (session.Steer); this file only translates.

// steeringMeta is what initialize's answer says of steering.
var steeringMeta = map[string]any{"supported": true}

// steerParams are _session/steering's params besides the prompt.
type steerParams struct {
	Meta struct {
		Steering struct {
			IdleBehavior string `json:"idleBehavior"`
		} `json:"steering"`
	} `json:"_meta"`
}

// steer answers _session/steering: {outcome: "injected"} when the running
// turn took the message; "startedNewTurn" when it begins a turn (none ran,
// or the running one ended first); "promptRequired" with reason
// "noRunningTurn" when the client asked for that and no turn took it
// (nothing was kept); "queued", with the reason, when the running turn
// cannot take a message (a codex exec turn, a review, a compaction) and it
// waits behind it; "failed", with the reason, when the CLI refused it.
// An empty or too long message is refused with -32602 and kept nowhere.
func (ss *acpSession) steer(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	var p steerParams
	if err := json.Unmarshal(j.m.Params, &p); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	}
	conv, err := ss.live()
	if err != nil {
		return nil, err
	}
	if ss.work.stopped() {
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q is closing", ss.id)
	}
	opts := session.SteerOptions{HandBack: p.Meta.Steering.IdleBehavior == "promptRequired"}
	res, err := conv.Steer(turns{ss}, session.Request{Text: text, Images: images}, opts)
	switch {
	case errors.Is(err, session.ErrClosed):
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q is closing", ss.id)
	case errors.Is(err, session.ErrSteerEmpty), errors.Is(err, session.ErrSteerTooLong):
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	case err != nil:
		return map[string]any{"outcome": "failed", "reason": err.Error()}, nil
	}
	answer := map[string]any{}
	switch res.Outcome {
	case session.SteerInjected:
		answer["outcome"] = "injected"
	case session.SteerStarted:
		answer["outcome"] = "startedNewTurn"
	case session.SteerHandedBack:
		answer["outcome"], answer["reason"] = "promptRequired", res.Reason
	case session.SteerQueued:
		answer["outcome"], answer["reason"] = "queued", res.Reason
	}
	return answer, nil
}
