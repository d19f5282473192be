package claude

import (
	"strings"

	"spbridge/internal/backend"
)

// sessionRule is g as a Claude Code session rule ({"toolName": …}), for
// the grants whose rule means exactly what g covers; false for the
// others, which spbridge keeps to itself. Claude Code 2.1's rule content
// widens what it names: a Bash rule's `*` is a wildcard and `:*` a prefix,
// and a command is matched after Claude Code strips wrappers (timeout,
// nice, nohup, …) and variable assignments from it; an Edit or Read rule
// is a gitignore pattern that covers every edit tool (or every read
// tool). So only a whole tool by its plain name is told: an MCP tool
// (mcp__server__tool), WebFetch, and the like.
func sessionRule(g backend.Grant) (map[string]any, bool) {
	tool, ok := g.WholeTool()
	if !ok || !plainToolName(tool) {
		return nil, false
	}
	return map[string]any{"toolName": tool}, true
}

// plainToolName reports whether name is a tool's plain name, which a
// Claude Code rule without content takes as that one tool: letters,
// digits, _ and -, and for an MCP tool its server and tool both named
// (mcp__server alone is the whole server).
func plainToolName(name string) bool {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) {
		return false
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		server, tool, ok := strings.Cut(rest, "__")
		return ok && server != "" && strings.Trim(tool, "_") != ""
	}
	return true
}
