package wire

import (
	"sync"

	"spbridge/internal/canonjson"
	"spbridge/internal/itemmap"
)

// AppendCompactionUpdate encodes a session/update compaction_update of
// compaction id: its status (when not "": else the one it has), its
// error, and its summary when summary is not nil (as text blocks).
func AppendCompactionUpdate(b []byte, sid, id, status, errText string, summary []string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"compaction_update","compactionId":`...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"status":`...)
	b = canonjson.AppendString(b, status)
	if errText != "" {
		b = append(b, `,"error":`...)
		b = canonjson.AppendString(b, errText)
	}
	if summary != nil {
		b = append(b, `,"summary":[`...)
		for i, s := range summary {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = canonjson.AppendString(b, s)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}}\n"...)
}

// AppendCompactionChunk encodes a session/update compaction_summary_chunk
// of compaction id: text appended to its summary.
func AppendCompactionChunk(b []byte, sid, id, text string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"compaction_summary_chunk","compactionId":`...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"content":{"type":"text","text":`...)
	b = canonjson.AppendString(b, text)
	return append(b, "}}}}\n"...)
}

// Compactions are the compactions one host told the client of: each
// entity starts once and ends once (ACP's rule); one still in progress
// when the turn ends is ended cancelled.
type Compactions struct {
	mu    sync.Mutex
	state map[string]string // compaction id → the status the client has
}

// CompactionStep is what to send for a step of a compaction: a
// compaction_update with status (none when ""), its summary when not nil,
// and a compaction_summary_chunk of chunk (when not ""), before the update
// when chunkFirst is set (the entity is in progress), else after it.
type CompactionStep struct {
	status     string
	summary    []string
	chunk      string
	chunkFirst bool
}

// Step records a step of compaction c and returns what to send. The first
// update of an entity is a compaction_update; a summary streams as chunks
// while it is in progress, and rides on the update that ends it as its
// first (or after it completed); nothing follows a failure or a cancel.
func (cs *Compactions) Step(c itemmap.Compaction) CompactionStep {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.state == nil {
		cs.state = make(map[string]string)
	}
	prev, seen := cs.state[c.ID]
	if itemmap.CompactionEnded(prev) {
		if c.Summary != "" && prev == itemmap.CompactionCompleted {
			return CompactionStep{status: prev, summary: []string{c.Summary}}
		}
		return CompactionStep{}
	}
	st := CompactionStep{status: c.Status}
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

// Known reports whether the client was told of compaction id: its entity
// then shows what its notice says.
func (cs *Compactions) Known(id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok := cs.state[id]
	return ok
}

// Open returns the compactions still in progress, and marks them
// cancelled.
func (cs *Compactions) Open() []string {
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

// Append appends the lines of step st of compaction id (errText: its
// error, if any), in their order; none when the step sends nothing.
func (st CompactionStep) Append(b []byte, sid, id, errText string) []byte {
	if st.chunk != "" && st.chunkFirst {
		b = AppendCompactionChunk(b, sid, id, st.chunk)
	}
	if st.status != "" {
		b = AppendCompactionUpdate(b, sid, id, st.status, errText, st.summary)
	}
	if st.chunk != "" && !st.chunkFirst {
		b = AppendCompactionChunk(b, sid, id, st.chunk)
	}
	return b
}

// None reports whether the step sends nothing.
func (st CompactionStep) None() bool { return st.chunk == "" && st.status == "" }
