package acp

import (
	"encoding/base64"
	"sync/atomic"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// sender sends one session's notifications to the client at once, through
// the server's writer: session/update (chunks, tool calls, plans, usage,
// the conversation replayed), _spbridge/item and _spbridge/edited. A
// turn's own updates go through its host (acpHost), which batches them.
// It holds no lock: the writer takes its own.
type sender struct {
	id    string          // the session's id
	w     *jsonrpc.Writer // the server's
	items *atomic.Bool    // the client asked for _spbridge/item (Server.items)
}

// newSender returns the sender of session id of s.
func newSender(s *Server, id string) sender {
	return sender{id: id, w: s.w.Writer, items: &s.items}
}

// item sends the _spbridge/item of a whole item, with its approval card
// when card is not nil.
func (u sender) item(op string, item map[string]any, card any) {
	u.w.Write(func(b []byte) []byte { return wire.AppendItem(b, u.id, op, item, card) })
}

// chunk sends a session/update with a text chunk of kind of the message
// messageID (its item's id).
func (u sender) chunk(kind, messageID, text string) {
	u.w.Write(func(b []byte) []byte { return wire.AppendChunk(b, u.id, kind, messageID, text) })
}

// usage sends a usage_update after a turn that reported its usage
// (wire.UsageUpdate), when there is one.
func (u sender) usage(end *itemmap.TurnEnd, conv *session.Session) {
	if up := wire.UsageUpdate(end, conv.Cost()); up != nil {
		u.update(up)
	}
}

// edited tells the client the conversation changed, when it is kept in the
// document and the client asked for spbridge's extensions (the initialize
// opt-in of _spbridge/item): a plain ACP client gets ACP alone.
func (u sender) edited() {
	if !u.items.Load() {
		return
	}
	u.w.Notify("_spbridge/edited", map[string]any{"sessionId": u.id})
}

// update sends one session/update.
func (u sender) update(up map[string]any) {
	u.w.Notify("session/update", map[string]any{"sessionId": u.id, "update": up})
}

// replay sends a loaded conversation to the client as session/update
// notifications (and its items as _spbridge/item to a client that asked
// for them), in order.
func (u sender) replay(r session.Replay, cwd string) {
	list, cards, sent := r.Items, r.Cards, r.Sent
	items := u.items.Load()
	for i, it := range list {
		if items {
			var card any
			if c, ok := cards[it.ID()]; ok && it.Type() == archive.TypeToolApproval {
				card = c
			}
			u.item("add", it.Map(), card)
		}
		switch it.Type() {
		case archive.TypeUser:
			text := it.String("text")
			if text != "" || !it.Bool("hasImage") {
				u.chunk(wire.UserMessageChunk, it.ID(), text)
			}
			if it.Bool("hasImage") {
				u.replayImages(it.ID(), sent[i], text != "")
			}
		default:
			u.w.Write(func(b []byte) []byte { return wire.AppendRestored(b, u.id, it, cwd) })
		}
	}
}

// replayImages sends a replayed user message's images, in their order, as
// user_message_chunk image content after its text. An image the package
// no longer holds (omitted for the size cap, missing or altered) is the
// text archive.ImageOmittedText, a paragraph of its own after what came
// before it. They are of the message messageID.
func (u sender) replayImages(messageID string, msg archive.Message, afterText bool) {
	for _, b := range msg.Content {
		switch b.Type() {
		case archive.BlockImage:
			data := b.ImageData()
			if data == nil {
				continue
			}
			u.update(map[string]any{"sessionUpdate": wire.UserMessageChunk, "messageId": messageID, "content": map[string]any{
				"type": "image", "mimeType": b.String("mimeType"), "data": base64.StdEncoding.EncodeToString(data)}})
			afterText = true
		case archive.BlockImageOmitted:
			text := archive.ImageOmittedText
			if afterText {
				text = "\n\n" + text
			}
			u.chunk(wire.UserMessageChunk, messageID, text)
			afterText = true
		}
	}
}
