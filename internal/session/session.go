// Package session holds one open conversation: its package, the backend
// that runs its turns, and the rules between them — the user's message
// becomes an item and a history message, item changes reach the
// conversation as they happen, and a turn's end brings its history, usage
// and cost in.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/prices"
	"spbridge/internal/restore"
)

// Session is an open conversation. Its methods are not safe for concurrent
// use, except Interrupt.
type Session struct {
	Pkg      *archive.Package
	Backend  backend.Backend
	Provider string // the archive's provider name for this backend
	// Restore decides when the "# Conversation so far" prefix is sent; nil
	// for a conversation that was not restored from disk.
	Restore *restore.State
	// AuditDir is the state folder the audit log is written under; "" writes
	// none.
	AuditDir string
	// AuditQueue, when set, appends the audit records in the background
	// (encoded when the turn ends, written in order; its Flush waits for
	// them): Send does not wait for the disk, and an append that fails is
	// reported by the queue, not in TurnResult.AuditErr.
	AuditQueue *audit.Queue
	// Cwd is the folder the CLI runs in, for the audit log.
	Cwd string
	// Now gives the time for the audit log (time.Now when nil).
	Now func() time.Time
}

// TurnResult is how a turn ended.
type TurnResult struct {
	End      *itemmap.TurnEnd
	UserItem archive.Item
	// AuditErr is why the turn's audit record could not be written, or nil.
	AuditErr error
}

// ErrNotStarted is matched by the error of a turn that never started: the
// CLI missing or not runnable, its working folder missing, or the CLI
// failing before it took the message. Such a turn leaves the conversation
// as it was.
var ErrNotStarted = errors.New("the turn did not start")

// Send runs one turn: text (and images) from the user. The user's item is
// added first and reported to h like every other change; the conversation is
// updated as the turn goes. After a restore the CLI receives the "#
// Conversation so far" prefix before text; the items, the history and the
// audit log only ever hold text itself. It returns when the turn ended
// (completed, failed or interrupted), with its audit record written (or,
// with an AuditQueue, queued). Saving is the caller's (Pkg.Save).
//
// A turn that never started (itemmap.TurnEnd.NotStarted, or a working
// folder or program that cannot be used, found before the CLI is asked)
// changes nothing: the conversation's items are put back as they were, h is
// sent an OpRemove of the user's item, no history, usage or audit record is
// added, an unreadable agent folder stays preserved (Pkg.BeginTurn is only
// called once the CLI took the message), and Send returns an error that
// matches ErrNotStarted and carries the failure's text. The failure item the
// backend already announced stays with h, which may show it (it says why
// nothing happened; an ACP client cannot withdraw a message chunk anyway),
// but it is not part of the conversation and is never saved. A turn that
// reached the CLI but never reported its end is a failed turn with a failure
// item saying so; the user's message is kept.
func (s *Session) Send(ctx context.Context, text string, images []backend.Image, h backend.Host) (*TurnResult, error) {
	conv := s.Pkg.Conv
	userMsg := archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(text)}}
	for _, img := range images {
		b, err := archive.NewImageBlock(img.MimeType, img.Data)
		if err != nil {
			return nil, err
		}
		userMsg.Content = append(userMsg.Content, b)
	}
	if err := s.preflight(); err != nil {
		return nil, err
	}
	// Nothing the CLI does between turns lands in the conversation while
	// this turn changes it.
	release := s.Hold()
	defer release()
	cliText := text
	if s.Restore != nil {
		cliText = s.Restore.Message(s.Backend.Name(), conv.Items, conv.History, text)
	}
	first := len(conv.Items)
	user := archive.NewItem(archive.TypeUser)
	user.Set("text", text)
	if len(images) > 0 {
		user.Set("hasImage", true)
	}
	conv.Items = append(conv.Items, user)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: user})

	ap := &applier{conv: conv, host: h, first: first}
	end := s.Backend.Turn(ctx, backend.Message{Text: cliText, Images: images}, ap)
	if end != nil && end.NotStarted {
		msg := failureText(conv.Items[min(first, len(conv.Items)):])
		conv.Items = ap.before()
		h.Change(itemmap.Change{Op: itemmap.OpRemove, Item: user})
		if msg == "" {
			msg = s.Backend.Name() + " did not take the message"
		}
		return nil, fmt.Errorf("%w: %s", ErrNotStarted, msg)
	}
	// The CLI took the message: the turn replaces an unreadable conversation.
	s.Pkg.BeginTurn()
	if end == nil {
		it := archive.NewItem(archive.TypeFailure)
		it.Set("text", "The turn ended without "+s.Backend.Name()+" reporting its end; what arrived is kept.")
		ap.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
		end = &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	}
	if s.Backend.Started() {
		if s.Restore == nil {
			s.Restore = &restore.State{}
		}
		s.Restore.Established(s.Backend.Name())
	}
	// What the turn keeps was read from the CLI's lines: its strings are
	// given memory of their own, so the conversation holds its text and not
	// every line a piece of it came from; a text both an item and the
	// history hold is held once.
	archive.CompactTurn(conv.Items[min(first, len(conv.Items)):], end.History)
	conv.History = append(conv.History, userMsg)
	Apply(conv, end, s.Provider)
	res := &TurnResult{End: end, UserItem: user}
	if s.AuditDir != "" {
		res.AuditErr = s.audit(text, userMsg, conv.Items[min(first, len(conv.Items)):], end, "")
	}
	return res, nil
}

