// Package export writes a conversation, or an audit log, as one page to
// look at: a self-contained HTML file that loads nothing and runs nothing,
// or Markdown.
//
// Everything a conversation holds is untrusted (the model's text, a tool's
// output, a file's content): the HTML page escapes all of it, renders
// Markdown with raw HTML shown as text, shows a link only for http(s) and
// mailto URLs and never loads an image from a URL, and carries a
// Content-Security-Policy that forbids scripts and every remote load.
//
// A page is written as it is made (a turn at a time), so that a long
// conversation costs the memory of the conversation and one turn, not of
// the page.
package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/transcript"
)

// Formats.
const (
	HTML     = "html"
	Markdown = "md"
)

// Page is what a page shows besides its turns.
type Page struct {
	Title string
	// Fields are shown under the title, in order (model, package, …).
	Fields []Field
	// Verification, when set, is shown first: an audit log's check.
	Verification *Verification
}

// Field is one labelled value.
type Field struct {
	Label, Value string
}

// Verification is the result of checking an audit log: OK when it
// verifies, Lines what the check said (each a sentence).
type Verification struct {
	OK    bool
	Lines []string
}

// Turn is one turn of a conversation: the items from a user's message to
// the next one's (the first turn of a conversation may have none), and
// what is known of the turn besides its items.
type Turn struct {
	N int // 1-based
	// Heading says more of the turn on its heading line ("" for none):
	// an audit record's time, CLI and status.
	Heading string
	Items   []archive.Item
	// Images are the images each user item was sent with, by the item's
	// index in Items.
	Images map[int][]Image
	// Cards are the approval cards by toolApproval item id
	// (approvalCards: {"state": …}).
	Cards map[string]any
	// Usage is the turn's usage and cost, nil when not recorded.
	Usage *TurnUsage
	// Changes are the files the turn changed, nil when not recorded.
	Changes []FileChange
	// Fields are more facts of the turn (an audit record's folder, exit
	// status), shown after its items.
	Fields []Field
	// Folded are long texts shown folded after the items (an audit
	// record's stderr tail).
	Folded []Field
}

// Image is an image a message was sent with. Data nil means it was
// omitted from the saved conversation.
type Image struct {
	MimeType string
	Data     []byte
}

// TurnUsage is one turn's tokens and cost (Cost "" when unknown).
type TurnUsage struct {
	Usage archive.Usage
	Cost  json.Number
}

// FileChange is one file a turn changed: its path, what happened to it
// (created, modified, deleted; or why its contents were not kept), the
// lines added and removed ("+3 −1", "" when not counted) and a unified
// diff ("" when not kept).
type FileChange struct {
	Path, Op, Stat, Diff string
}

// Totals are the conversation's totals, shown at the end.
type Totals struct {
	Usage, LastRound archive.Usage
	Cost             archive.Cost
}

// writer writes one format.
type writer interface {
	begin(p *Page)
	turn(t *Turn)
	end(t *Totals)
}

// Options say what a conversation's export adds to its items.
type Options struct {
	// TurnUsage returns the usage of the turn that ended with the item of
	// this id, when recorded (by the audit log).
	TurnUsage func(endItemID string) (TurnUsage, bool)
	// TurnChanges returns the files the turn of these items changed, nil
	// when not recorded.
	TurnChanges func(items []archive.Item) []FileChange
}

// Write writes a page of turns in format (HTML or Markdown) to w: each
// turn as turns yields it (then no longer held), and the totals at the end
// (none when nil).
func Write(w io.Writer, format string, p *Page, turns iter.Seq[*Turn], totals *Totals) error {
	out := newWriter(w, format)
	if out == nil {
		return fmt.Errorf("unknown format %q (want html or md)", format)
	}
	out.begin(p)
	for t := range turns {
		out.turn(t)
	}
	out.end(totals)
	return out.flush()
}

// Conversation writes conv as a page in format (HTML or Markdown) to w.
func Conversation(w io.Writer, format string, p *Page, conv *archive.Conversation, opt Options) error {
	sent := transcript.UserMessages(conv.Items, conv.History)
	returned := toolImages(conv.Items, conv.History)
	turns := func(yield func(*Turn) bool) {
		for i, t := range Turns(conv.Items) {
			turn := Turn{N: i + 1, Items: conv.Items[t[0]:t[1]], Cards: conv.ApprovalCards}
			for j := t[0]; j < t[1]; j++ {
				it := conv.Items[j]
				var imgs []Image
				switch {
				case it.Type() == archive.TypeUser && it.Bool("hasImage"):
					imgs = messageImages(sent[j])
				case it.Type() == archive.TypeTool:
					imgs = returned[j]
				}
				if len(imgs) > 0 {
					if turn.Images == nil {
						turn.Images = make(map[int][]Image)
					}
					turn.Images[j-t[0]] = imgs
				}
			}
			if opt.TurnUsage != nil && len(turn.Items) > 0 {
				if u, ok := opt.TurnUsage(turn.Items[len(turn.Items)-1].ID()); ok {
					turn.Usage = &u
				}
			}
			if opt.TurnChanges != nil {
				turn.Changes = opt.TurnChanges(turn.Items)
			}
			if !yield(&turn) {
				return
			}
		}
	}
	return Write(w, format, p, turns, &Totals{Usage: conv.Usage, LastRound: conv.LastRoundUsage, Cost: conv.EstimatedCost})
}

