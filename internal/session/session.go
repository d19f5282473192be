// Package session holds one open conversation: its package, the backend
// that runs its turns, and the rules between them — the user's message
// becomes an item and a history message, item changes reach the
// conversation as they happen, and a turn's end brings its history, usage
// and cost in.
package session

import (
	"context"
	"fmt"
	"slices"

	"spbridge/internal/archive"
	"spbridge/internal/claude"
	"spbridge/internal/itemmap"
)

// Backend runs turns on a CLI.
type Backend interface {
	// Turn runs one turn to its end; see claude.Backend.Turn.
	Turn(ctx context.Context, msg claude.Message, h claude.Host) *itemmap.TurnEnd
	// Interrupt asks the running turn to stop.
	Interrupt()
	// Close ends the CLI.
	Close() error
}

// Host is told about item changes and asked about permission requests.
type Host = claude.Host

// Session is an open conversation. Its methods are not safe for concurrent
// use, except Interrupt.
type Session struct {
	Pkg      *archive.Package
	Backend  Backend
	Provider string // the archive's provider name for this backend
}

// Image is an image the user attaches.
type Image = claude.Image

// TurnResult is how a turn ended.
type TurnResult struct {
	End      *itemmap.TurnEnd
	UserItem archive.Item
}

// Send runs one turn: text (and images) from the user. The user's item is
// added first and reported to h like every other change; the conversation is
// updated as the turn goes. It returns when the turn ended (completed,
// failed or interrupted). Saving is the caller's (Pkg.Save).
func (s *Session) Send(ctx context.Context, text string, images []Image, h Host) (*TurnResult, error) {
	conv := s.Pkg.Conv
	userMsg := archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(text)}}
	for _, img := range images {
		b, err := archive.NewImageBlock(img.MimeType, img.Data)
		if err != nil {
			return nil, err
		}
		userMsg.Content = append(userMsg.Content, b)
	}
	s.Pkg.BeginTurn()
	user := archive.NewItem(archive.TypeUser)
	user.Set("text", text)
	if len(images) > 0 {
		user.Set("hasImage", true)
	}
	conv.Items = append(conv.Items, user)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: user})

	end := s.Backend.Turn(ctx, claude.Message{Text: text, Images: images}, &applier{conv: conv, host: h})
	conv.History = append(conv.History, userMsg)
	Apply(conv, end, s.Provider)
	return &TurnResult{End: end, UserItem: user}, nil
}

// Interrupt asks the running turn to stop.
func (s *Session) Interrupt() { s.Backend.Interrupt() }

// Close ends the backend's CLI.
func (s *Session) Close() error { return s.Backend.Close() }

// applier keeps the conversation's items in step with a turn's changes
// before passing them on.
type applier struct {
	conv *archive.Conversation
	host Host
}

func (a *applier) Change(c itemmap.Change) {
	items := a.conv.Items
	switch c.Op {
	case itemmap.OpAdd:
		a.conv.Items = append(items, c.Item)
	case itemmap.OpUpdate:
		// The mapper changes the item in place; nothing to copy.
	case itemmap.OpRemove:
		if i := slices.IndexFunc(items, func(it archive.Item) bool { return it.ID() == c.Item.ID() }); i >= 0 {
			a.conv.Items = slices.Delete(items, i, i+1)
		}
	}
	a.host.Change(c)
}

func (a *applier) Approve(ctx context.Context, ap itemmap.Approval) claude.Decision {
	return a.host.Approve(ctx, ap)
}

// Apply brings a turn's end into the conversation: its history, its usage
// into the total, the last request's usage, the cost, and the provider and
// model it ran on.
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
	switch cost := &conv.EstimatedCost; {
	case end.CostUSD != "":
		switch cost.Kind {
		case archive.CostEstimated:
			cost.Dollars = archive.AddNumbers(cost.Dollars, end.CostUSD)
		case archive.CostReported:
			cost.Dollars = archive.AddNumbers(cost.Dollars, end.CostUSD)
		default:
			if !hadUsage {
				cost.Kind, cost.Dollars = archive.CostReported, end.CostUSD
			}
		}
	case turnUsage:
		cost.Kind, cost.Dollars = archive.CostUnknown, ""
	}
	if cost := &conv.EstimatedCost; cost.Kind == "" {
		cost.Kind = archive.CostUnknown
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