// Hold keeps the backend from telling what its CLI does between turns
// until release is called, where the backend tells it at all
// (backend.Background); Send holds it for its turn. A caller that does
// more around a turn (answers its prompt, saves) may hold it for longer.
func (s *Session) Hold() (release func()) {
	if bg, ok := s.Backend.(backend.Background); ok {
		return bg.Hold()
	}
	return func() {}
}

// Watch attaches h to hear what the backend's CLI does between turns, and
// reports whether the backend tells that (backend.Background). h is called
// on the backend's goroutine, never while Send runs (see Hold); it brings
// each change into the conversation with ApplyChange and each end with
// ApplyOwnTurn, under whatever guards the conversation. Without a host the
// backend keeps what happens between turns for the next turn.
func (s *Session) Watch(h backend.Between) bool {
	bg, ok := s.Backend.(backend.Background)
	if ok {
		bg.Watch(h)
	}
	return ok
}

// ApplyChange brings an item change into conv's items, as a turn's changes
// are brought in: an add appends the item, a removal takes it out (looked
// for from the end), an update changed the item in place already.
func ApplyChange(conv *archive.Conversation, c itemmap.Change) {
	items := conv.Items
	switch c.Op {
	case itemmap.OpAdd:
		conv.Items = append(items, c.Item)
	case itemmap.OpUpdate:
		// The mapper changes the item in place; nothing to copy.
	case itemmap.OpRemove:
		// The item is the turn's, near the end: look from there, so a
		// removal costs nothing of the conversation's length.
		id := c.Item.ID()
		for i := len(items) - 1; i >= 0; i-- {
			if items[i].ID() == id {
				conv.Items = slices.Delete(items, i, i+1)
				break
			}
		}
	}
}

// ApplyOwnTurn brings the end of a turn the CLI ran on its own between
// turns (Claude Code passing on a background subagent's report) into the
// conversation like a turn's: its history after what is there, its usage
// and cost into the totals (Apply). There is no user message: the CLI
// wrote its own. Like every turn it gets an audit record, with items (what
// the CLI showed between turns), an empty user line and origin "cli"; the
// error is that record's.
func (s *Session) ApplyOwnTurn(end *itemmap.TurnEnd, items []archive.Item) error {
	if end == nil {
		return nil
	}
	archive.CompactHistory(end.History)
	Apply(s.Pkg.Conv, end, s.Provider)
	if s.AuditDir == "" {
		return nil
	}
	return s.audit("", archive.Message{}, items, end, OriginCLI)
}

