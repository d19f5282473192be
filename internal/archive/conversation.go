// Package archive reads and writes a document package's saved agent
// conversation: format 1 in agent/conversation.json and the
// content-addressed images in agent/images/.
package archive

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FormatVersion is the archive format this package reads and writes.
const FormatVersion = 1

// Conversation is one saved conversation: the panel's items, the model
// history and the bookkeeping around them. Fields spbridge does not model are
// kept in Extra (top level) or inside the items, blocks and records that
// carry them, and are written back unchanged.
type Conversation struct {
	Items          []Item
	History        []Message
	Feedback       map[string]Feedback // by the id of the item that ends the rated turn
	SkillCards     map[string]any      // a card's state by item id, as the host wrote it
	LintRuleCards  map[string]any
	ApprovalCards  map[string]any
	ResolvedCards  []string // item ids
	Queued         []any    // messages sent while a turn ran, still waiting
	Unsent         []any    // messages a turn handed back to the composer
	SentFacts      []any    // the host's turn-facts record, kept as written
	Usage          Usage    // the conversation's total
	LastRoundUsage Usage    // the last API request's usage
	EstimatedCost  Cost
	Model          string
	Provider       string
	Extra          map[string]any // top-level fields spbridge does not model
}

// IsEmpty reports whether the conversation holds nothing at all: no item, no
// history, no card state, rating, queued or handed-back message, turn facts
// or top-level field spbridge does not model. The model, provider, usage and
// cost only describe a conversation and do not count on their own.
func (c *Conversation) IsEmpty() bool {
	return len(c.Items) == 0 && len(c.History) == 0 &&
		len(c.Queued) == 0 && len(c.Unsent) == 0 && len(c.SentFacts) == 0 &&
		len(c.Feedback) == 0 && len(c.ResolvedCards) == 0 &&
		len(c.SkillCards) == 0 && len(c.LintRuleCards) == 0 && len(c.ApprovalCards) == 0 &&
		len(c.Extra) == 0
}

// Identity is the id of the conversation's first item, or "" when it has
// none. It names the conversation's audit log and survives moving the
// document; New Conversation starts a new one.
func (c *Conversation) Identity() string {
	if len(c.Items) == 0 {
		return ""
	}
	return c.Items[0].ID()
}

// FieldAuditLog is the top-level member of conversation.json naming the
// conversation's audit log when it is not the one its identity names: a
// copied package's own log, made at its first turn after the copy.
const FieldAuditLog = "auditLog"

// AuditLog is the id of the conversation's audit log: the one
// FieldAuditLog names, else its identity.
func (c *Conversation) AuditLog() string {
	if s, ok := c.Extra[FieldAuditLog].(string); ok && s != "" {
		return s
	}
	return c.Identity()
}

// SetAuditLog names the conversation's audit log (FieldAuditLog).
func (c *Conversation) SetAuditLog(id string) {
	if c.Extra == nil {
		c.Extra = map[string]any{}
	}
	c.Extra[FieldAuditLog] = id
}

// Usage is a count of tokens (and optionally dollars) in format 1. Numbers
// keep the text they were read with; an empty number reads as zero, and the
// optional CacheWrite1h and ReportedCost are written only when non-empty.
type Usage struct {
	Input, Output, CacheRead, CacheWrite, WebSearchRequests json.Number
	CacheWrite1h, ReportedCost                              json.Number
	Extra                                                   map[string]any
}

// Cost is the conversation's cost so far: Kind is reported, estimated,
// unknown or notBilled; Dollars is present with reported and estimated.
type Cost struct {
	Kind    string
	Dollars json.Number
	Extra   map[string]any
}

// Cost kinds.
const (
	CostReported  = "reported"
	CostEstimated = "estimated"
	CostUnknown   = "unknown"
	CostNotBilled = "notBilled"
)

// Feedback is a rating of a turn.
type Feedback struct {
	Rating  string // good or bad
	Reasons []string
	Extra   map[string]any
}