// Turns splits items into turns, each [from, to) of items: a turn begins
// at each user item (and at the first item, when it is not one).
func Turns(items []archive.Item) [][2]int {
	var out [][2]int
	start := 0
	for i, it := range items {
		if i > start && it.Type() == archive.TypeUser {
			out = append(out, [2]int{start, i})
			start = i
		}
	}
	if start < len(items) {
		out = append(out, [2]int{start, len(items)})
	}
	return out
}

// toolImages pairs the tool items that returned images with the images
// the history keeps after each tool result, by item index. An item names
// the images its call returned in its detail (itemmap.DetailImages); the
// history keeps them after the result they came with. Neither says the
// other's id, so each such item, in order, takes the first result not yet
// taken whose images are the ones it names (their types, and their sizes
// where the image was kept): results arrive as the calls finish, not as
// they began.
func toolImages(items []archive.Item, history []archive.Message) map[int][]Image {
	var results [][]Image // the images of each tool result that has some, in order
	for _, m := range history {
		if m.Role != "tool" {
			continue
		}
		open := false // the message's last block so far is a result or its images
		for _, b := range m.Content {
			switch b.Type() {
			case archive.BlockToolResult:
				results = append(results, nil)
				open = true
			case archive.BlockImage, archive.BlockImageOmitted:
				if open {
					img := Image{MimeType: b.String("mimeType")}
					if b.Type() == archive.BlockImage {
						img.Data = b.ImageData()
					}
					results[len(results)-1] = append(results[len(results)-1], img)
				}
			default:
				open = false
			}
		}
	}
	taken := make([]bool, len(results))
	var out map[int][]Image
	for i, it := range items {
		if it.Type() != archive.TypeTool {
			continue
		}
		named := itemmap.DetailImages(it.String("detail"))
		if len(named) == 0 {
			continue
		}
		for k, imgs := range results {
			if taken[k] || !sameImages(named, imgs) {
				continue
			}
			taken[k] = true
			if out == nil {
				out = make(map[int][]Image)
			}
			out[i] = imgs
			break
		}
	}
	return out
}

// sameImages reports whether imgs are the images named: of the same types,
// and of the same sizes where kept (an omitted image's size is not).
func sameImages(named []itemmap.ImageInfo, imgs []Image) bool {
	if len(named) != len(imgs) {
		return false
	}
	for i, n := range named {
		if n.MimeType != imgs[i].MimeType || (imgs[i].Data != nil && len(imgs[i].Data) != n.Size) {
			return false
		}
	}
	return true
}

// messageImages are the images of a history message, in order.
func messageImages(m archive.Message) []Image {
	var out []Image
	for _, b := range m.Content {
		switch b.Type() {
		case archive.BlockImage:
			out = append(out, Image{MimeType: b.String("mimeType"), Data: b.ImageData()})
		case archive.BlockImageOmitted:
			out = append(out, Image{MimeType: b.String("mimeType")})
		}
	}
	return out
}

// newWriter is the writer of format, nil for an unknown one.
func newWriter(w io.Writer, format string) interface {
	writer
	flush() error
} {
	b := &buf{bufio.NewWriterSize(w, 64<<10)}
	switch format {
	case HTML:
		return &htmlWriter{buf: b}
	case Markdown:
		return &mdWriter{buf: b}
	}
	return nil
}

// buf is a page's buffered output. A bufio.Writer keeps its first
// error and fails every write after it, so a page's code writes without
// checking each write, and flush says whether all went out.
type buf struct {
	*bufio.Writer
}

// s writes each of parts.
func (b *buf) s(parts ...string) {
	for _, p := range parts {
		b.WriteString(p)
	}
}

func (b *buf) flush() error { return b.Flush() }

// usageLine is a usage as one line of text: "1,500 in · 40 out · 1,200
// cache read · $0.0213".
func usageLine(u archive.Usage, cost string) string {
	var parts []string
	add := func(n json.Number, what string) {
		if n != "" && n != "0" {
			parts = append(parts, thousands(string(n))+" "+what)
		}
	}
	add(u.Input, "in")
	add(u.Output, "out")
	add(u.CacheRead, "cache read")
	add(u.CacheWrite, "cache write")
	if u.WebSearchRequests == "1" {
		add(u.WebSearchRequests, "web search")
	} else {
		add(u.WebSearchRequests, "web searches")
	}
	if cost != "" {
		parts = append(parts, cost)
	}
	if len(parts) == 0 {
		return "no tokens"
	}
	return strings.Join(parts, " · ")
}

// thousands puts commas between groups of three digits of an integer's
// text; other text is returned as it is.
func thousands(s string) string {
	for _, c := range s {
		if c < '0' || c > '9' {
			return s
		}
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// statusLine is a status and its text, the text left out when it says the
// same ("denied · denied").
func statusLine(status, text string) string {
	if strings.EqualFold(status, text) {
		text = ""
	}
	return strings.Join(nonEmpty(status, text), " · ")
}
