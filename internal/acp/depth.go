package acp

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// maxMessageDepth is the deepest nesting of arrays and objects a message
// may have: encoding/json, which reads every message, refuses a deeper
// one (its limit is 10,000 levels).
const maxMessageDepth = 10000

// tooDeep reports whether the JSON text b nests arrays and objects deeper
// than max, counting only brackets outside strings (escapes honoured). It
// does not validate b and allocates nothing.
func tooDeep(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// tooDeepMessage answers a line nested deeper than maxMessageDepth. Only
// its top-level members are read, with gjson, which steps over the deep
// part without recursion or building it. A request gets -32600 with its
// own id (null when the id cannot be read or is not one JSON-RPC allows);
// a response to one of our requests gives that request the error instead,
// as an answer that could not be read; any other response is dropped, as
// a response is never answered.
func (s *Server) tooDeepMessage(line []byte) {
	var id json.RawMessage
	if r := gjson.GetBytes(line, "id"); r.Exists() && json.Valid([]byte(r.Raw)) && validID(json.RawMessage(r.Raw)) {
		id = json.RawMessage(r.Raw)
	}
	res := gjson.GetManyBytes(line, "method", "result", "error")
	if !res[0].Exists() && (res[1].Exists() || res[2].Exists()) {
		if id != nil {
			data, _ := json.Marshal(rpcErrorf(CodeInvalidRequest, "the client's answer is nested deeper than %d levels", maxMessageDepth))
			s.answer(&message{JSONRPC: "2.0", ID: id, Error: data})
		}
		return
	}
	s.w.fail(id, rpcErrorf(CodeInvalidRequest, "invalid request: nested deeper than %d levels", maxMessageDepth))
}
