package acp

import (
	"context"
	"strings"

	"spbridge/internal/trust"
)

// Trust options: the optionIds of the trust question.
const (
	TrustAlways = "trust"      // allow_always: trusted, kept in the state folder
	TrustOnce   = "trust_once" // allow_once: trusted for this session
	TrustNotNow = "not_now"    // reject_once: untrusted; asked again next session
	TrustNever  = "never"      // reject_always: untrusted, kept; never asked again
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
	dir, files := q.Dir, q.Files
	id := "spbridge-trust"
	text := "This folder's own " + q.Who + " configuration would act: " + strings.Join(trust.RelNames(dir, files), ", ") +
		". Until you trust the folder, " + q.Who + " runs with your own configuration only."
	call := map[string]any{"toolCallId": id, "title": "Trust this folder? " + dir, "kind": "other", "status": "pending",
		"content":   []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": text}}},
		"locations": []any{map[string]any{"path": dir}},
		"_meta":     map[string]any{"spbridge": map[string]any{"trust": map[string]any{"folder": dir, "files": files}}}}
	announce := map[string]any{"sessionUpdate": "tool_call"}
	for k, v := range call {
		announce[k] = v
	}
	ss.srv.w.Flush()
	ss.send.update(announce)
	params := map[string]any{
		"sessionId": ss.id,
		"toolCall":  call,
		"options": []any{
			map[string]any{"optionId": TrustAlways, "name": "Trust this folder", "kind": "allow_always"},
			map[string]any{"optionId": TrustOnce, "name": "Trust it for this session", "kind": "allow_once"},
			map[string]any{"optionId": TrustNotNow, "name": "Not now", "kind": "reject_once"},
			map[string]any{"optionId": TrustNever, "name": "Never trust this folder", "kind": "reject_always"},
		},
	}
	answer := trust.NotNow
	if m, err := ss.srv.w.Call(ctx, "session/request_permission", params); err == nil {
		switch optionID, _ := selected(m); optionID {
		case TrustAlways:
			answer = trust.TrustAlways
		case TrustOnce:
			answer = trust.TrustOnce
		case TrustNever:
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
