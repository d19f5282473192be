package acp

import (
	"path/filepath"

	"spbridge/internal/acp/wire"
	"spbridge/internal/itemmap"
	"spbridge/internal/session"
)

// changes shows what a turn changed in the session's folders at its end:
// a completed edit call titled "Files changed in this turn" whose content
// is the notice's words and a diff of each text file (within
// wire.MaxChangeText a side, wire.MaxChangesText in all), which clients
// render as they render an edit's diffs. The prompt's answer carries the
// structured change set in _meta.spbridge.changes (turnAnswer).
func (h *acpHost) changes(res *session.TurnResult) {
	if res.Notice == nil || res.Changes.Empty() {
		return
	}
	var diffs []itemmap.Diff
	total := 0
	for _, f := range res.Changes.Files {
		old, now, ok := f.Texts(wire.MaxChangeText)
		if !ok {
			continue
		}
		n := len(now)
		if old != nil {
			n += len(*old)
		}
		if total+n > wire.MaxChangesText {
			continue
		}
		total += n
		path := filepath.Join(f.Root, filepath.FromSlash(f.Path))
		diffs = append(diffs, itemmap.Diff{Path: path, OldText: old, NewText: now})
	}
	h.sendTool(wire.ChangesTool("changes-"+res.Notice.ID(), res.Notice.String("text"), diffs))
}