// Item types. spbridge makes the first eleven; skillProposal,
// lintRuleProposal and reportedIssue are the host's and are kept as written.
const (
	TypeUser             = "user"
	TypeAssistant        = "assistant"
	TypeThinking         = "thinking"
	TypeTool             = "tool"
	TypeNotice           = "notice"
	TypeFailure          = "failure"
	TypeQuestions        = "questions"
	TypeDirections       = "directions"
	TypeToolApproval     = "toolApproval"
	TypeWebSearch        = "webSearch"
	TypeSkillProposal    = "skillProposal"
	TypeLintRuleProposal = "lintRuleProposal"
	TypeReportedIssue    = "reportedIssue"
)

// Tool statuses.
const (
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusDenied    = "denied"
)

// Item is one panel item: a JSON object with at least "id" and "type". Its
// fields are kept exactly as read, including ones spbridge does not model.
// Item values share their fields: a copy sees the changes Set makes. The
// zero Item is not valid; make one with NewItem or ItemFromMap.
type Item struct {
	s *itemState
}

type itemState struct {
	f   map[string]any
	id  string // f["id"] when a string: looked up for every change of a turn
	ver uint64 // counts the item's changes, so a save sees one without encoding it
}

// NewItem returns an item of the given type with a fresh id.
func NewItem(typ string) Item {
	return ItemFromMap(map[string]any{"id": NewID(), "type": typ})
}

// ItemFromMap wraps fields as an item without checking them; the map is
// owned by the item afterwards.
func ItemFromMap(fields map[string]any) Item {
	id, _ := fields["id"].(string)
	return Item{s: &itemState{f: fields, id: id}}
}

// ID returns the item's id.
func (it Item) ID() string { return it.s.id }

// Type returns the item's type.
func (it Item) Type() string { s, _ := it.s.f["type"].(string); return s }

// String returns the string field key, or "" when it is absent or not a
// string.
func (it Item) String(key string) string { s, _ := it.s.f[key].(string); return s }

// Bool returns the boolean field key, or false.
func (it Item) Bool(key string) bool { b, _ := it.s.f[key].(bool); return b }

// Get returns field key as read (nil when absent).
func (it Item) Get(key string) any { return it.s.f[key] }

// Set sets field key; a nil value removes it. Values must be of the kinds
// canonjson encodes, and are owned by the item afterwards.
func (it Item) Set(key string, v any) {
	it.s.ver++
	if key == "id" {
		it.s.id, _ = v.(string)
	}
	if v == nil {
		delete(it.s.f, key)
		return
	}
	it.s.f[key] = v
}

// Map returns the item's fields. The caller must not change the map; use
// Set.
func (it Item) Map() map[string]any {
	if it.s == nil {
		return nil
	}
	return it.s.f
}

// IsZero reports whether it is the zero Item, which holds no item.
func (it Item) IsZero() bool { return it.s == nil }

// Clone returns a deep copy of the item.
func (it Item) Clone() Item { return ItemFromMap(deepCopy(it.s.f).(map[string]any)) }

// Message is one history message: a role and content blocks.
type Message struct {
	Role    string
	Content []Block
	Extra   map[string]any
}

// History block types.
const (
	BlockText         = "text"
	BlockImage        = "image"
	BlockImageOmitted = "imageOmitted"
	BlockToolCall     = "toolCall"
	BlockToolResult   = "toolResult"
)

// ImageOmittedText is what a model is sent in place of an omitted image.
const ImageOmittedText = "[Image omitted: an image was here but was dropped from the saved conversation to save space.]"

// Block is one history content block: a JSON object with a "type", kept
// exactly as read. An image block also holds the image's bytes while the
// conversation is live.
type Block struct {
	f    map[string]any
	data []byte
	id   *blockID // the block's identity, shared by copies
	// image says the block is an image's, as its identity does (without
	// reaching for it: a save looks at every block of the history).
	image bool
	// overCap is the size of an image's file over ImageCap, read without
	// holding its bytes (data is nil); see readStoredImage.
	overCap int64
}

