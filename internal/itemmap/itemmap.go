// Package itemmap turns the event streams of the coding-agent CLIs into
// chat-panel items, history and usage. It is pure: events in, changes out,
// no I/O and no clock.
package itemmap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"spbridge/internal/archive"
)

// A Mapper maps one CLI's event stream, a line at a time, to item
// changes, history and usage: Claude (stream-json), Codex (exec --json)
// and CodexApp (app-server JSON-RPC) are the three. Line maps a line as
// it arrives; InTurn says whether a turn has begun and not ended; Finish
// ends the turn in progress (interrupted, or failed with text and detail)
// as if the CLI had ended it. A Mapper keeps nothing of a turn once it
// ended, and is not safe for concurrent use.
type Mapper interface {
	Line(line []byte) Result
	InTurn() bool
	Finish(interrupted bool, text, detail string) Result
}

var (
	_ Mapper    = (*Claude)(nil)
	_ Mapper    = (*Codex)(nil)
	_ Mapper    = (*CodexApp)(nil)
	_ ReadAhead = (*Claude)(nil)
	_ Recorded  = (*CodexApp)(nil)
)

// ReadAhead is a Mapper whose lines may be read (validated, their values
// laid out) ahead of their mapping, on another goroutine: NewLines makes
// a batch to read them into, and MapRead maps line i of a batch as Line
// would map it. A caller that has a whole stream to map (replay) reads it
// so when its mapper offers it; lines are mapped in the order of the
// stream, each once, one way or the other.
type ReadAhead interface {
	NewLines() Lines
	MapRead(b Lines, i int) Result
}

// Lines is a batch of lines read ahead of their mapping (ReadAhead).
// Read reads a line into it, after the lines there, on any goroutine; the
// line's bytes must stay as they are until Reset, which empties the batch
// and keeps its memory for the next. Line and Len are the lines read.
type Lines interface {
	Read(line []byte)
	Line(i int) []byte
	Len() int
	Reset()
}

// Recorded is a Mapper whose CLI's conversations may be recorded in both
// directions, a record a line: Unwrap is the line a record holds for the
// mapper (a line that is no record is itself), and false for a record of
// what went the other way, which the mapper does not read.
type Recorded interface {
	Unwrap(line []byte) ([]byte, bool)
}

// Op says what a Change did to an item.
type Op int

// Ops.
const (
	OpAdd    Op = iota + 1 // a new item, to append to the panel
	OpUpdate               // an item changed (same id)
	OpRemove               // an item was withdrawn (a block the CLI abandoned)
)

