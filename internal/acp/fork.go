package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/catalog"
	"spbridge/internal/jsonrpc"
)

// forkPoint is where the copy of a session/fork ends: with an item
// (_meta.spbridge.atItem) or a message by the messageId its chunks carried
// (the request's messageId, or _meta.jetbrains.air.fork, the shape
// claude-agent-acp and codex-acp take). Either way the copy keeps that
// item or message, as the adapters' forks keep theirs. The zero value is
// the whole conversation.
type forkPoint struct {
	atItem string
	// message is the messageId asked for, field the request's field that
	// named it (for the errors).
	message, field string
	// fingerprint ("sha256:" and the hex of the SHA-256 of an agent
	// message's text) and occurrence (1 for the first) name the message
	// when no message has the id: a client that kept an older id.
	fingerprint string
	occurrence  int
}

var fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// parseForkPoint reads where a session/fork's copy ends from its params;
// atItem is _meta.spbridge.atItem.
func parseForkPoint(params json.RawMessage, atItem string) (forkPoint, error) {
	var p struct {
		MessageID *string `json:"messageId"`
		Meta      struct {
			Jetbrains struct {
				Air struct {
					Fork *struct {
						Version            *int    `json:"version"`
						MessageID          *string `json:"messageId"`
						MessageFingerprint *string `json:"messageFingerprint"`
						MessageOccurrence  *int    `json:"messageOccurrence"`
					} `json:"fork"`
				} `json:"air"`
			} `json:"jetbrains"`
		} `json:"_meta"`
	}
	if err := jsonrpc.DecodeParams(params, &p); err != nil {
		return forkPoint{}, err
	}
	f := forkPoint{atItem: atItem}
	if p.MessageID != nil {
		if strings.TrimSpace(*p.MessageID) == "" {
			return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: messageId must not be empty")
		}
		f.message, f.field = *p.MessageID, "messageId"
	}
	if air := p.Meta.Jetbrains.Air.Fork; air != nil {
		const field = "_meta.jetbrains.air.fork"
		switch {
		case air.Version == nil || *air.Version != 1:
			return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s.version must be 1", field)
		case air.MessageID == nil || strings.TrimSpace(*air.MessageID) == "":
			return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s.messageId is required", field)
		case f.message != "" && f.message != strings.TrimSpace(*air.MessageID):
			return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: messageId %q and %s.messageId %q name different messages", f.message, field, *air.MessageID)
		case air.MessageFingerprint != nil && !fingerprintRE.MatchString(*air.MessageFingerprint):
			return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s.messageFingerprint must be sha256: and 64 hex digits", field)
		case air.MessageOccurrence != nil && *air.MessageOccurrence < 1:
			return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s.messageOccurrence must be 1 or more", field)
		}
		f.message, f.field = strings.TrimSpace(*air.MessageID), field+".messageId"
		if air.MessageFingerprint != nil {
			f.fingerprint, f.occurrence = *air.MessageFingerprint, 1
			if air.MessageOccurrence != nil {
				f.occurrence = *air.MessageOccurrence
			}
		}
	}
	if f.message != "" && f.atItem != "" {
		return forkPoint{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta.spbridge.atItem and %s both say where the fork ends: give one", f.field)
	}
	return f, nil
}

// segmentSuffix ends the ids older JetBrains AIR builds sent: the id of
// the part of a message they showed.
var segmentSuffix = regexp.MustCompile(`:segment:\d+$`)

// forkCopy is the copy a fork starts from (made by from, up to an item or
// "" for all) as far as f says.
func forkCopy(from func(atItem string) (archive.Conversation, error), f forkPoint, sid string) (archive.Conversation, error) {
	if f.message == "" {
		conv, err := from(f.atItem)
		if errors.Is(err, archive.ErrNoItem) {
			return conv, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: _meta.spbridge.atItem: no item %q in the conversation", f.atItem)
		}
		return conv, err
	}
	ids := []string{f.message}
	if s := segmentSuffix.ReplaceAllString(f.message, ""); s != f.message {
		ids = append(ids, s)
	}
	for _, id := range ids {
		conv, err := from(id)
		if errors.Is(err, archive.ErrNoItem) {
			continue
		}
		if err != nil {
			return conv, err
		}
		if messageKind(conv.Items[len(conv.Items)-1]) == "" {
			return archive.Conversation{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s %q names no message of session %s (an item that is not one)", f.field, f.message, sid)
		}
		return conv, nil
	}
	if f.fingerprint != "" {
		conv, err := from("")
		if err != nil {
			return conv, err
		}
		if id := fingerprinted(conv.Items, f.fingerprint, f.occurrence); id != "" {
			return conv.Fork(id)
		}
	}
	return archive.Conversation{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: %s %q: session %s has no message of that id", f.field, f.message, sid)
}

// fingerprinted is the id of the occurrence-th agent message of items
// whose text has this fingerprint, "" when there is none.
func fingerprinted(items []archive.Item, fingerprint string, occurrence int) string {
	n := 0
	for _, it := range items {
		if it.Type() != archive.TypeAssistant {
			continue
		}
		sum := sha256.Sum256([]byte(it.String("text")))
		if "sha256:"+hex.EncodeToString(sum[:]) == fingerprint {
			if n++; n == occurrence {
				return it.ID()
			}
		}
	}
	return ""
}

// messageKind is the session update kind whose chunks show a message item
// (the user's, the agent's reply or thinking, a failure or questions as
// text), "" for an item that is no message.
func messageKind(it archive.Item) string {
	switch it.Type() {
	case archive.TypeUser:
		return wire.UserMessageChunk
	case archive.TypeAssistant, archive.TypeFailure, archive.TypeQuestions:
		return wire.AgentMessageChunk
	case archive.TypeThinking:
		return wire.AgentThoughtChunk
	}
	return ""
}

// fork puts a copy of the conversation of the session op forks into op's
// package (new, or one that holds no conversation): a package open in
// this serve (as it stands), one on disk, or a CLI's own session (read
// from the package it was imported into, else imported now). At an item
// or a message (op.at) the copy ends with it, and the history with its
// turn. Images go
// with the history; usage and cost are the whole conversation's (a turn's
// share is not known).
func (s *Server) fork(op *openParams) error {
	from, err := s.forkSource(op)
	if err != nil {
		return err
	}
	conv, err := forkCopy(from, op.at, op.forkFrom)
	if e := (*jsonrpc.Error)(nil); errors.As(err, &e) {
		return err
	}
	if err != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "fork: %v", err)
	}
	op.fresh = true     // the open makes the package's folder
	op.imported = &conv // and saves it into the package
	return nil
}

// forkSource is what makes the copy a fork starts from, up to an item
// ("" for all): an open session's is made under its lock.
func (s *Server) forkSource(op *openParams) (func(atItem string) (archive.Conversation, error), error) {
	given := func(c *archive.Conversation) func(string) (archive.Conversation, error) {
		return c.Fork
	}
	src := op.forkFrom
	if c := catalog.ParseSession(src); c != nil && s.cfg.History != nil {
		found, err := s.list.Find(*c, "")
		if err != nil {
			return nil, findError(err)
		}
		if found.Conv != nil {
			return given(found.Conv), nil
		}
		src = found.Package
	}
	s.mu.Lock()
	open := s.sessions[src]
	s.mu.Unlock()
	if open != nil {
		if conv := open.openConv(); conv != nil {
			return conv.Fork, nil
		}
	}
	if !filepath.IsAbs(src) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: sessionId %q names no session to fork", src)
	}
	pkg, err := archive.Open(src, archive.KindDocument, true)
	if err != nil {
		return nil, jsonrpc.Errorf(CodeNotFound, "session %q: %v", src, err)
	}
	if pkg.Unreadable != "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the conversation of %s cannot be read: %s", src, pkg.Unreadable)
	}
	return given(pkg.Conv), nil
}
