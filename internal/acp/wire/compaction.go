package wire

import "spbridge/internal/canonjson"

// AppendCompactionUpdate encodes a session/update compaction_update of
// compaction id: its status (when not "": else the one it has), its
// error, and its summary when summary is not nil (as text blocks).
func AppendCompactionUpdate(b []byte, sid, id, status, errText string, summary []string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"compaction_update","compactionId":`...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"status":`...)
	b = canonjson.AppendString(b, status)
	if errText != "" {
		b = append(b, `,"error":`...)
		b = canonjson.AppendString(b, errText)
	}
	if summary != nil {
		b = append(b, `,"summary":[`...)
		for i, s := range summary {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = canonjson.AppendString(b, s)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}}\n"...)
}

// AppendCompactionChunk encodes a session/update compaction_summary_chunk
// of compaction id: text appended to its summary.
func AppendCompactionChunk(b []byte, sid, id, text string) []byte {
	b = append(b, updatePrefix...)
	b = canonjson.AppendString(b, sid)
	b = append(b, `,"update":{"sessionUpdate":"compaction_summary_chunk","compactionId":`...)
	b = canonjson.AppendString(b, id)
	b = append(b, `,"content":{"type":"text","text":`...)
	b = canonjson.AppendString(b, text)
	return append(b, "}}}}\n"...)
}
