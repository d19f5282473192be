package backend

import (
	"encoding/json"
	"fmt"
)

// MCP server transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// NameValue is one environment variable or HTTP header of an MCP server.
// Its Value may be a secret: it never goes on a command line.
type NameValue struct {
	Name  string
	Value string
}

// MCPServer is an MCP server the editor asks the CLI to use, in neutral
// form. Transport is MCPStdio (Command, Args, Env), MCPHTTP or MCPSSE (URL,
// Headers).
type MCPServer struct {
	Name      string
	Transport string
	Command   string
	Args      []string
	Env       []NameValue
	URL       string
	Headers   []NameValue
}

// nameValues is a list of name/value pairs as a JSON object.
func nameValues(list []NameValue) map[string]string {
	m := make(map[string]string, len(list))
	for _, nv := range list {
		m[nv.Name] = nv.Value
	}
	return m
}

// ClaudeMCPConfig is the file `claude --mcp-config` reads for servers:
// {"mcpServers": {name: {"type": "stdio", command, args, env} | {"type":
// "http"|"sse", url, headers}}}. A server of an unknown transport is an
// error.
func ClaudeMCPConfig(servers []MCPServer) ([]byte, error) {
	all := make(map[string]any, len(servers))
	for _, s := range servers {
		switch s.Transport {
		case MCPStdio:
			args := s.Args
			if args == nil {
				args = []string{}
			}
			all[s.Name] = map[string]any{"type": "stdio", "command": s.Command, "args": args, "env": nameValues(s.Env)}
		case MCPHTTP, MCPSSE:
			all[s.Name] = map[string]any{"type": s.Transport, "url": s.URL, "headers": nameValues(s.Headers)}
		default:
			return nil, fmt.Errorf("mcp server %q: unknown transport %q", s.Name, s.Transport)
		}
	}
	return json.Marshal(map[string]any{"mcpServers": all})
}