// OriginCLI is the audit record's origin of a turn the CLI ran on its own
// (a record without an origin is a turn the user's message began).
const OriginCLI = "cli"

// preflight refuses a turn that cannot start, before anything changes: a
// working folder that is not there, or a program named by the backend's
// environment variable that cannot be run (the backend would only say the
// CLI is not installed).
func (s *Session) preflight() error {
	if s.Cwd != "" {
		fi, err := os.Stat(s.Cwd)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: the working folder %s does not exist", ErrNotStarted, s.Cwd)
		case err != nil:
			return fmt.Errorf("%w: the working folder: %v", ErrNotStarted, err)
		case !fi.IsDir():
			return fmt.Errorf("%w: the working folder %s is not a folder", ErrNotStarted, s.Cwd)
		}
	}
	name := backend.ProgramVar(s.Backend.Name())
	if v := os.Getenv(name); v != "" {
		if _, err := s.Backend.Program(); err != nil {
			return fmt.Errorf("%w: %s is set to %q, which cannot be run (%v); set it to the path of %s or unset it",
				ErrNotStarted, name, v, err, s.Backend.Name())
		}
	}
	return nil
}

// maxDetail bounds how much of a failure's detail a not-started turn's
// error carries.
const maxDetail = 2048

// failureText is the text (and the detail, when it says more) of the
// failure items among items, for the error of a turn that never started.
func failureText(items []archive.Item) string {
	var parts []string
	for _, it := range items {
		if it.Type() != archive.TypeFailure {
			continue
		}
		t := it.String("text")
		switch d := strings.TrimSpace(it.String("detail")); {
		case d == "" || strings.Contains(t, d):
		case len(d) <= 200 && !strings.Contains(d, "\n"):
			t += " (" + d + ")"
		default:
			// A stderr tail: its last lines say the most.
			if len(d) > maxDetail {
				d = d[len(d)-maxDetail:]
				if i := strings.IndexByte(d, '\n'); i >= 0 {
					d = d[i+1:]
				}
				d = strings.ToValidUTF8(d, "")
			}
			t += ":\n" + d
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "; ")
}

// audit appends the turn's record to the conversation's audit log; origin,
// when set, says who began the turn.
func (s *Session) audit(text string, userMsg archive.Message, items []archive.Item, end *itemmap.TurnEnd, origin string) error {
	conv := s.Pkg.Conv
	path, err := audit.Path(s.AuditDir, conv.Identity())
	if err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	program, _ := s.Backend.Program()
	itemValues := make([]any, len(items))
	for i, it := range items {
		itemValues[i] = it.Map()
	}
	var images []any
	for _, b := range userMsg.Content {
		if b.Type() == archive.BlockImage {
			images = append(images, map[string]any{"mimeType": b.String("mimeType"), "sha256": b.String("sha256")})
		}
	}
	pkg, _ := filepath.Abs(s.Pkg.Dir)
	record := map[string]any{
		"time":           now().UTC().Format(time.RFC3339Nano),
		"backend":        s.Backend.Name(),
		"program":        program,
		"programVersion": s.Backend.Version(),
		"model":          end.Model,
		"cwd":            s.Cwd,
		"package":        pkg,
		"user":           text,
		"images":         orEmpty(images),
		"items":          itemValues,
		"status":         end.Status,
		"usage":          usageValue(end.Usage),
		"lastRoundUsage": usageValue(end.LastRound),
		"sessionID":      end.SessionID,
		"exitStatus":     s.Backend.ExitStatus(),
		"stderrTail":     s.Backend.StderrTail(),
	}
	if end.CostUSD != "" {
		record["costUSD"] = end.CostUSD
	}
	if origin != "" {
		record["origin"] = origin
	}
	if s.AuditQueue != nil {
		return s.AuditQueue.Append(path, record)
	}
	return audit.Append(path, record)
}

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// usageValue is a usage as format 1 writes it.
func usageValue(u archive.Usage) any {
	c := archive.Conversation{Usage: u}
	return c.Value()["usage"]
}

// Interrupt asks the running turn to stop.
func (s *Session) Interrupt() { s.Backend.Interrupt() }

// Close ends the backend's CLI.
func (s *Session) Close() error { return s.Backend.Close() }

// applier keeps the conversation's items in step with a turn's changes
// before passing them on.
type applier struct {
	conv  *archive.Conversation
	host  backend.Host
	first int            // the conversation's item count before the turn
	kept  []archive.Item // its items then, copied before the turn's first removal
}

func (a *applier) Change(c itemmap.Change) {
	if c.Op == itemmap.OpRemove && a.kept == nil {
		// A removal moves items within the list: keep the items the turn
		// began with, which a turn that never started puts back.
		a.kept = slices.Clone(a.conv.Items[:a.first])
	}
	ApplyChange(a.conv, c)
	a.host.Change(c)
}

// before returns the items the conversation had before the turn, without
// copying them unless a removal moved them. The list has no room to grow,
// so an append makes a new one and leaves the turn's list as it was.
func (a *applier) before() []archive.Item {
	if a.kept != nil {
		return a.kept
	}
	return a.conv.Items[:a.first:a.first]
}

// Idle passes the backend's report that it handled every line so far on
// to the host.
func (a *applier) Idle() { backend.Idle(a.host) }

func (a *applier) Approve(ctx context.Context, ap itemmap.Approval) backend.Decision {
	return a.host.Approve(ctx, ap)
}

// Apply brings a turn's end into the conversation: its history, its usage
// into the total, the last request's usage, the cost, and the provider and
// model it ran on. The cost is reported while every turn's cost came from
// the CLI; estimated once a turn's had to come from the price table; unknown
// once a turn had neither.
func Apply(conv *archive.Conversation, end *itemmap.TurnEnd, provider string) {
	if end == nil {
		return
	}
	conv.History = append(conv.History, end.History...)
	hadUsage := !usageZero(conv.Usage)
	turnUsage := !usageZero(end.Usage)
	if turnUsage {
		conv.Usage = conv.Usage.Add(end.Usage)
		conv.LastRoundUsage = end.LastRound
	}
	cost := &conv.EstimatedCost
	if cost.Kind == "" {
		cost.Kind = archive.CostUnknown
	}
	// A conversation with no usage yet has no cost to speak of: its first
	// priced turn decides the kind.
	fresh := !hadUsage && cost.Dollars == ""
	switch est, estimated := prices.Estimate(end.Model, end.Usage); {
	case end.CostUSD != "":
		switch {
		case fresh:
			cost.Kind, cost.Dollars = archive.CostReported, end.CostUSD
		case cost.Kind == archive.CostReported || cost.Kind == archive.CostEstimated:
			cost.Dollars = archive.AddNumbers(cost.Dollars, end.CostUSD)
		}
	case turnUsage && estimated:
		switch {
		case fresh:
			cost.Kind, cost.Dollars = archive.CostEstimated, est
		case cost.Kind == archive.CostReported || cost.Kind == archive.CostEstimated:
			cost.Kind, cost.Dollars = archive.CostEstimated, archive.AddNumbers(cost.Dollars, est)
		}
	case turnUsage:
		cost.Kind, cost.Dollars = archive.CostUnknown, ""
	}
	if provider != "" && end.Status != "" {
		conv.Provider = provider
	}
	if end.Model != "" {
		conv.Model = end.Model
	}
}

func usageZero(u archive.Usage) bool {
	for _, n := range []string{string(u.Input), string(u.Output), string(u.CacheRead), string(u.CacheWrite)} {
		if n != "" && n != "0" {
			return false
		}
	}
	return true
}

// Describe is a one-line account of how a turn ended, for logs.
func Describe(end *itemmap.TurnEnd) string {
	if end == nil {
		return "no turn"
	}
	s := end.Status
	if end.CostUSD != "" {
		s += fmt.Sprintf(", $%s", end.CostUSD)
	}
	return s
}
