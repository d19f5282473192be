package itemmap

// Compaction is a CLI's compaction of its context (Claude Code's /compact
// or its automatic one, Codex's context compaction), as an editor that
// shows compactions presents it: one entity per ID that starts in
// progress and ends once, never saved. The conversation keeps what it
// kept before: the notice a finished compaction adds (Change.Compaction
// names the compaction that notice tells of), which an editor that does
// not show compactions shows instead.
//
// A Compaction value is one step of the entity: Summary, when set, is
// text to append to the summary the compaction kept (the part of it a
// user may read; no CLI's framing), and Status, when set, the state the
// entity is now in (with Error for a failure). A step may carry both:
// the summary first.
type Compaction struct {
	ID      string
	Status  string
	Summary string
	Error   string
}

// Compaction statuses, as ACP names them.
const (
	CompactionInProgress = "in_progress"
	CompactionCompleted  = "completed"
	CompactionFailed     = "failed"
	CompactionCancelled  = "cancelled"
)

// CompactionEnded reports whether status is one a compaction ends in.
func CompactionEnded(status string) bool {
	return status == CompactionCompleted || status == CompactionFailed || status == CompactionCancelled
}
