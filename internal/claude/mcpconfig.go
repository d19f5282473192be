package claude

import (
	"encoding/json"
	"fmt"

	"spbridge/internal/backend"
	"spbridge/internal/secretfile"
	"spbridge/internal/statedir"
)

// writeMCPConfig writes the file `claude --mcp-config` reads, with the
// editor's MCP servers and their env and headers, in the state folder's
// run folder (internal/secretfile), first removing the files there of
// spbridge processes that are gone (killed before their claude read them).
// It returns the file's path and the function that removes it, which
// mcpConfigRead calls once claude has read it, and the process's end
// otherwise.
func (b *Backend) writeMCPConfig() (path string, remove func(), err error) {
	data, err := mcpConfig(b.Opts.MCPServers)
	if err != nil {
		return "", nil, err
	}
	state, err := statedir.Dir()
	if err != nil {
		return "", nil, fmt.Errorf("mcp config: %w", err)
	}
	secretfile.Sweep(state) // what it cannot remove, the next start tries again
	f, err := secretfile.Write(state, "mcp.json", data)
	if err != nil {
		return "", nil, fmt.Errorf("mcp config: %w", err)
	}
	return f.Path, func() { f.Remove() }, nil
}

// mcpConfigRead removes the running process's --mcp-config file: its
// answer to the initialize request that start sends says it has read it.
// Claude Code 2.1.328 reads the file once, at start-up, before it reads
// its input (a file missing then ends it with "MCP config file not
// found"), and never again while it runs: its servers stay connected, and
// a process started again (--resume) gets a file of its own.
func (b *Backend) mcpConfigRead() {
	b.mu.Lock()
	remove := b.mcpFile
	b.mcpFile = nil
	b.mu.Unlock()
	if remove != nil {
		remove()
	}
}

// mcpConfig is the file `claude --mcp-config` reads for servers:
// {"mcpServers": {name: {"type": "stdio", command, args, env} | {"type":
// "http"|"sse", url, headers}}}. A server of an unknown transport is an
// error.
func mcpConfig(servers []backend.MCPServer) ([]byte, error) {
	all := make(map[string]any, len(servers))
	for _, s := range servers {
		switch s.Transport {
		case backend.MCPStdio:
			args := s.Args
			if args == nil {
				args = []string{}
			}
			all[s.Name] = map[string]any{"type": "stdio", "command": s.Command, "args": args, "env": backend.NameValueMap(s.Env)}
		case backend.MCPHTTP, backend.MCPSSE:
			all[s.Name] = map[string]any{"type": s.Transport, "url": s.URL, "headers": backend.NameValueMap(s.Headers)}
		default:
			return nil, fmt.Errorf("mcp server %q: unknown transport %q", s.Name, s.Transport)
		}
	}
	return json.Marshal(map[string]any{"mcpServers": all})
}
