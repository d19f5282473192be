package acp

import (
	"context"

	"spbridge/internal/acp/wire"
	"spbridge/internal/trust"
)

// AskTrust asks the editor, within the turn of the session's first
// prompt, whether to trust the session's folder, whose own configuration
// would act (backend.TrustAsker): a session/request_permission about a
// tool call of its own ("Trust this folder?", kind other, its files in
// its content), announced before and settled after. No answer (the
// request cancelled, the turn cancelled, an option not offered) is "not
// now".
func (h *acpHost) AskTrust(ctx context.Context, q trust.Question) trust.Answer {
	ss := h.ss
	id := "spbridge-trust"
	call := wire.TrustCall(id, q)
	announce := map[string]any{"sessionUpdate": "tool_call"}
	for k, v := range call {
		announce[k] = v
	}
	ss.srv.w.Flush()
	ss.send.update(announce)
	params := map[string]any{
		"sessionId": ss.id,
		"toolCall":  call,
		"options":   wire.TrustOptions(),
	}
	answer := trust.NotNow
	if m, err := ss.srv.w.Call(ctx, "session/request_permission", params); err == nil {
		switch optionID, _ := selected(m); optionID {
		case wire.TrustAlways:
			answer = trust.TrustAlways
		case wire.TrustOnce:
			answer = trust.TrustOnce
		case wire.TrustNever:
			answer = trust.Never
		}
	}
	status := "failed"
	if answer == trust.TrustAlways || answer == trust.TrustOnce {
		status = "completed"
	}
	ss.send.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status})
	return answer
}
