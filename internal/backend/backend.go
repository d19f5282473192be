// Package backend is the contract between a session and a CLI, and the
// turn policy: a CLI's row (Plugin: its names, how its backend is made
// from its own settings, its program, log-in, mapper, models, tool
// vocabulary and the scope of an "always" answer (Grant), its
// not-logged-in failures, the command that continues its sessions, its
// store of past sessions and what trust weighs of it), the interface a
// session drives a backend through, the
// vocabulary of a turn (message, host, permission answer, the end of a
// turn the CLI never took), the supervision every CLI process needs
// (common options, finding the program, its version, its stderr tail and
// its reaping), and the one turn driver (Driver): the idle timeout and its
// exception while the host is asked, interrupt and its escalation, the
// approvals asked on goroutines of their own, the batching of a read's
// changes, and the end of a turn the CLI never took. Each CLI backend
// (Claude Code; codex exec; the codex app-server) supplies only its
// protocol's side of a turn, a Conn: what a line means, how to answer a
// request, how to ask the CLI to stop; starting the CLI and sending the
// message stay the backend's own.
package backend

import (
	"context"
	"encoding/json"

	"spbridge/internal/archive"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// Backend runs the turns of one open conversation on a CLI.
type Backend interface {
	// Name is the backend's name as the command line and the audit log say
	// it: its row's Name (Plugin.Name).
	Name() string
	// Turn sends msg and runs the turn to its end, reporting item changes
	// and permission requests to h. It always returns a non-nil TurnEnd: a
	// failure is a failed turn with a failure item, an interrupt an
	// interrupted turn; every item so far is kept. A turn the CLI never
	// took is marked NotStarted. Cancelling ctx interrupts the turn. Turn is
	// not reentrant.
	Turn(ctx context.Context, msg Message, h Host) *itemmap.TurnEnd
	// Interrupt asks the running turn to stop; it is safe to call from
	// another goroutine while Turn runs, and does nothing without a turn.
	Interrupt()
	// Close ends the CLI.
	Close() error
	// Started reports whether a CLI session was established in this open.
	Started() bool
	// Program and Version name the CLI for the audit log.
	Program() (string, error)
	Version() string
	// StderrTail and ExitStatus describe the CLI process for the audit log.
	StderrTail() string
	ExitStatus() string
}

// Titler is a backend whose CLI names the sessions it starts: spbridge
// gives each the conversation's title, so that the CLI's own list of its
// sessions (claude --resume's picker, codex's thread names) shows the
// conversation, and not the "# Conversation so far" a session told what
// was said before begins with. A session the CLI continues (--resume,
// thread/resume) keeps the name it has. CLI implements it; a
// backend whose CLI has no way to name a session ignores it.
type Titler interface {
	// SetTitle names the CLI sessions started from now on ("": the CLI
	// names them itself).
	SetTitle(title string)
}

// Image is an image attached to a message.
type Image struct {
	MimeType string
	Data     []byte
}

// Message is what the user sends in a turn. Text is the user's words only;
// Context is what the CLI is told before them (after a reopen, the "#
// Conversation so far" prefix of internal/restore), never the user's words.
// A backend writes Context and Text together to its CLI (CLIText) and reads
// the user's words from Text alone; Context never goes into the items, the
// history or a log.
type Message struct {
	Context string
	Text    string
	Images  []Image
}

// CLIText is the text the CLI receives: Context, then Text.
func (m Message) CLIText() string { return m.Context + m.Text }

// Decision is the host's answer to a permission request.
type Decision struct {
	Allow        bool
	UpdatedInput json.RawMessage // optional, with Allow
	Message      string          // optional, with a denial
	// Always, with Allow, is what the user allowed for the rest of the
	// session: the backend tells its CLI (Claude a session rule, Codex
	// its "for this session" decision) so that it need not ask again.
	Always *Grant
}

// Host receives a turn's item changes and answers its permission requests.
type Host interface {
	// Change is called for every item change, in order, as it happens.
	Change(itemmap.Change)
	// Approve asks about a permission request and returns the answer. It may
	// block; ctx is cancelled when the turn is interrupted or ends.
	Approve(ctx context.Context, a itemmap.Approval) Decision
}

// Idler is a Host that wants to know when the backend has handled every
// line its CLI wrote so far (it would wait for the next one): what it was
// told since may go out as one batch.
type Idler interface {
	Idle()
}

// Idle tells h, when it is an Idler, that the backend has handled every
// line its CLI wrote so far.
func Idle(h Host) {
	if i, ok := h.(Idler); ok {
		i.Idle()
	}
}

// Compactor is a Host that shows the CLI's compactions as they go (see
// itemmap.Compaction); any other host sees only the notice a finished
// compaction adds.
type Compactor interface {
	Compaction(itemmap.Compaction)
}

// Compacted tells h, when it is a Compactor, a step of a compaction.
func Compacted(h Host, c itemmap.Compaction) {
	if k, ok := h.(Compactor); ok {
		k.Compaction(c)
	}
}

// AuthStatus is whether a CLI is logged in, without any secret: how, and
// where the credential comes from (an environment variable's name, never
// its value) when the CLI says.
type AuthStatus struct {
	LoggedIn bool   `json:"loggedIn"`
	Method   string `json:"method,omitempty"`
	Source   string `json:"source,omitempty"`
}

// InterruptedBeforeStart reports a turn interrupted before the CLI took
// it: an "Interrupted." notice and an interrupted TurnEnd marked
// NotStarted.
func InterruptedBeforeStart(newID itemmap.IDFunc, h Host) *itemmap.TurnEnd {
	Notice(newID, h, "Interrupted.")
	return &itemmap.TurnEnd{Status: itemmap.TurnInterrupted, NotStarted: true}
}

// FailBeforeStart reports a turn that failed before the CLI took it: one
// failure item (text, and detail when it says more) and a failed TurnEnd
// with nothing else, marked NotStarted. Such a turn establishes no CLI
// session. The detail is masked (cliproc.MaskCredentials): it may quote
// the CLI's stderr.
func FailBeforeStart(newID itemmap.IDFunc, h Host, text, detail string) *itemmap.TurnEnd {
	it := newItem(archive.TypeFailure, newID, text)
	if detail = cliproc.MaskCredentials(detail); detail != "" && detail != text {
		it.Set("detail", detail)
	}
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: itemmap.TurnFailed, NotStarted: true}
}

// Notice adds a notice item saying text, named by newID when it is set.
func Notice(newID itemmap.IDFunc, h Host, text string) {
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: newItem(archive.TypeNotice, newID, text)})
}

// CompactionNotice adds the notice text of a finished compaction, naming
// it (Change.Compaction): the notice a host that does not show
// compactions shows.
func CompactionNotice(newID itemmap.IDFunc, h Host, text, id string) {
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: newItem(archive.TypeNotice, newID, text), Compaction: &itemmap.Compaction{ID: id}})
}

func newItem(typ string, newID itemmap.IDFunc, text string) archive.Item {
	it := archive.NewItem(typ)
	if newID != nil {
		it.Set("id", newID())
	}
	it.Set("text", text)
	return it
}
