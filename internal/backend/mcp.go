package backend

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

// NameValueMap is a list of name/value pairs as a JSON object.
func NameValueMap(list []NameValue) map[string]string {
	m := make(map[string]string, len(list))
	for _, nv := range list {
		m[nv.Name] = nv.Value
	}
	return m
}
