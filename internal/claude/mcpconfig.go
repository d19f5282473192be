package claude

import (
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
	data, err := backend.ClaudeMCPConfig(b.Opts.MCPServers)
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