// blockID is the identity of a block as made: a save compares identities to
// know a history unchanged without encoding it. It is not empty, so that
// each allocation has an address of its own.
type blockID struct {
	image bool // the block is an image's (its type never changes)
}

// newBlockID is the identity of a block made of fields.
func newBlockID(fields map[string]any) *blockID {
	t, _ := fields["type"].(string)
	return &blockID{image: t == BlockImage}
}

// isImage reports whether the block is an image's, without looking its
// type up.
func (b Block) isImage() bool {
	if b.id != nil {
		return b.image
	}
	return b.Type() == BlockImage
}

// NewTextBlock returns a text block.
func NewTextBlock(text string) Block {
	return BlockFromMap(map[string]any{"type": BlockText, "text": text})
}

// NewToolCallBlock returns a toolCall block; arguments are the exact bytes
// the model produced.
func NewToolCallBlock(id, name, arguments string) Block {
	return BlockFromMap(map[string]any{"type": BlockToolCall, "id": id, "name": name, "arguments": arguments})
}

// NewToolResultBlock returns a toolResult block; content is the exact output.
func NewToolResultBlock(callID, toolName, content string, isError bool) Block {
	return BlockFromMap(map[string]any{"type": BlockToolResult, "callID": callID, "toolName": toolName, "content": content, "isError": isError})
}

// NewImageBlock returns an image block holding data, named by its SHA-256.
// The MIME type must be one of image/png, image/jpeg, image/gif, image/webp.
func NewImageBlock(mimeType string, data []byte) (Block, error) {
	if imageExt(mimeType) == "" {
		return Block{}, fmt.Errorf("image type %q: %w", mimeType, ErrImageType)
	}
	b := BlockFromMap(map[string]any{"type": BlockImage, "mimeType": mimeType, "sha256": hashHex(data)})
	b.data = data
	return b, nil
}

// BlockFromMap wraps fields as a block without checking them; the map is
// owned by the block afterwards. A block does not change once made.
func BlockFromMap(fields map[string]any) Block {
	id := newBlockID(fields)
	return Block{f: fields, id: id, image: id.image}
}

// Type returns the block's type.
func (b Block) Type() string { s, _ := b.f["type"].(string); return s }

// String returns the string field key, or "".
func (b Block) String(key string) string { s, _ := b.f[key].(string); return s }

// Bool returns the boolean field key, or false.
func (b Block) Bool(key string) bool { v, _ := b.f[key].(bool); return v }

// Map returns the block's fields. The caller must not change the map.
func (b Block) Map() map[string]any { return b.f }

// ImageData returns an image block's bytes (nil for other blocks).
func (b Block) ImageData() []byte { return b.data }

// ModelText returns what a text-only model is sent for the block: the text of
// a text block, the placeholder for an omitted image, "" otherwise.
func (b Block) ModelText() string {
	switch b.Type() {
	case BlockText:
		return b.String("text")
	case BlockImageOmitted:
		return ImageOmittedText
	}
	return ""
}

// omitted returns the block as an imageOmitted block, keeping its other
// fields.
func (b Block) omitted() Block {
	f := maps.Clone(b.f)
	delete(f, "sha256")
	f["type"] = BlockImageOmitted
	return BlockFromMap(f)
}

// NewID returns a random (version 4) UUID in upper case, as item ids are.
func NewID() string {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return strings.ToUpper(fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]))
}

// deepCopy copies a value tree.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = deepCopy(x)
		}
		return s
	default:
		return v
	}
}

