package fakeapi

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
)

// MCPServerEnv names the environment variable that a test binary checks in
// its TestMain to act as FakeMCPServer (the CLI starts it as an MCP server
// over stdio).
const MCPServerEnv = "SPBRIDGE_FAKE_MCP"

// MCPTokenEnv is the variable whose value the fake MCP server's tool adds
// to its answer, so that a test can see a secret given in the server's
// environment reach it.
const MCPTokenEnv = "FAKE_MCP_TOKEN"

// askSchema is the form the fake MCP server's "ask" tool asks the client
// to fill (an MCP elicitation): a choice and a yes or no.
var askSchema = map[string]any{"type": "object", "required": []any{"color"}, "properties": map[string]any{
	"color":   map[string]any{"type": "string", "title": "Color", "enum": []any{"red", "blue"}, "enumNames": []any{"Red", "Blue"}},
	"confirm": map[string]any{"type": "boolean", "title": "Sure?"},
}}

// FakeMCPServer is a minimal MCP server on in and out (JSON-RPC lines):
// initialize, and two tools: "shout", which answers its text in upper case
// followed by $FAKE_MCP_TOKEN, and "ask", which asks the client to fill a
// form (elicitation/create with askSchema) and answers what the client
// said, as JSON. It returns when in ends.
func FakeMCPServer(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil || req.Method == "" {
			continue // a notification, or an answer not waited for
		}
		var result any
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(req.Params, &p)
			result = map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "fake", "version": "1"}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "shout", "description": "Shouts the text back, with the token the server was given.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
				map[string]any{"name": "ask", "description": "Asks the user to pick a color.", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}
		case "tools/call":
			var p struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			}
			json.Unmarshal(req.Params, &p)
			text := strings.ToUpper(p.Arguments.Text) + " " + os.Getenv(MCPTokenEnv)
			if p.Name == "ask" {
				enc.Encode(map[string]any{"jsonrpc": "2.0", "id": "elicit", "method": "elicitation/create",
					"params": map[string]any{"mode": "form", "message": "Pick a color", "requestedSchema": askSchema}})
				text = awaitAnswer(sc, "elicit")
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
		default:
			enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no " + req.Method}})
			continue
		}
		enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}

// awaitAnswer reads lines until the answer to the server's request id, and
// returns its result (or error) as JSON; "" when in ends first.
func awaitAnswer(sc *bufio.Scanner, id string) string {
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method != "" || string(m.ID) != `"`+id+`"` {
			continue
		}
		if m.Error != nil {
			return string(m.Error)
		}
		return string(m.Result)
	}
	return ""
}
