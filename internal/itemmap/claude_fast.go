package itemmap

import (
	"bytes"
	"spbridge/internal/jsonline"
	"unsafe"
)

// The lines most of a claude stream is made of have one shape, always
// written the same way: a content_block_delta of a streaming reply (text,
// thinking or a tool's input as it is produced, four lines in five), and
// the thinking_tokens estimate that follows each thinking delta. The
// mapper reads these in one forward pass over the line, matching the
// fixed parts as they are written and scanning the rest as the validation
// does; a line that differs anywhere (another order, whitespace, an
// escaped key, a nested value, a field that changes what the line means)
// goes the general way. Both ways give the same result for every line
// the fast one takes: FuzzClaudeFastPath checks it.

var (
	// The event as the API sends it.
	deltaPrefix    = []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":`)
	deltaText      = []byte(`,"delta":{"type":"text_delta","text":"`)
	deltaThinking  = []byte(`,"delta":{"type":"thinking_delta","thinking":"`)
	deltaInputJSON = []byte(`,"delta":{"type":"input_json_delta","partial_json":"`)
	// The event with its keys sorted (as a server that writes JSON from
	// maps sends it).
	sortedPrefix    = []byte(`{"type":"stream_event","event":{"delta":{"`)
	sortedFields    = [...]string{fastText: `text":"`, fastThinking: `thinking":"`, fastInputJSON: `partial_json":"`}
	sortedTypes     = [...]string{fastText: `,"type":"text_delta"},"index":`, fastThinking: `,"type":"thinking_delta"},"index":`, fastInputJSON: `,"type":"input_json_delta"},"index":`}
	sortedEventType = []byte(`,"type":"content_block_delta"}`)

	thinkingTokens = []byte(`{"type":"system","subtype":"thinking_tokens",`)

	// The fields after the event, as the CLI writes them.
	tailSession = []byte(`,"session_id":"`)
	tailUUID    = []byte(`","parent_tool_use_id":null,"uuid":"`)
	tailMessage = []byte(`","api_message_id":"`)
)

// Kinds of the lines the fast path takes.
const (
	fastText = iota + 1
	fastThinking
	fastInputJSON
	fastNothing // a line that changes nothing shown
)

// fastLine is what the fast path read of a line.
type fastLine struct {
	kind  int // 0: the line is not one the fast path takes
	index int
	text  []byte // the delta as written in the line, escapes and all
	esc   bool   // text has an escape
	msg   []byte // api_message_id
}

// readFast reads line if it has one of the shapes above, and reports
// whether it does. It needs nothing of the mapper's state.
func readFast(line []byte) (fastLine, bool) {
	if bytes.HasPrefix(line, thinkingTokens) {
		// Changes nothing shown; a subagent's (parent_tool_use_id set)
		// neither.
		_, _, ok := scanFlatFields(line, len(thinkingTokens)-1)
		return fastLine{kind: fastNothing}, ok
	}
	var (
		kind, index int
		text        []byte
		esc, ok     bool
		end         int // where the event object ends
	)
	switch {
	case bytes.HasPrefix(line, deltaPrefix):
		j := len(deltaPrefix)
		if index, j, ok = smallIndex(line, j); !ok {
			return fastLine{}, false
		}
		rest := line[j:]
		switch {
		case bytes.HasPrefix(rest, deltaText):
			kind, j = fastText, j+len(deltaText)
		case bytes.HasPrefix(rest, deltaThinking):
			kind, j = fastThinking, j+len(deltaThinking)
		case bytes.HasPrefix(rest, deltaInputJSON):
			kind, j = fastInputJSON, j+len(deltaInputJSON)
		default:
			return fastLine{}, false
		}
		textStart := j
		if end, esc, ok = jsonline.ScanString(line, j); !ok || len(line)-end < 2 || line[end] != '}' || line[end+1] != '}' {
			return fastLine{}, false
		}
		text = line[textStart : end-1]
		end += 2
	case bytes.HasPrefix(line, sortedPrefix):
		j := len(sortedPrefix)
		rest := bytesString(line[j:])
		for k := fastText; k <= fastInputJSON; k++ {
			if len(rest) >= len(sortedFields[k]) && rest[:len(sortedFields[k])] == sortedFields[k] {
				kind = k
			}
		}
		if kind == 0 {
			return fastLine{}, false
		}
		textStart := j + len(sortedFields[kind])
		if j, esc, ok = jsonline.ScanString(line, textStart); !ok {
			return fastLine{}, false
		}
		text = line[textStart : j-1]
		rest = bytesString(line[j:])
		if len(rest) < len(sortedTypes[kind]) || rest[:len(sortedTypes[kind])] != sortedTypes[kind] {
			return fastLine{}, false
		}
		if index, j, ok = smallIndex(line, j+len(sortedTypes[kind])); !ok || !bytes.HasPrefix(line[j:], sortedEventType) {
			return fastLine{}, false
		}
		end = j + len(sortedEventType)
	default:
		return fastLine{}, false
	}
	msg, nullParent, ok := scanFlatFields(line, end)
	if !ok || !nullParent {
		return fastLine{}, false
	}
	return fastLine{kind: kind, index: index, text: text, esc: esc, msg: msg}, true
}

