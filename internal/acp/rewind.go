package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/checkpoint"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// Rewind: `_session/rewind`, the extension the ACP adapters of Claude Code
// and Codex shape for taking turns back, advertised as
// `_meta.rewind.supported` next to `_meta.steering` at the top of the
// initialize answer (and `agentCapabilities._meta.sessionRewind`). The
// point is before a user message the client saw, named by the messageId
// its chunks carried (spbridge's messageIds are item ids): the request's
// `messageId`, or `beforeMessage: {messageId, messageFingerprint?,
// messageOccurrence?}` (the fingerprint, "sha256:" and the hex SHA-256 of
// the user message's text, finds it when no message has the id). `mode`
// is "both" (the default), "conversation" or "files"; `dryRun` only says
// what would change; `force` also restores files changed since by someone
// else (conflicts); `undo: true` puts the last rewind back instead. What it
// does is the session's (session.RewindConversation, UndoRewind); this
// file translates.

// rewindMeta is what initialize's answer says of rewinding.
var rewindMeta = map[string]any{"supported": true, "dryRun": true, "undo": true, "force": true, "modes": []any{"both", "conversation", "files"}}

// rewindParams are _session/rewind's params.
type rewindParams struct {
	MessageID     *string `json:"messageId"`
	BeforeMessage *struct {
		MessageID          *string `json:"messageId"`
		MessageFingerprint *string `json:"messageFingerprint"`
		MessageOccurrence  *int    `json:"messageOccurrence"`
	} `json:"beforeMessage"`
	Mode   *string `json:"mode"`
	DryRun bool    `json:"dryRun"`
	Undo   bool    `json:"undo"`
	Force  bool    `json:"force"`
}

// errBusyRewind is the answer to a rewind while a turn runs.
var errBusyRewind = &jsonrpc.Error{Code: CodeBusy, Message: "a prompt is running in this session: a rewind waits until it ends (or cancel it)"}

// rewind answers _session/rewind with what was (or, for a dry run, would
// be) changed: {dryRun, conversation: {rewound, before, turn,
// itemsRemoved, messagesDropped, record, context}} ("undone" and
// itemsRestored for an undo). A rewind sends nothing more: the client cut
// its view where it asked. An undo (not a dry run) sends the items it put
// back as session/load replays them.
func (ss *acpSession) rewind(j *job) (any, error) {
	var p rewindParams
	conv, err := ss.begin(j, &p, func() error { return checkRewind(&p) })
	if err != nil {
		return nil, err
	}
	if conv.Running() {
		return nil, errBusyRewind
	}
	var res *session.Rewound
	if p.Undo {
		res, err = conv.Undo(p.DryRun, p.Force)
	} else {
		var item string
		if item, err = ss.rewindItem(conv, &p); err != nil {
			return nil, err
		}
		mode := "both"
		if p.Mode != nil {
			mode = *p.Mode
		}
		res, err = conv.Rewind(session.RewindOptions{Before: item, Files: mode != "conversation", Conversation: mode != "files",
			DryRun: p.DryRun, Force: p.Force})
	}
	switch {
	case errors.Is(err, session.ErrBusy):
		return nil, errBusyRewind
	case errors.Is(err, session.ErrClosed):
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q is closing", ss.id)
	case errors.Is(err, session.ErrNothingToUndo), errors.Is(err, session.ErrUndoStale), errors.Is(err, session.ErrUnreadable),
		errors.Is(err, session.ErrNoCheckpoints):
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%v", err)
	case errors.Is(err, session.ErrNotUserItem), errors.Is(err, archive.ErrNoItem):
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %v", err)
	case err != nil:
		// Contents missing (nothing changed), or a save that failed
		// after the rewind (the record keeps the rest).
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "rewind: %v", err)
	}
	answer := map[string]any{"dryRun": p.DryRun}
	if c := res.Conversation; c != nil {
		answer["conversation"] = conversationAnswer(c, p.Undo)
	}
	if res.Files != nil {
		answer["files"] = filesAnswer(res.Files)
	}
	if res.FilesErr != nil {
		answer["files"] = map[string]any{"rewound": false, "error": res.FilesErr.Error()}
	}
	if !p.DryRun {
		if c := res.Conversation; p.Undo && c != nil && len(c.Removed) > 0 {
			ss.send.replay(conv.ReplayTail(len(c.Removed)), ss.set.cwd)
		}
		if conv.Keep() {
			ss.send.edited()
		}
	}
	return answer, nil
}

// conversationAnswer is the conversation's part of the answer.
func conversationAnswer(res *session.ConversationRewind, undo bool) map[string]any {
	ids := make([]any, len(res.Removed))
	for i, it := range res.Removed {
		ids[i] = it.ID()
	}
	c := map[string]any{"before": res.Before, "turn": res.Turn, "messagesDropped": res.Messages, "record": res.Record}
	if res.Context != "" {
		c["context"] = res.Context
	}
	if undo {
		c["undone"] = !res.DryRun
		c["itemsRestored"] = ids
	} else {
		c["rewound"] = !res.DryRun
		c["itemsRemoved"] = ids
	}
	return c
}

