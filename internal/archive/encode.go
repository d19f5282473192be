package archive

import (
	"encoding/json"
	"maps"

	"spbridge/internal/canonjson"
)

// Encode returns the conversation's canonical format-1 bytes, with every
// top-level field present. Image blocks are written as they are; Save applies
// the image cap before encoding.
func (c *Conversation) Encode() ([]byte, error) {
	return canonjson.Encode(c.Value())
}

// Value returns the conversation as a JSON value tree (sharing the items'
// and blocks' maps; the caller must not change it).
func (c *Conversation) Value() map[string]any {
	return c.value(nil)
}

// value builds the tree; omit, when non-nil, names the image hashes that are
// written as imageOmitted.
func (c *Conversation) value(omit map[string]bool) map[string]any {
	top := make(map[string]any, 16+len(c.Extra))
	maps.Copy(top, c.Extra)
	items := make([]any, len(c.Items))
	for i, it := range c.Items {
		items[i] = it.f
	}
	history := make([]any, len(c.History))
	for i, m := range c.History {
		content := make([]any, len(m.Content))
		for j, b := range m.Content {
			if b.Type() == BlockImage && omit[b.String("sha256")] {
				b = b.omitted()
			}
			content[j] = b.f
		}
		msg := make(map[string]any, 2+len(m.Extra))
		maps.Copy(msg, m.Extra)
		msg["role"] = m.Role
		msg["content"] = content
		history[i] = msg
	}
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
	top["history"] = history
	top["items"] = items
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
