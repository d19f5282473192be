package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"

	"spbridge/internal/canonjson"
)

// Encode returns the conversation's canonical format-1 bytes, with every
// top-level field present: pretty-printed, or on one line when that would
// pass MaxConversationSize (a *TooLargeError when that too would), as Save
// writes them. Image blocks are written as they are; Save applies the
// image cap before encoding.
func (c *Conversation) Encode() ([]byte, error) {
	var b bytes.Buffer
	_, err := fitEncoding(func(compact bool) (int64, error) {
		b.Reset()
		cw := &countingWriter{w: &b, limit: sizeLimit}
		err := c.write(cw, nil, compact)
		return cw.n, err
	})
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// errOverLimit is the error of an encoding that passed sizeLimit.
var errOverLimit = errors.New("over the size limit")

// fitEncoding runs enc pretty-printed, and again on one line when that
// passed sizeLimit; a *TooLargeError when that did too.
func fitEncoding(enc func(compact bool) (int64, error)) (int64, error) {
	n, err := enc(false)
	if !errors.Is(err, errOverLimit) {
		return n, err
	}
	n, err = enc(true)
	if errors.Is(err, errOverLimit) {
		return 0, &TooLargeError{Path: ConversationFile, Limit: sizeLimit}
	}
	return n, err
}

// Value returns the conversation as a JSON value tree (sharing the items'
// and blocks' maps; the caller must not change it).
func (c *Conversation) Value() map[string]any { return c.value(nil) }

// write streams the canonical bytes (on one line when compact) to w; omit
// names the image hashes written as imageOmitted.
func (c *Conversation) write(w io.Writer, omit map[string]bool, compact bool) error {
	if compact {
		return canonjson.WriteCompact(w, c.stream(omit))
	}
	return canonjson.Write(w, c.stream(omit))
}

// stream is the value tree as value makes it, except that each history
// message's map is made as the encoder reaches it: a save of a long
// conversation then holds one message's map at a time, not one for each.
func (c *Conversation) stream(omit map[string]bool) map[string]any {
	top := c.shell()
	top["items"], top["history"] = c.itemsValue(), historyValue{c.History, omit}
	return top
}

// historyValue is a history as canonjson.Array.
type historyValue struct {
	msgs []Message
	omit map[string]bool
}

func (h historyValue) Len() int     { return len(h.msgs) }
func (h historyValue) At(i int) any { return h.msgs[i].valueOmit(h.omit) }

func (c *Conversation) itemsValue() []any {
	items := make([]any, len(c.Items))
	for i, it := range c.Items {
		items[i] = it.s.f
	}
	return items
}

// valueOmit is the message's value, with the images omit names as
// imageOmitted.
func (m Message) valueOmit(omit map[string]bool) map[string]any {
	content := make([]any, len(m.Content))
	for j, b := range m.Content {
		if len(omit) > 0 && b.isImage() && omit[b.String("sha256")] {
			b = b.omitted()
		}
		content[j] = b.f
	}
	return m.value(content)
}

// value is the value tree, sharing the items' and blocks' maps, with the
// images omit names as imageOmitted.
func (c *Conversation) value(omit map[string]bool) map[string]any {
	top := c.shell()
	history := make([]any, len(c.History))
	for i, m := range c.History {
		history[i] = m.valueOmit(omit)
	}
	top["items"], top["history"] = c.itemsValue(), history
	return top
}

// fingerprint is what a conversation's encoding was made from: the top
// level's own encoding, each item's identity and change count, each
// message's role and blocks' identities. Items change only through Set and
// blocks never, so an equal fingerprint means equal bytes; a different one
// may still give the same bytes.
type fingerprint struct {
	shell   []byte
	items   []itemMark
	history []msgMark
	omit    map[string]bool // the images omitted (nil when none)
}

type itemMark struct {
	s   *itemState
	ver uint64
}

type msgMark struct {
	role   string
	blocks []blockMark
	// content is the message's first block where its content is held
	// (nil for none): a message whose content is still there, as long,
	// with the same images omitted, holds the same blocks, as an owner
	// replaces a message rather than change its content in place while
	// a snapshot may hold it (Package.Snapshot).
	content *Block
	// extra is the encoding of the message's Extra ("" when it has none):
	// a message with Extra may change in place, so same never takes it
	// for the same; the journal (delta) compares the encodings.
	extra string
}

type blockMark struct {
	id      *blockID
	omitted bool
}

// fingerprint returns the conversation's fingerprint with the images omit
// names omitted.
func (c *Conversation) fingerprint(omit map[string]bool) (*fingerprint, error) {
	shell, err := canonjson.EncodeCompact(c.shell())
	if err != nil {
		return nil, err
	}
	f := &fingerprint{shell: shell, items: make([]itemMark, len(c.Items)), history: make([]msgMark, len(c.History)), omit: omit}
	for i, it := range c.Items {
		f.items[i] = itemMark{it.s, it.s.ver}
	}
	n := 0
	for _, m := range c.History {
		n += len(m.Content)
	}
	blocks := make([]blockMark, 0, n)
	for i, m := range c.History {
		f.history[i].role = m.Role
		f.history[i].content = firstBlock(m.Content)
		if m.Extra != nil {
			e, err := canonjson.EncodeCompact(m.Extra)
			if err != nil {
				return nil, err
			}
			f.history[i].extra = "x" + string(e)
		}
		start := len(blocks)
		for _, b := range m.Content {
			blocks = append(blocks, blockMark{b.id, len(omit) > 0 && b.isImage() && omit[b.String("sha256")]})
		}
		f.history[i].blocks = blocks[start:len(blocks):len(blocks)]
	}
	return f, nil
}

// same reports whether f and g are fingerprints of the same encoding.
func (f *fingerprint) same(g *fingerprint) bool {
	if f == nil || g == nil || !bytes.Equal(f.shell, g.shell) || len(f.items) != len(g.items) || len(f.history) != len(g.history) {
		return false
	}
	for i, m := range f.items {
		if m.s == nil || m != g.items[i] {
			return false
		}
	}
	for i, m := range f.history {
		o := g.history[i]
		if m.extra != "" || o.extra != "" || m.role != o.role || len(m.blocks) != len(o.blocks) {
			return false
		}
		for j, b := range m.blocks {
			if b.id == nil || b != o.blocks[j] {
				return false
			}
		}
	}
	return true
}

func (m Message) value(content []any) map[string]any {
	msg := make(map[string]any, 2+len(m.Extra))
	maps.Copy(msg, m.Extra)
	msg["role"] = m.Role
	msg["content"] = content
	return msg
}

// shell returns the top level without items and history.
func (c *Conversation) shell() map[string]any {
	top := make(map[string]any, 16+len(c.Extra))
	maps.Copy(top, c.Extra)
	feedback := make(map[string]any, len(c.Feedback))
	for id, f := range c.Feedback {
		fm := make(map[string]any, 2+len(f.Extra))
		maps.Copy(fm, f.Extra)
		fm["rating"] = f.Rating
		fm["reasons"] = stringsValue(f.Reasons)
		feedback[id] = fm
	}
	top["approvalCards"] = objectValue(c.ApprovalCards)
	top["estimatedCost"] = c.EstimatedCost.value()
	top["feedback"] = feedback
	top["formatVersion"] = json.Number("1")
	top["lastRoundUsage"] = c.LastRoundUsage.value()
	top["lintRuleCards"] = objectValue(c.LintRuleCards)
	top["model"] = c.Model
	top["provider"] = c.Provider
	top["queued"] = arrayValue(c.Queued)
	top["resolvedCards"] = stringsValue(c.ResolvedCards)
	top["sentFacts"] = arrayValue(c.SentFacts)
	top["skillCards"] = objectValue(c.SkillCards)
	top["unsent"] = arrayValue(c.Unsent)
	top["usage"] = c.Usage.value()
	return top
}

func objectValue(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func arrayValue(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

func stringsValue(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func numberOrZero(n json.Number) json.Number {
	if n == "" {
		return "0"
	}
	return n
}

func (u Usage) value() map[string]any {
	m := make(map[string]any, 7+len(u.Extra))
	maps.Copy(m, u.Extra)
	m["input"] = numberOrZero(u.Input)
	m["output"] = numberOrZero(u.Output)
	m["cacheRead"] = numberOrZero(u.CacheRead)
	m["cacheWrite"] = numberOrZero(u.CacheWrite)
	m["webSearchRequests"] = numberOrZero(u.WebSearchRequests)
	if u.CacheWrite1h != "" {
		m["cacheWrite1h"] = u.CacheWrite1h
	}
	if u.ReportedCost != "" {
		m["reportedCost"] = u.ReportedCost
	}
	return m
}

func (c Cost) value() map[string]any {
	m := make(map[string]any, 2+len(c.Extra))
	maps.Copy(m, c.Extra)
	kind := c.Kind
	if kind == "" {
		kind = CostUnknown
	}
	m["kind"] = kind
	if c.Dollars != "" {
		m["dollars"] = c.Dollars
	}
	return m
}
