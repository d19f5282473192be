package claude

import (
	"encoding/json"
	"fmt"

	"spbridge/internal/backend"
	"spbridge/internal/secretfile"
	"spbridge/internal/statedir"
	"spbridge/internal/trust"
)

// writeMCPConfig writes the file `claude --mcp-config` reads, with the
// editor's MCP servers and their env and headers, in the state folder's
// run folder (internal/secretfile), first removing the files there of
// spbridge processes that are gone (killed before their claude read them).
// It returns the file's path and the function that removes it, which
// mcpConfigRead calls once claude has read it, and the process's end
// otherwise.
func (b *Backend) writeMCPConfig(own map[string]json.RawMessage) (path string, remove func(), err error) {
	data, err := mcpConfig(own, b.Opts.MCPServers)
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

// userMCPServers are the MCP servers of the user's own Claude Code
// configuration for a claude in dir: its user scope (mcpServers) and its
// local scope for dir (projects[dir].mcpServers), both in the user's
// global configuration (ReadConfig), as Claude Code keeps them.
// With --strict-mcp-config claude starts only the servers of
// --mcp-config, so an untrusted folder's claude is given these there: the
// folder's .mcp.json waits for its trust, the user's own servers do not.
func userMCPServers(dir string, env []string) map[string]json.RawMessage {
	c := ReadConfig(env)
	out := make(map[string]json.RawMessage, len(c.MCPServers))
	for name, s := range c.MCPServers {
		out[name] = s
	}
	keys := []string{dir}
	if k, err := trust.Key(dir); err == nil && k != dir {
		keys = append(keys, k)
	}
	for _, k := range keys {
		for name, s := range c.Projects[k].MCPServers {
			out[name] = s // the local scope comes before the user's, as in Claude Code
		}
	}
	return out
}

// mcpConfig is the file `claude --mcp-config` reads for servers: the
// user's own (own, as their configuration holds them), then the editor's,
// which win a name both have: {"mcpServers": {name: {"type": "stdio",
// command, args, env} | {"type": "http"|"sse", url, headers}}}. An editor
// server of an unknown transport is an error.
func mcpConfig(own map[string]json.RawMessage, servers []backend.MCPServer) ([]byte, error) {
	all := make(map[string]any, len(own)+len(servers))
	for name, s := range own {
		all[name] = s
	}
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
