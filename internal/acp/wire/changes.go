package wire

import "spbridge/internal/itemmap"

// What a turn's change set shows as diffs at its end: each side of a file
// at most MaxChangeText bytes, and MaxChangesText bytes over all of them;
// a file past either is named by the summary text only.
const (
	MaxChangeText  = 4 * MaxText
	MaxChangesText = 16 * MaxText
)

// ChangesTool is the completed edit call that shows what a turn changed
// in the session's folders: summary (the notice's words) as its text,
// and diffs of the text files (paths absolute, OldText nil for a created
// file).
func ChangesTool(id, summary string, diffs []itemmap.Diff) Tool {
	return Tool{update: "tool_call", id: id, title: "Files changed in this turn", kind: "edit", status: "completed",
		diffs: diffs, content: summary, hasContent: summary != ""}
}
