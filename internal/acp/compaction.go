package acp

import (
	"sync"

	"spbridge/internal/acp/wire"
	"spbridge/internal/itemmap"
)

// compactions are the compactions one host told the client of: each
// entity starts once and ends once (ACP's rule); one still in progress
// when the turn ends is ended cancelled.
type compactions struct {
	mu    sync.Mutex
	state map[string]string // compaction id → the status the client has
}

// compactionStep is what to send for a step of a compaction: a
// compaction_update with status (none when ""), its summary when not nil,
// and a compaction_summary_chunk of chunk (when not ""), before the update
// when chunkFirst is set (the entity is in progress), else after it.
type compactionStep struct {
	status     string
	summary    []string
	chunk      string
	chunkFirst bool
}

// step records a step of compaction c and returns what to send. The first
// update of an entity is a compaction_update; a summary streams as chunks
// while it is in progress, and rides on the update that ends it as its
// first (or after it completed); nothing follows a failure or a cancel.
func (cs *compactions) step(c itemmap.Compaction) compactionStep {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.state == nil {
		cs.state = make(map[string]string)
	}
	prev, seen := cs.state[c.ID]
	if itemmap.CompactionEnded(prev) {
		if c.Summary != "" && prev == itemmap.CompactionCompleted {
			return compactionStep{status: prev, summary: []string{c.Summary}}
		}
		return compactionStep{}
	}
	st := compactionStep{status: c.Status}
	if !seen && st.status == "" {
		st.status = itemmap.CompactionInProgress
	}
	switch {
	case c.Summary == "" || st.status == itemmap.CompactionFailed || st.status == itemmap.CompactionCancelled:
	case seen || st.status == itemmap.CompactionInProgress:
		st.chunk, st.chunkFirst = c.Summary, seen
	default:
		st.summary = []string{c.Summary}
	}
	if st.status != "" {
		cs.state[c.ID] = st.status
	}
	return st
}

// known reports whether the client was told of compaction id: its entity
// then shows what its notice says.
func (cs *compactions) known(id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok := cs.state[id]
	return ok
}

// open returns the compactions still in progress, and marks them
// cancelled.
func (cs *compactions) open() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var ids []string
	for id, status := range cs.state {
		if !itemmap.CompactionEnded(status) {
			ids = append(ids, id)
			cs.state[id] = itemmap.CompactionCancelled
		}
	}
	return ids
}

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
	st := h.compacts.step(c)
	sid, id := h.ss.id, c.ID
	if st.chunk != "" && st.chunkFirst {
		h.send(func(b []byte) []byte { return wire.AppendCompactionChunk(b, sid, id, st.chunk) })
	}
	if st.status != "" {
		h.send(func(b []byte) []byte { return wire.AppendCompactionUpdate(b, sid, id, st.status, c.Error, st.summary) })
	}
	if st.chunk != "" && !st.chunkFirst {
		h.send(func(b []byte) []byte { return wire.AppendCompactionChunk(b, sid, id, st.chunk) })
	}
}

// compactionNotice reports whether the notice of compaction c is shown
// by its entity, to a client that shows compactions: the one the client
// was told of, or, for a compaction whose steps it did not hear of (one
// between turns), an entity that completed, sent now.
func (h *acpHost) compactionNotice(c *itemmap.Compaction) bool {
	if c == nil || c.ID == "" || !h.ss.srv.compaction.Load() {
		return false
	}
	if !h.compacts.known(c.ID) {
		h.Compaction(itemmap.Compaction{ID: c.ID, Status: itemmap.CompactionCompleted})
	}
	return true
}

// endCompactions ends, cancelled, the compactions the turn left in
// progress (ACP wants each to end once).
func (h *acpHost) endCompactions() {
	sid := h.ss.id
	for _, id := range h.compacts.open() {
		h.send(func(b []byte) []byte {
			return wire.AppendCompactionUpdate(b, sid, id, itemmap.CompactionCancelled, "", nil)
		})
	}
}
