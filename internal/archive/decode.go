package archive

import (
	"encoding/json"
	"fmt"
	"strings"

	"spbridge/internal/canonjson"
)

// FormatError says why a conversation.json cannot be read: where in the
// document and what is wrong there.
type FormatError struct {
	Where string // a path like items[3].text, or "" for the whole file
	Msg   string
}

func (e *FormatError) Error() string {
	if e.Where == "" {
		return e.Msg
	}
	return e.Where + ": " + e.Msg
}

// VersionError reports a conversation.json of another format version.
type VersionError struct {
	Version string // as written
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("format version %s is not %d", e.Version, FormatVersion)
}

// MaxConversationDepth is the deepest nesting of arrays and objects a
// conversation.json may have to be read; a deeper one is unreadable (it
// opens with the one notice and is kept byte-identical). Below
// canonjson.PrettyDepth levels the encoding writes each object and array
// on one line, so a conversation nested up to the bound saves at a size
// proportional to its text (20 values nested 1,092 levels, 88 KB, saved as
// 48 MB when every level was indented; now 132 KB, 1.5 times their size).
//
// Format 1 has no deep structure of its own. A history block nests 5
// levels (the file, history, a message, content, the block), the questions
// spbridge writes 6 (the file, items, the item, questions, a question, its
// options), and the deepest conversation in testdata 7 (a question's
// option as an object, as a host may write it, testdata/host-types.json).
// Measured: the package in testdata and the seed's example nest 5; the 72
// saves of the end-to-end tests (the real claude and codex, through run
// and serve, against the fake APIs) 3 to 6; the 81 of the acp, session and
// command tests 3 to 5. The bound leaves room for far more: a value as deep
// as the deepest line spbridge reads from a CLI (jsonline.MaxDepth, 1,000
// levels), kept as an item's field by a host (3 levels further down),
// still loads, with 97 levels to spare.
const MaxConversationDepth = 1100

// Decode reads a format-1 conversation.json. Any JSON layout and key order
// is accepted. It fails with *canonjson.SyntaxError for text that is not
// JSON, *canonjson.DepthError for JSON nested deeper than
// MaxConversationDepth, *VersionError for another format version and
// *FormatError for a missing formatVersion, a known field of the wrong
// shape, an item without id or type or of an unknown type, or an unknown
// history block type.
func Decode(data []byte) (*Conversation, error) {
	v, err := canonjson.DecodeDepth(data, MaxConversationDepth)
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, &FormatError{Msg: "not a JSON object"}
	}
	return fromValue(top)
}

func shapeErr(where, want string) error {
	return &FormatError{Where: where, Msg: "not " + want}
}

func fromValue(top map[string]any) (*Conversation, error) {
	ver, present := top["formatVersion"]
	if !present {
		return nil, &FormatError{Where: "formatVersion", Msg: "missing"}
	}
	num, ok := ver.(json.Number)
	if !ok {
		return nil, shapeErr("formatVersion", "a number")
	}
	if n, err := num.Int64(); err != nil || n != FormatVersion {
		return nil, &VersionError{Version: string(num)}
	}
	c := &Conversation{}
	var err error
	// The items first: a history block that repeats an item's text is
	// given the item's string (see itemTexts), so the two share memory.
	var shared map[string]any
	if v := top["items"]; v != nil {
		if c.Items, err = decodeItems(v); err != nil {
			return nil, err
		}
		shared = itemTexts(c.Items)
	}
	for k, v := range top {
		if v == nil && k != "formatVersion" {
			continue // an absent value; written back as its default
		}
		switch k {
		case "formatVersion", "items":
		case "history":
			c.History, err = decodeHistory(v, shared)
		case "feedback":
			c.Feedback, err = decodeFeedback(v)
		case "skillCards":
			c.SkillCards, err = asObject(k, v)
		case "lintRuleCards":
			c.LintRuleCards, err = asObject(k, v)
		case "approvalCards":
			c.ApprovalCards, err = asObject(k, v)
		case "resolvedCards":
			c.ResolvedCards, err = asStrings(k, v)
		case "queued":
			c.Queued, err = asArray(k, v)
		case "unsent":
			c.Unsent, err = asArray(k, v)
		case "sentFacts":
			c.SentFacts, err = asArray(k, v)
		case "usage":
			c.Usage, err = decodeUsage(k, v)
		case "lastRoundUsage":
			c.LastRoundUsage, err = decodeUsage(k, v)
		case "estimatedCost":
			c.EstimatedCost, err = decodeCost(v)
		case "model":
			c.Model, err = asString(k, v)
		case "provider":
			c.Provider, err = asString(k, v)
		default:
			if c.Extra == nil {
				c.Extra = make(map[string]any)
			}
			c.Extra[k] = v
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func asObject(where string, v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, shapeErr(where, "an object")
	}
	return m, nil
}

func asArray(where string, v any) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, shapeErr(where, "an array")
	}
	return a, nil
}