func (o Op) String() string {
	switch o {
	case OpAdd:
		return "add"
	case OpUpdate:
		return "update"
	case OpRemove:
		return "remove"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Change is one change to one item. Item is the item as it is now; the
// mapper keeps changing it on later lines, so a receiver that keeps it across
// calls must Clone it. Delta is the text appended by this change when the
// item's text grew by streaming, "" otherwise; when it is set, the change is
// exactly that (an OpUpdate whose "text" grew by Delta, nothing else
// changed), so a receiver may send the delta instead of the item.
type Change struct {
	Op    Op
	Item  archive.Item
	Delta string
	// Tool is how an editor presents the tool item Item (nil: no
	// presentation beyond the item; always nil for items other than tool,
	// webSearch and directions). It is never saved: see ToolView.
	Tool *ToolView
	// Plan, when not nil, is the agent's plan as it now stands, whole (it
	// replaces any plan shown before); the change that carries it is the
	// tool call that set it (Claude's TodoWrite, Codex's plan updates).
	Plan []PlanEntry
	// OutputDelta, when set, is what a running command printed since the
	// change before: the change is only that (Tool.Output grew by
	// OutputDelta; Item is as it was), so a receiver that shows no live
	// output may skip it, and one that does may send the delta alone.
	OutputDelta string
	// Compaction, on the notice that a finished compaction adds, names
	// the compaction it tells of (its ID): an editor that shows
	// compactions shows that instead of the notice (see Compaction).
	Compaction *Compaction
}

// The presentation of a tool call: what an editor needs to show it well
// (ACP's kind, title, locations, diffs, command output, the plan panel)
// and what the saved item must not hold.
//
// A format-1 tool item keeps a short summary, a status and a detail
// truncated for display (SPEC §3): conversation.json stays small whatever
// the tools read and wrote. A diff of a Write holds the whole new file, a
// command's output may be megabytes, and a plan is rebuilt by every update
// of the CLI's todo list. So these travel beside the item, in Change.Tool,
// Change.Plan and Approval.Tool, while the turn runs, and are never
// persisted: a conversation reopened later shows its tools from the items
// alone (a title from name and summary, the kind from the name, the
// detail as text).
//
// The views are CLI-neutral: each mapper (Claude's stream-json, Codex's
// exec and app-server streams) fills them from what its CLI reports in the
// tool's input and result, without reading any file (the mappers are
// pure). A view handed out in a Change is never changed afterwards: a
// later change of the same tool carries a new one.

// ToolView is how an editor presents one tool call.
type ToolView struct {
	// Kind is the tool's category, one of the Kind constants (ACP's
	// ToolKind): what icon and layout an editor picks.
	Kind string
	// Title is a short human line saying what the call does, as an editor
	// heads the call with it: "`npm test`", "Read src/app.go", "Search
	// "TODO" in src", "Fetch https://…". Paths are as the CLI gave them.
	Title string
	// Description is what the call is for in the model's words, as the
	// CLI's terminal shows it under the call (Claude's Bash description),
	// "" when none.
	Description string
	// Locations are the files the call reads or changes, each with the
	// first line concerned when known (follow-along).
	Locations []Location
	// Diffs are the changes an edit makes or made, one per file or per
	// hunk where the CLI reports hunks. Before the CLI reports the
	// result they come from the tool's input (what it will change);
	// after, from the result (what it changed).
	Diffs []Diff
	// Output is what a command printed, whole, once known ("" when none
	// or not a command); the renderer caps it for display. While the
	// command runs it is what streamed so far (see Change.OutputDelta);
	// the command's final output replaces it, and need not begin with it
	// (a CLI may stream only part of the output).
	Output string
	// Terminal is set for a call that runs a command (Claude's Bash,
	// Codex's commands): an editor that can may show Output in a
	// terminal of its own.
	Terminal bool
	// ExitCode is the command's exit code once it exited, nil when
	// unknown.
	ExitCode *int
	// ParentID is the item id of the tool call this call runs under (a
	// subagent's tool, under Claude's Task/Agent call), "" when none.
	ParentID string
	// Images are the images the call returned to the model (Claude's Read
	// of a picture, Codex's view_image), in order, once known. The
	// history keeps each as an image block after the call's toolResult,
	// so a save stores it in agent/images/ under the image cap; the item
	// itself says only "image" in its statusText and detail.
	Images []Image
}

// Image is an image a tool returned: its MIME type (one format 1 stores:
// image/png, image/jpeg, image/gif, image/webp) and its bytes. The bytes
// are shared, never changed.
type Image struct {
	MimeType string
	Data     []byte
}

// Tool kinds, as ACP names them.
const (
	KindRead       = "read"
	KindEdit       = "edit"
	KindDelete     = "delete"
	KindMove       = "move"
	KindSearch     = "search"
	KindExecute    = "execute"
	KindThink      = "think"
	KindFetch      = "fetch"
	KindSwitchMode = "switch_mode" // leaving a planning mode (a directions item)
	KindOther      = "other"
)

// Location is a file a tool works on. Path is as the CLI reported it
// (absolute, or relative to the session's working folder); Line is the
// 1-based line, 0 when unknown.
type Location struct {
	Path string
	Line int
}

// Diff is one change to one file: the text OldText (nil when the file is
// new) becomes NewText. They are the whole file or one hunk of it, with
// the context lines the CLI gave. Path is as the CLI reported it.
type Diff struct {
	Path    string
	OldText *string
	NewText string
}

// PlanEntry is one step of the agent's plan: Content (what the step is),
// Status (one of the Plan constants) and Priority (high, medium, low;
// "" when the CLI gives none, shown as medium).
type PlanEntry struct {
	Content  string
	Status   string
	Priority string
}

// Plan entry statuses, as ACP names them.
const (
	PlanPending    = "pending"
	PlanInProgress = "in_progress"
	PlanCompleted  = "completed"
)

// Approval is a permission request from the CLI that waits for the host's
// answer. ItemID names the toolApproval item shown for it; ToolItemID the
// tool item of the call it is about, when the CLI announced the call first.
type Approval struct {
	RequestID  string
	ToolUseID  string
	ToolName   string
	Input      json.RawMessage // the tool's input as the CLI sent it
	ItemID     string
	ToolItemID string
	// Tool is how the call asked about would be presented, from the input
	// in the request (an edit's diffs: the user reviews the change before
	// it is written); nil when the mapper has none.
	Tool *ToolView
	// Cwd is the folder a command asked about runs in: as Codex's request
	// says it; for Claude Code, the folder the process started in, when
	// every command of the session starts there (see Claude); "" when the
	// request is not about a command or its folder is not known.
	Cwd string
	// Reason is why the call is asked about, as the CLI gives it with the
	// request (Codex's justification from the model), "" when none.
	Reason string
	// Escalated reports that the command asks to run outside the CLI's
	// sandbox, or may (the CLI does not say which): Codex's call asked for
	// escalated or additional permissions, or its call is not known (a
	// resumed thread sends no raw calls); Claude's Bash asked to disable
	// its sandbox.
	Escalated bool
}

// Turn statuses.
const (
	TurnCompleted   = "completed"
	TurnFailed      = "failed"
	TurnInterrupted = "interrupted"
)

// TurnEnd is what a finished turn reports: how it ended, its usage and cost,
// the model and session, and the history messages it added (the assistant's
// text and tool calls and the tool results, in the neutral form; the user's
// message is the caller's).
type TurnEnd struct {
	Status    string
	Usage     archive.Usage // this turn's total
	LastRound archive.Usage // the turn's last API request
	CostUSD   json.Number   // this turn's cost as reported by the CLI, "" when none
	Model     string
	SessionID string
	// ContextWindow is the model's context window in tokens as the CLI
	// reported it, 0 when it did not.
	ContextWindow int64
	History       []archive.Message
	// NotStarted is set when the turn failed before the CLI took the
	// message (the program missing, its folder missing, the CLI failing
	// before its first event): nothing happened that the document should
	// keep.
	NotStarted bool
}

// Result is what one line of a stream produced.
type Result struct {
	Changes   []Change
	Approvals []Approval
	// Session is set when the CLI started a session or a turn in one
	// (its id and model).
	Session *Session
	// ControlRequests are requests from the CLI that are not approvals;
	// the caller answers them (with an error when it does not know them).
	ControlRequests []ControlRequest
	// ControlResponses are the request ids the CLI answered.
	ControlResponses []string
	// Compactions are the steps of the CLI's compactions the line
	// reported (see Compaction), to hand the host before Changes.
	Compactions []Compaction
	// End is set when the line ended the turn.
	End *TurnEnd
	// Skipped is set when the line was not a JSON object or not an event this
	// mapper knows; it is counted, not an error.
	Skipped bool
}

// Session is the CLI's session as it reported it.
type Session struct {
	ID    string
	Model string
}

// ControlRequest is a control request from the CLI other than a permission
// request.
type ControlRequest struct {
	RequestID string
	Subtype   string
}

// IDFunc makes item ids.
type IDFunc func() string

// SequentialIDs returns an IDFunc that makes ids 00000000-0000-4000-8000-
// 000000000001, …002 and so on: deterministic ids for replay and tests.
func SequentialIDs() IDFunc {
	n := 0
	return func() string {
		n++
		return sequentialID(n)
	}
}

// sequentialID is fmt.Sprintf("00000000-0000-4000-8000-%012d", n) for
// n >= 0, made without fmt (replay names every item with one).
func sequentialID(n int) string {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	b := make([]byte, 0, 24+max(12, len(d)))
	b = append(b, "00000000-0000-4000-8000-"...)
	for range 12 - len(d) {
		b = append(b, '0')
	}
	b = append(b, d...)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Display limits: item details are truncated for display; the history keeps
// the exact bytes.
const (
	maxDetailArgs   = 4 << 10
	maxDetailOutput = 16 << 10
	maxSummary      = 200
)

// truncate cuts s to at most n bytes on a character boundary, saying how
// much was left out.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes)", len(s)-cut)
}

// writeTruncated writes truncate(s, n) to b.
func writeTruncated(b *strings.Builder, s string, n int) {
	if len(s) <= n {
		b.WriteString(s)
		return
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	b.WriteString(s[:cut])
	b.WriteString("\n… (")
	b.WriteString(strconv.Itoa(len(s) - cut))
	b.WriteString(" more bytes)")
}

// firstLine returns s's first non-empty line, cut to maxSummary bytes.
func firstLine(s string) string {
	s = strings.TrimLeft(s, "\n\r \t")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, "\r \t")
	if len(s) > maxSummary {
		cut := maxSummary
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// countLines counts the lines of s (a final line without newline counts).
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// decodeImage is the image a tool returned as base64 with its MIME type,
// false when format 1 cannot keep it (a type it does not store, bytes that
// are not base64).
func decodeImage(mimeType, data string) (Image, bool) {
	if _, err := archive.NewImageBlock(mimeType, nil); err != nil {
		return Image{}, false
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(b) == 0 {
		return Image{}, false
	}
	return Image{MimeType: mimeType, Data: b}, true
}

// decodeDataURL is the image in a data: URL ("data:image/png;base64,…"),
// false when it is not one format 1 can keep.
func decodeDataURL(url string) (Image, bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return Image{}, false
	}
	meta, data, ok := strings.Cut(rest, ",")
	mimeType, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isB64 {
		return Image{}, false
	}
	return decodeImage(strings.ToLower(mimeType), data)
}

// imageBlocks are the history's image blocks of images.
func imageBlocks(images []Image) []archive.Block {
	var bs []archive.Block
	for _, im := range images {
		if b, err := archive.NewImageBlock(im.MimeType, im.Data); err == nil {
			bs = append(bs, b)
		}
	}
	return bs
}

// imagesText is how a tool item's statusText and detail name the images a
// call returned: "image", "2 images".
func imagesText(n int) string {
	if n == 1 {
		return "image"
	}
	return plural(n, "image")
}

// imagesDetail is the detail's line for the images a call returned:
// "[image/png image, 75 bytes]", one a line.
func imagesDetail(images []Image) string {
	var lines []string
	for _, im := range images {
		lines = append(lines, "["+im.MimeType+" image, "+plural(len(im.Data), "byte")+"]")
	}
	return strings.Join(lines, "\n")
}

// setFailure adds a turn's failure item to r, or, when the turn has one
// already (*failure), fills in its detail if it had none: a turn shows one
// failure.
func setFailure(newID IDFunc, failure **archive.Item, text, detail string, r *Result) {
	if f := *failure; f != nil {
		if detail != "" && f.String("detail") == "" {
			f.Set("detail", detail)
			r.Changes = append(r.Changes, Change{Op: OpUpdate, Item: *f})
		}
		return
	}
	it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeFailure, "text": text})
	if detail != "" {
		it.Set("detail", detail)
	}
	*failure = &it
	r.Changes = append(r.Changes, Change{Op: OpAdd, Item: it})
}