// filesAnswer is the files' part: each file restored or deleted (or that
// would be), the conflicts left alone, the contents missing.
func filesAnswer(f *session.FileRewind) map[string]any {
	var restored, deleted, conflicts []any
	for _, a := range f.Plan.Actions {
		path := filepath.Join(a.Root, filepath.FromSlash(a.Path))
		switch {
		case a.Conflict && !f.Plan.Force:
			conflicts = append(conflicts, map[string]any{"path": path, "op": string(a.Op)})
		case a.Op == checkpoint.Remove:
			deleted = append(deleted, path)
		default:
			restored = append(restored, path)
		}
	}
	var made, removed []any
	for _, d := range f.Plan.Folders {
		path := filepath.Join(d.Root, filepath.FromSlash(d.Path))
		if d.Op == checkpoint.Remove {
			removed = append(removed, path)
		} else {
			made = append(made, path)
		}
	}
	out := map[string]any{"rewound": !f.DryRun, "restored": orNone(restored), "deleted": orNone(deleted), "conflicts": orNone(conflicts)}
	if len(made)+len(removed) > 0 {
		out["folders"] = map[string]any{"removed": orNone(removed), "made": orNone(made)}
	}
	if f.ID != "" {
		out["id"] = f.ID
	}
	if len(f.Plan.Missing) > 0 {
		out["missing"] = f.Plan.Missing
	}
	if len(f.Plan.Dropped) > 0 || f.Untracked {
		out["untracked"] = true
	}
	return out
}

func orNone(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// checkRewind refuses params that do not say one point, or a mode this
// spbridge does not have.
func checkRewind(p *rewindParams) error {
	named := p.MessageID != nil || p.BeforeMessage != nil
	switch {
	case p.Undo && named:
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: undo puts the last rewind back: it takes no message")
	case !p.Undo && !named:
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: messageId (or beforeMessage.messageId) is required")
	case p.MessageID != nil && strings.TrimSpace(*p.MessageID) == "":
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: messageId must not be empty")
	case p.BeforeMessage != nil && (p.BeforeMessage.MessageID == nil || strings.TrimSpace(*p.BeforeMessage.MessageID) == ""):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: beforeMessage.messageId is required")
	case p.MessageID != nil && p.BeforeMessage != nil && strings.TrimSpace(*p.MessageID) != strings.TrimSpace(*p.BeforeMessage.MessageID):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: messageId and beforeMessage.messageId name different messages")
	case p.BeforeMessage != nil && p.BeforeMessage.MessageFingerprint != nil && !fingerprintRE.MatchString(*p.BeforeMessage.MessageFingerprint):
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: beforeMessage.messageFingerprint must be sha256: and 64 hex digits")
	case p.BeforeMessage != nil && p.BeforeMessage.MessageOccurrence != nil && *p.BeforeMessage.MessageOccurrence < 1:
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: beforeMessage.messageOccurrence must be 1 or more")
	}
	if p.Mode != nil {
		switch *p.Mode {
		case "conversation", "both", "files":
		default:
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, `invalid params: mode must be "conversation", "files" or "both"`)
		}
	}
	return nil
}

// rewindItem is the id of the user item the params name: by its
// messageId (an older build's :segment:N suffix dropped), else by the
// fingerprint of its text.
func (ss *acpSession) rewindItem(conv *session.Session, p *rewindParams) (string, error) {
	id, field := "", "messageId"
	var fp string
	occurrence := 1
	if p.MessageID != nil {
		id = strings.TrimSpace(*p.MessageID)
	}
	if b := p.BeforeMessage; b != nil {
		id, field = strings.TrimSpace(*b.MessageID), "beforeMessage.messageId"
		if b.MessageFingerprint != nil {
			fp = *b.MessageFingerprint
		}
		if b.MessageOccurrence != nil {
			occurrence = *b.MessageOccurrence
		}
	}
	for _, cand := range []string{id, segmentSuffix.ReplaceAllString(id, "")} {
		if it := conv.ItemMap(cand); it != nil {
			return cand, nil
		}
	}
	if fp != "" {
		n := 0
		for _, it := range conv.Replay().Items {
			if it.Type() != archive.TypeUser {
				continue
			}
			sum := sha256.Sum256([]byte(it.String("text")))
			if "sha256:"+hex.EncodeToString(sum[:]) == fp {
				if n++; n == occurrence {
					return it.ID(), nil
				}
			}
		}
	}
	return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s %q: session %s has no message of that id", field, id, ss.id)
}