func asString(where string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", shapeErr(where, "a string")
	}
	return s, nil
}

func asStrings(where string, v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, shapeErr(where, "an array")
	}
	out := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, shapeErr(fmt.Sprintf("%s[%d]", where, i), "a string")
		}
		out[i] = s
	}
	return out, nil
}

func (u *Usage) field(key string) *json.Number {
	switch key {
	case "input":
		return &u.Input
	case "output":
		return &u.Output
	case "cacheRead":
		return &u.CacheRead
	case "cacheWrite":
		return &u.CacheWrite
	case "webSearchRequests":
		return &u.WebSearchRequests
	case "cacheWrite1h":
		return &u.CacheWrite1h
	case "reportedCost":
		return &u.ReportedCost
	}
	return nil
}

func decodeUsage(where string, v any) (Usage, error) {
	var u Usage
	m, ok := v.(map[string]any)
	if !ok {
		return u, shapeErr(where, "an object")
	}
	for k, x := range m {
		if p := u.field(k); p != nil {
			n, ok := x.(json.Number)
			if !ok {
				return u, shapeErr(where+"."+k, "a number")
			}
			*p = n
			continue
		}
		if u.Extra == nil {
			u.Extra = make(map[string]any)
		}
		u.Extra[k] = x
	}
	return u, nil
}

var costKinds = map[string]bool{CostReported: true, CostEstimated: true, CostUnknown: true, CostNotBilled: true}

func decodeCost(v any) (Cost, error) {
	var c Cost
	m, ok := v.(map[string]any)
	if !ok {
		return c, shapeErr("estimatedCost", "an object")
	}
	for k, x := range m {
		switch k {
		case "kind":
			s, ok := x.(string)
			if !ok || !costKinds[s] {
				return c, shapeErr("estimatedCost.kind", "reported, estimated, unknown or notBilled")
			}
			c.Kind = s
		case "dollars":
			n, ok := x.(json.Number)
			if !ok {
				return c, shapeErr("estimatedCost.dollars", "a number")
			}
			c.Dollars = n
		default:
			if c.Extra == nil {
				c.Extra = make(map[string]any)
			}
			c.Extra[k] = x
		}
	}
	return c, nil
}

func decodeFeedback(v any) (map[string]Feedback, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, shapeErr("feedback", "an object")
	}
	out := make(map[string]Feedback, len(m))
	for id, x := range m {
		where := "feedback[" + id + "]"
		fm, ok := x.(map[string]any)
		if !ok {
			return nil, shapeErr(where, "an object")
		}
		var f Feedback
		for k, y := range fm {
			var err error
			switch k {
			case "rating":
				f.Rating, err = asString(where+".rating", y)
			case "reasons":
				f.Reasons, err = asStrings(where+".reasons", y)
			default:
				if f.Extra == nil {
					f.Extra = make(map[string]any)
				}
				f.Extra[k] = y
			}
			if err != nil {
				return nil, err
			}
		}
		out[id] = f
	}
	return out, nil
}

// A fieldKind is the shape a known field must have.
type fieldKind int

const (
	kString fieldKind = iota
	kBool
	kLinks     // an array of {title, url} objects with string values
	kQuestions // an array of {question, options[]} objects
	kStatus    // a tool status
)