// Clone returns a deep copy of the conversation; image bytes are shared,
// since they are never changed in place.
func (c *Conversation) Clone() *Conversation {
	n := *c
	n.Items = make([]Item, len(c.Items))
	for i, it := range c.Items {
		n.Items[i] = it.Clone()
	}
	n.History = make([]Message, len(c.History))
	for i, m := range c.History {
		nm := Message{Role: m.Role, Extra: cloneMap(m.Extra), Content: make([]Block, len(m.Content))}
		for j, b := range m.Content {
			nm.Content[j] = Block{f: deepCopy(b.f).(map[string]any), data: b.data, id: &blockID{image: b.isImage()}, image: b.isImage()}
		}
		n.History[i] = nm
	}
	n.Feedback = make(map[string]Feedback, len(c.Feedback))
	for k, f := range c.Feedback {
		n.Feedback[k] = Feedback{Rating: f.Rating, Reasons: slices.Clone(f.Reasons), Extra: cloneMap(f.Extra)}
	}
	n.SkillCards = cloneMap(c.SkillCards)
	n.LintRuleCards = cloneMap(c.LintRuleCards)
	n.ApprovalCards = cloneMap(c.ApprovalCards)
	n.ResolvedCards = slices.Clone(c.ResolvedCards)
	n.Queued, _ = deepCopy(c.Queued).([]any)
	n.Unsent, _ = deepCopy(c.Unsent).([]any)
	n.SentFacts, _ = deepCopy(c.SentFacts).([]any)
	n.Usage.Extra = cloneMap(c.Usage.Extra)
	n.LastRoundUsage.Extra = cloneMap(c.LastRoundUsage.Extra)
	n.EstimatedCost.Extra = cloneMap(c.EstimatedCost.Extra)
	n.Extra = cloneMap(c.Extra)
	return &n
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return deepCopy(m).(map[string]any)
}

// Compact gives the item's strings memory of their own. A string cut from a
// larger one, as a JSON reader's results often are, keeps the whole of that
// alive while the item holds it: an item made from one line of a CLI's
// output would keep the line. The item's fields and encoding do not change.
func (it Item) Compact() {
	if it.s != nil {
		it.s.f = compactValue(it.s.f).(map[string]any)
		it.s.id, _ = it.s.f["id"].(string)
	}
}

// CompactHistory is Compact for the blocks of msgs: each is replaced by one
// with the same fields, identity and image bytes whose strings have memory
// of their own.
func CompactHistory(msgs []Message) {
	for i := range msgs {
		m := &msgs[i]
		m.Role = strings.Clone(m.Role)
		for j, b := range m.Content {
			if b.f != nil {
				m.Content[j].f = compactValue(b.f).(map[string]any)
			}
		}
	}
}

// CompactTurn is Compact for items and CompactHistory for msgs at once, as
// a turn's end keeps them: a block's text or tool output that one of items
// holds too (an assistant's text, the output at the end of a tool's detail)
// is given the item's copy, so that the conversation holds it once. The file
// still has both; only memory is shared.
func CompactTurn(items []Item, msgs []Message) {
	for _, it := range items {
		it.Compact()
	}
	shared := itemTexts(items)
	for i := range msgs {
		m := &msgs[i]
		m.Role = strings.Clone(m.Role)
		for j, b := range m.Content {
			if b.f != nil {
				m.Content[j].f = compactShared(b.f, shared).(map[string]any)
			}
		}
	}
}

// sharedKey names the field of a history block of type typ that may
// repeat an item's text: a text block's text, a tool result's content; ""
// for other blocks.
func sharedKey(typ string) string {
	switch typ {
	case BlockText:
		return "text"
	case BlockToolResult:
		return "content"
	}
	return ""
}

// detailOutput begins the output in a tool item's detail: the detail ends
// with "output:\n" and the output, at its start or after a blank line.
const detailOutput = "output:\n"

