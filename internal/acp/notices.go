package acp

import (
	"encoding/json"

	"spbridge/internal/acp/wire"
)

// wantsNotices reports whether initialize's params say the client presents
// live notices (clientCapabilities.session.notices is an object): a
// notice item then also goes out as ACP's notice update.
func wantsNotices(params json.RawMessage) bool {
	var p struct {
		ClientCapabilities struct {
			Session struct {
				Notices json.RawMessage `json:"notices"`
			} `json:"session"`
		} `json:"clientCapabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	n := p.ClientCapabilities.Session.Notices
	return len(n) > 0 && n[0] == '{'
}

// notice sends a notice item's text as an ACP notice, to a client that
// presents them.
func (h *acpHost) notice(text string) {
	if text == "" || !h.ss.srv.notices.Load() {
		return
	}
	sid := h.ss.id
	h.send(func(b []byte) []byte { return wire.AppendNotice(b, sid, text) })
}
