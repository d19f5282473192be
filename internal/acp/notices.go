package acp

import (
	"spbridge/internal/acp/wire"
)

// notice sends a notice item's text as an ACP notice, to a client that
// presents them.
func (h *acpHost) notice(text string) {
	if text == "" || !h.ss.srv.notices.Load() {
		return
	}
	sid := h.ss.id
	h.send(func(b []byte) []byte { return wire.AppendNotice(b, sid, text) })
}
