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

// FakeMCPServer is a minimal MCP server on in and out (JSON-RPC lines):
// initialize, and one tool, "shout", which answers its text in upper case
// followed by $FAKE_MCP_TOKEN. It returns when in ends.
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
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification
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
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}}
		case "tools/call":
			var p struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			}
			json.Unmarshal(req.Params, &p)
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.ToUpper(p.Arguments.Text) + " " + os.Getenv(MCPTokenEnv)}}}
		default:
			enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no " + req.Method}})
			continue
		}
		enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}
