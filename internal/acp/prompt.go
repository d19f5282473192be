package acp

import (
	"encoding/json"
	"errors"

	"spbridge/internal/acp/wire"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// This file holds a prompt: its content read (text, links, embedded
// resources, images), handed to the conversation, and how its turn ends
// in ACP's words.

// promptOf reads the prompt of a session/prompt or _spbridge/queue
// (wire.Prompt).
func promptOf(j *job) (string, []backend.Image, error) {
	var p struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	if err := jsonrpc.DecodeParams(j.m.Params, &p); err != nil {
		return "", nil, err
	}
	return wire.Prompt(p.Prompt)
}

// CodeNotStarted is the error of a prompt whose turn never started (the
// CLI missing, its folder missing, the CLI failing before it took the
// message): the conversation was left as it was.
const CodeNotStarted = -32003

func (ss *acpSession) prompt(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	if j.ctx.Err() != nil {
		return cancelledResponse(), nil
	}
	if name := ownCommand(text); name != "" && len(images) == 0 {
		return ss.runOwnCommand(j, name)
	}
	if _, err := ss.submit(session.Request{Text: text, Images: images, Ctx: j.ctx, Tag: j}, false); err != nil {
		if errors.Is(err, session.ErrCancelled) {
			return cancelledResponse(), nil
		}
		return nil, err
	}
	return answeredLater{}, nil
}

// submit hands a prompt (or, with queue, a message the user queued) to
// the conversation: it starts a turn, or waits behind the running one
// (queued). The session's worker calls it: what came after the prompt
// waits until it is started or queued.
func (ss *acpSession) submit(r session.Request, queue bool) (queued bool, err error) {
	conv, err := ss.live()
	if err != nil {
		return false, err
	}
	stopping := ss.work.stopped()
	if !stopping {
		if queue {
			queued, err = conv.Queue(turns{ss}, r)
		} else {
			queued, err = conv.Prompt(turns{ss}, r)
		}
	}
	if stopping || errors.Is(err, session.ErrClosed) {
		return false, jsonrpc.Errorf(CodeNotFound, "session %q is closing", ss.id)
	}
	return queued, err
}

// cancelledResponse answers a prompt cancelled before its turn began.
func cancelledResponse() map[string]any {
	return map[string]any{"stopReason": "cancelled", "_meta": map[string]any{"spbridge": map[string]any{"status": itemmap.TurnInterrupted}}}
}

// stopResponse maps how a turn ended to ACP: a failed turn has no stop
// reason of its own, so it ends its turn with the exact state in _meta (the
// failure item itself went out as _spbridge/item). A turn the client
// cancelled is cancelled, however the CLI ended it, as ACP asks of an
// agent told session/cancel: also when the CLI finished the reply before
// it heard the interrupt (what it said is kept; _meta says it completed).
// The turn's tokens go in usage (wire.PromptUsage).
func stopResponse(end *itemmap.TurnEnd, cancelled bool) map[string]any {
	reason := "end_turn"
	if end.Status == itemmap.TurnInterrupted || cancelled {
		reason = "cancelled"
	}
	r := map[string]any{"stopReason": reason, "_meta": map[string]any{"spbridge": map[string]any{"status": end.Status}}}
	if u := wire.PromptUsage(end.Usage); u != nil {
		r["usage"] = u
	}
	return r
}

func (ss *acpSession) queueMessage(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	queued, err := ss.submit(session.Request{Text: text, Images: images}, true)
	if err != nil {
		return nil, err
	}
	if queued {
		return map[string]any{"queued": true}, nil
	}
	// Nothing ran: the message is the next turn now.
	return map[string]any{"queued": false}, nil
}
