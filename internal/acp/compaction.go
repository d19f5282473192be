package acp

import (
	"spbridge/internal/acp/wire"
	"spbridge/internal/itemmap"
)

// Compaction shows a step of the CLI's compaction to a client that shows
// compactions (backend.Compactor); any other client sees only its notice.
func (h *acpHost) Compaction(c itemmap.Compaction) {
	defer func() {
		if r := recover(); r != nil {
			h.recovered("a compaction", r)
		}
	}()
	if c.ID == "" || !h.ss.srv.compaction.Load() {
		return
	}
	st := h.compacts.Step(c)
	if st.None() {
		return
	}
	sid, id := h.ss.id, c.ID
	h.send(func(b []byte) []byte { return st.Append(b, sid, id, c.Error) })
}

// compactionNotice reports whether the notice of compaction c is shown
// by its entity, to a client that shows compactions: the one the client
// was told of, or, for a compaction whose steps it did not hear of (one
// between turns), an entity that completed, sent now.
func (h *acpHost) compactionNotice(c *itemmap.Compaction) bool {
	if c == nil || c.ID == "" || !h.ss.srv.compaction.Load() {
		return false
	}
	if !h.compacts.Known(c.ID) {
		h.Compaction(itemmap.Compaction{ID: c.ID, Status: itemmap.CompactionCompleted})
	}
	return true
}

// endCompactions ends, cancelled, the compactions the turn left in
// progress (ACP wants each to end once).
func (h *acpHost) endCompactions() {
	sid := h.ss.id
	for _, id := range h.compacts.Open() {
		h.send(func(b []byte) []byte {
			return wire.AppendCompactionUpdate(b, sid, id, itemmap.CompactionCancelled, "", nil)
		})
	}
}