// applyFast maps a line the fast path read, as the general way would.
func (m *Claude) applyFast(f *fastLine, r *Result) {
	if f.kind == fastNothing {
		return
	}
	m.ensureTurn()
	b := m.findBlock(blockKey{bytesString(f.msg), f.index})
	if b == nil || b.complete {
		return
	}
	text := f.text
	if f.esc {
		m.scratch = jsonline.Unescape(m.scratch[:0], bytesString(text))
		text = m.scratch
	}
	switch f.kind {
	case fastText, fastThinking:
		m.blockDelta(b, r, bytesString(text))
	case fastInputJSON:
		b.input.Write(text)
	}
}

// smallIndex reads a block index at b[i:]: a small integer (no sign,
// fraction or exponent) followed by a comma or a brace; it gives the index
// and where it ends.
func smallIndex(b []byte, i int) (index, end int, ok bool) {
	j := i
	for j < len(b) && j-i < 9 && b[j] >= '0' && b[j] <= '9' {
		index = index*10 + int(b[j]-'0')
		j++
	}
	if j == i || j-i > 1 && b[i] == '0' || j >= len(b) || b[j] != ',' && b[j] != '}' {
		return 0, 0, false
	}
	return index, j, true
}

// scanFlatFields reads the rest of a line's top-level object from b[i],
// the comma after a field or the closing brace: fields whose values are
// strings, numbers, true, false or null, with keys without escapes, to
// the closing brace, which must end the line. It gives the value of the
// first api_message_id (nil when none) and whether the first
// parent_tool_use_id is null or absent; ok is false when the line is not
// so made (or api_message_id is not a string, or has an escape).
func scanFlatFields(b []byte, i int) (msg []byte, nullParent, ok bool) {
	if msg, ok := scanTail(b, i); ok {
		return msg, true, true
	}
	seenMsg, seenParent := false, false
	nullParent = true
	for {
		if i >= len(b) {
			return nil, false, false
		}
		if b[i] == '}' {
			return msg, nullParent, i+1 == len(b)
		}
		if b[i] != ',' || i+1 >= len(b) || b[i+1] != '"' {
			return nil, false, false
		}
		keyStart := i + 2
		end, esc, ok := jsonline.ScanString(b, keyStart)
		if !ok || esc || end >= len(b) || b[end] != ':' {
			return nil, false, false
		}
		key := bytesString(b[keyStart : end-1])
		i = end + 1
		if i >= len(b) {
			return nil, false, false
		}
		valStart := i
		switch c := b[i]; {
		case c == '"':
			end, esc, ok = jsonline.ScanString(b, i+1)
			if !ok {
				return nil, false, false
			}
			i = end
		case c == 'n':
			if i, ok = jsonline.ScanWord(b, i, "null"); !ok {
				return nil, false, false
			}
		case c == 't':
			if i, ok = jsonline.ScanWord(b, i, "true"); !ok {
				return nil, false, false
			}
		case c == 'f':
			if i, ok = jsonline.ScanWord(b, i, "false"); !ok {
				return nil, false, false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, ok = jsonline.ScanNumber(b, i); !ok {
				return nil, false, false
			}
		default:
			return nil, false, false
		}
		switch key {
		case "api_message_id":
			if !seenMsg {
				seenMsg = true
				if b[valStart] != '"' || esc {
					return nil, false, false
				}
				msg = b[valStart+1 : i-1]
			}
		case "parent_tool_use_id":
			if !seenParent {
				seenParent = true
				nullParent = b[valStart] == 'n'
			}
		}
	}
}

// scanTail reads the fields a stream event ends with as the CLI writes
// them (session_id, a null parent_tool_use_id, uuid, api_message_id, in
// this order, nothing else) from b[i] to the end of the line, and gives
// api_message_id; false when the line ends otherwise.
func scanTail(b []byte, i int) (msg []byte, ok bool) {
	var esc bool
	for _, lit := range [...][]byte{tailSession, tailUUID, tailMessage} {
		if !bytes.HasPrefix(b[i:], lit) {
			return nil, false
		}
		start := i + len(lit)
		if i, esc, ok = jsonline.ScanString(b, start); !ok {
			return nil, false
		}
		i-- // back to the closing quote, where the next literal starts
		msg = b[start:i]
	}
	return msg, !esc && len(b)-i == 2 && b[i+1] == '}'
}

// bytesString is b's bytes as a string, without a copy: not to be kept.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