// commonFields may appear on any item.
var commonFields = map[string]fieldKind{"detail": kString, "citations": kLinks}

// itemFields are the fields each item type owns. A field an item carries
// that its type does not own is kept as it is, unchecked.
var itemFields = map[string]map[string]fieldKind{
	TypeUser:             {"text": kString, "hasImage": kBool},
	TypeAssistant:        {"text": kString},
	TypeThinking:         {"text": kString},
	TypeTool:             {"name": kString, "summary": kString, "status": kStatus, "statusText": kString},
	TypeNotice:           {"text": kString},
	TypeFailure:          {"text": kString},
	TypeQuestions:        {"questions": kQuestions},
	TypeDirections:       {"text": kString},
	TypeToolApproval:     {"name": kString, "summary": kString},
	TypeWebSearch:        {"query": kString, "status": kString, "results": kLinks},
	TypeSkillProposal:    {},
	TypeLintRuleProposal: {},
	TypeReportedIssue:    {},
}

// KnownItemType reports whether typ is one of the thirteen item types.
func KnownItemType(typ string) bool {
	_, ok := itemFields[typ]
	return ok
}

var toolStatuses = map[string]bool{StatusRunning: true, StatusSucceeded: true, StatusFailed: true, StatusCancelled: true, StatusDenied: true}

// checkField checks a field's value against its kind. The error's Where is
// relative to the field ("" for the value itself, "[2].question" inside it),
// so that the field's own path is spelled only when there is an error (see
// under).
func checkField(kind fieldKind, v any) error {
	switch kind {
	case kString:
		if _, ok := v.(string); !ok {
			return shapeErr("", "a string")
		}
	case kBool:
		if _, ok := v.(bool); !ok {
			return shapeErr("", "a boolean")
		}
	case kStatus:
		if s, ok := v.(string); !ok || !toolStatuses[s] {
			return shapeErr("", "running, succeeded, failed, cancelled or denied")
		}
	case kLinks:
		a, ok := v.([]any)
		if !ok {
			return shapeErr("", "an array")
		}
		for i, x := range a {
			m, ok := x.(map[string]any)
			if !ok {
				return shapeErr(fmt.Sprintf("[%d]", i), "an object")
			}
			for _, k := range []string{"title", "url"} {
				if y, present := m[k]; present {
					if _, ok := y.(string); !ok {
						return shapeErr(fmt.Sprintf("[%d].%s", i, k), "a string")
					}
				}
			}
		}
	case kQuestions:
		a, ok := v.([]any)
		if !ok {
			return shapeErr("", "an array")
		}
		for i, x := range a {
			m, ok := x.(map[string]any)
			if !ok {
				return shapeErr(fmt.Sprintf("[%d]", i), "an object")
			}
			if q, present := m["question"]; present {
				if _, ok := q.(string); !ok {
					return shapeErr(fmt.Sprintf("[%d].question", i), "a string")
				}
			}
			if o, present := m["options"]; present {
				if _, ok := o.([]any); !ok {
					return shapeErr(fmt.Sprintf("[%d].options", i), "an array")
				}
			}
		}
	}
	return nil
}

// under returns err, a *FormatError whose Where is relative to where,
// with where put in front.
func under(where string, err error) error {
	if fe, ok := err.(*FormatError); ok {
		return &FormatError{Where: where + fe.Where, Msg: fe.Msg}
	}
	return err
}

func decodeItems(v any) ([]Item, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, shapeErr("items", "an array")
	}
	items := make([]Item, len(a))
	for i, x := range a {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, shapeErr(fmt.Sprintf("items[%d]", i), "an object")
		}
		if err := checkItem(m); err != nil {
			return nil, under(fmt.Sprintf("items[%d]", i), err)
		}
		items[i] = ItemFromMap(m)
	}
	return items, nil
}

