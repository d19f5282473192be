package archive

import (
	"encoding/json"
	"fmt"
	"maps"

	"spbridge/internal/canonjson"
)

// Encode returns the conversation's canonical format-1 bytes, with every
// top-level field present. Image blocks are written as they are; Save applies
// the image cap before encoding.
func (c *Conversation) Encode() ([]byte, error) {
	return c.encode(nil, 0)
}

// Value returns the conversation as a JSON value tree (sharing the items'
// and blocks' maps; the caller must not change it).
func (c *Conversation) Value() map[string]any {
	top := c.shell()
	items := make([]any, len(c.Items))
	for i, it := range c.Items {
		items[i] = it.s.f
	}
	history := make([]any, len(c.History))
	for i, m := range c.History {
		content := make([]any, len(m.Content))
		for j, b := range m.Content {
			content[j] = b.f
		}
		history[i] = m.value(content)
	}
	top["items"], top["history"] = items, history
	return top
}

// Depths at which items and blocks sit in the document, for their cached
// encodings: top object 0, its arrays' elements 2, a message's blocks 4.
const (
	itemDepth    = 2
	messageDepth = 2
	blockDepth   = 4
)

// encode writes the canonical bytes, reusing each item's and block's cached
// encoding; omit names the image hashes written as imageOmitted.
func (c *Conversation) encode(omit map[string]bool, sizeHint int) ([]byte, error) {
	top := c.shell()
	items := make([]any, len(c.Items))
	for i, it := range c.Items {
		if it.s.enc == nil {
			enc, err := canonjson.AppendAt(nil, it.s.f, itemDepth)
			if err != nil {
				return nil, fmt.Errorf("item %s: %w", it.ID(), err)
			}
			it.s.enc = enc
		}
		items[i] = canonjson.Raw(it.s.enc)
	}
	history := make([]any, len(c.History))
	if len(c.msgCache) != len(c.History) {
		c.msgCache = append(c.msgCache[:0:0], make([]msgEncoding, len(c.History))...)
	}
	for i, m := range c.History {
		cache := &c.msgCache[i]
		if cache.matches(m, omit) {
			history[i] = canonjson.Raw(cache.enc)
			continue
		}
		content := make([]any, len(m.Content))
		cache.blocks = cache.blocks[:0]
		cache.omitted = cache.omitted[:0]
		for j, b := range m.Content {
			omitted := b.Type() == BlockImage && omit[b.String("sha256")]
			cache.blocks = append(cache.blocks, b.enc)
			cache.omitted = append(cache.omitted, omitted)
			if omitted {
				b = b.omitted()
			}
			enc, err := b.encoding()
			if err != nil {
				return nil, fmt.Errorf("history[%d].content[%d]: %w", i, j, err)
			}
			content[j] = canonjson.Raw(enc)
		}
		enc, err := canonjson.AppendAt(nil, m.value(content), messageDepth)
		if err != nil {
			return nil, fmt.Errorf("history[%d]: %w", i, err)
		}
		cache.role, cache.enc = m.Role, enc
		if m.Extra != nil {
			cache.enc = nil // not cached: Extra may change in place
		}
		history[i] = canonjson.Raw(enc)
	}
	top["items"], top["history"] = items, history
	return canonjson.AppendAt(make([]byte, 0, sizeHint), top, 0)
}

// msgEncoding is a history message's last encoding and what it was made
// from: the role and the identities of its blocks, which never change.
type msgEncoding struct {
	role    string
	blocks  []*[]byte
	omitted []bool
	enc     []byte
}

func (e *msgEncoding) matches(m Message, omit map[string]bool) bool {
	if e.enc == nil || m.Extra != nil || e.role != m.Role || len(e.blocks) != len(m.Content) {
		return false
	}
	for j, b := range m.Content {
		if b.enc == nil || e.blocks[j] != b.enc {
			return false
		}
		if b.Type() == BlockImage && omit[b.String("sha256")] != e.omitted[j] {
			return false
		}
	}
	return true
}

// encoding returns the block's canonical encoding at block depth, cached.
func (b Block) encoding() ([]byte, error) {
	if b.enc != nil && *b.enc != nil {
		return *b.enc, nil
	}
	enc, err := canonjson.AppendAt(nil, b.f, blockDepth)
	if err != nil {
		return nil, err
	}
	if b.enc != nil {
		*b.enc = enc
	}
	return enc, nil
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