// itemTexts indexes the texts of items that a history block may hold too:
// each item's text, and the output a tool's detail ends with (whole, or cut
// short; a cut one matches no block). The values are ready to be stored in
// a block's map, which then shares the item's string and its boxing.
func itemTexts(items []Item) map[string]any {
	var shared map[string]any
	add := func(s string, v any) {
		if s == "" {
			return
		}
		if shared == nil {
			shared = make(map[string]any, len(items))
		}
		shared[s] = v
	}
	for _, it := range items {
		if v, ok := it.s.f["text"]; ok {
			if s, ok := v.(string); ok {
				add(s, v)
			}
		}
		if d := it.String("detail"); d != "" {
			out, ok := "", false
			if i := strings.Index(d, "\n\n"+detailOutput); i >= 0 {
				out, ok = d[i+2+len(detailOutput):], true
			} else if strings.HasPrefix(d, detailOutput) {
				out, ok = d[len(detailOutput):], true
			}
			if ok {
				add(out, out)
			}
		}
	}
	return shared
}

// compactShared is compactValue, except that a string shared holds is
// given shared's copy.
func compactShared(v any, shared map[string]any) any {
	switch v := v.(type) {
	case string:
		if c, ok := constValue(v); ok {
			return c
		}
		if s, ok := shared[v]; ok {
			return s
		}
		return strings.Clone(v)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[internKey(k)] = compactShared(x, shared)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = compactShared(x, shared)
		}
		return s
	}
	return compactValue(v)
}

// compactValue copies a value tree, each string into memory of its own.
func compactValue(v any) any {
	switch v := v.(type) {
	case string:
		if c, ok := constValue(v); ok {
			return c
		}
		return strings.Clone(v)
	case json.Number:
		return json.Number(strings.Clone(string(v)))
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[internKey(k)] = compactValue(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = compactValue(x)
		}
		return s
	default:
		return v
	}
}

// constValues are the values that items and blocks repeat most (their
// types, a tool's status), each boxed once; none is longer than
// constValueMax bytes.
var constValues, constValueMax = func() (map[string]any, int) {
	m, most := make(map[string]any), 0
	for _, s := range []string{
		TypeUser, TypeAssistant, TypeThinking, TypeTool, TypeNotice, TypeFailure, TypeQuestions,
		TypeDirections, TypeToolApproval, TypeWebSearch, TypeSkillProposal, TypeLintRuleProposal, TypeReportedIssue,
		StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled, StatusDenied,
		BlockText, BlockImage, BlockImageOmitted, BlockToolCall, BlockToolResult,
	} {
		m[s], most = s, max(most, len(s))
	}
	return m, most
}()

// constValue returns the shared value equal to s, if constValues has one.
func constValue(s string) (any, bool) {
	if len(s) > constValueMax {
		return nil, false
	}
	c, ok := constValues[s]
	return c, ok
}

// internKey returns a field name with memory of its own: the constant for
// the names items and blocks are made with, which then cost nothing per
// item, or a copy.
func internKey(k string) string {
	switch k {
	case "id":
		return "id"
	case "type":
		return "type"
	case "text":
		return "text"
	case "detail":
		return "detail"
	case "status":
		return "status"
	case "statusText":
		return "statusText"
	case "name":
		return "name"
	case "summary":
		return "summary"
	case "callID":
		return "callID"
	case "toolName":
		return "toolName"
	case "content":
		return "content"
	case "isError":
		return "isError"
	case "arguments":
		return "arguments"
	}
	return strings.Clone(k)
}

// ContextReset is the field of a notice that marks a reset of the CLI's
// context within the conversation (Claude Code's /clear): its value says
// what reset it ("clear"). The items before such a notice stay in the
// conversation and are shown, but they are no longer the CLI's context:
// a CLI told the conversation so far (internal/restore) is told only what
// came after the last one. A compaction is no reset: its notice has no
// such field.
const ContextReset = "contextReset"

// LastReset returns the index of the last notice in items that marks a
// reset of the CLI's context (ContextReset), or -1.
func LastReset(items []Item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if it := items[i]; it.Type() == TypeNotice && it.String(ContextReset) != "" {
			return i
		}
	}
	return -1
}