// checkItem checks an item's fields; the error's Where is relative to the
// item (".type").
func checkItem(m map[string]any) error {
	id, ok := m["id"].(string)
	if !ok || id == "" {
		return &FormatError{Where: ".id", Msg: "missing or not a string"}
	}
	typ, ok := m["type"].(string)
	if !ok {
		return &FormatError{Where: ".type", Msg: "missing or not a string"}
	}
	own, ok := itemFields[typ]
	if !ok {
		return &FormatError{Where: ".type", Msg: fmt.Sprintf("unknown item type %q", typ)}
	}
	for k, x := range m {
		kind, ok := own[k]
		if !ok {
			kind, ok = commonFields[k]
		}
		if !ok {
			continue
		}
		if err := checkField(kind, x); err != nil {
			return under("."+k, err)
		}
	}
	return nil
}

// blockFields are the required fields of each history block type.
var blockFields = map[string]map[string]fieldKind{
	BlockText:         {"text": kString},
	BlockImage:        {"mimeType": kString, "sha256": kString},
	BlockImageOmitted: {"mimeType": kString},
	BlockToolCall:     {"id": kString, "name": kString, "arguments": kString},
	BlockToolResult:   {"callID": kString, "toolName": kString, "content": kString, "isError": kBool},
}

// decodeHistory reads the history; a text block's text or a tool result's
// content that shared holds is given shared's value.
func decodeHistory(v any, shared map[string]any) ([]Message, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, shapeErr("history", "an array")
	}
	msgs := make([]Message, len(a))
	for i, x := range a {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, shapeErr(fmt.Sprintf("history[%d]", i), "an object")
		}
		msg, err := decodeMessage(m, shared)
		if err != nil {
			return nil, under(fmt.Sprintf("history[%d]", i), err)
		}
		msgs[i] = msg
	}
	return msgs, nil
}

// decodeMessage reads one history message; the error's Where is relative
// to the message (".content[2].type").
func decodeMessage(m map[string]any, shared map[string]any) (Message, error) {
	var msg Message
	for k, y := range m {
		switch k {
		case "role":
			s, ok := y.(string)
			if !ok {
				return Message{}, shapeErr(".role", "a string")
			}
			msg.Role = s
		case "content":
			blocks, ok := y.([]any)
			if !ok {
				return Message{}, shapeErr(".content", "an array")
			}
			msg.Content = make([]Block, len(blocks))
			for j, z := range blocks {
				b, err := decodeBlock(z, shared)
				if err != nil {
					return Message{}, under(fmt.Sprintf(".content[%d]", j), err)
				}
				msg.Content[j] = b
			}
		default:
			if msg.Extra == nil {
				msg.Extra = make(map[string]any)
			}
			msg.Extra[k] = y
		}
	}
	if _, ok := m["role"]; !ok {
		return Message{}, &FormatError{Where: ".role", Msg: "missing"}
	}
	if msg.Content == nil {
		return Message{}, &FormatError{Where: ".content", Msg: "missing"}
	}
	return msg, nil
}

// decodeBlock reads one history block; the error's Where is relative to
// the block.
func decodeBlock(v any, shared map[string]any) (Block, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Block{}, shapeErr("", "an object")
	}
	typ, ok := m["type"].(string)
	if !ok {
		return Block{}, &FormatError{Where: ".type", Msg: "missing or not a string"}
	}
	fields, ok := blockFields[typ]
	if !ok {
		return Block{}, &FormatError{Where: ".type", Msg: fmt.Sprintf("unknown block type %q", typ)}
	}
	for k, kind := range fields {
		x, present := m[k]
		if !present {
			return Block{}, &FormatError{Where: "." + k, Msg: "missing"}
		}
		if err := checkField(kind, x); err != nil {
			return Block{}, under("."+k, err)
		}
	}
	// A text or tool output an item holds too is held once.
	if k := sharedKey(typ); k != "" {
		if t, ok := shared[m[k].(string)]; ok {
			m[k] = t
		}
	}
	return BlockFromMap(m), nil
}

// describeLoadError turns a decode error into the one line the notice shows.
func describeLoadError(err error) string {
	msg := err.Error()
	return strings.TrimSuffix(msg, ".")
}
