package codex

import (
	"encoding/json"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/itemmap"
)

// TestExactCommand: codex is told a grant (acceptForSession) only when it
// covers one exact shell command.
func TestExactCommand(t *testing.T) {
	grant := func(tool, cmd string, tools backend.Tools) backend.Grant {
		in, _ := json.Marshal(map[string]any{"command": cmd})
		g, ok := backend.GrantFor(itemmap.Approval{ToolName: tool, Input: in, Cwd: "/p/work"}, tools)
		if !ok {
			t.Fatalf("GrantFor(%s %s): no grant", tool, cmd)
		}
		return g
	}
	if !exactCommand(grant("shell", "rm -rf build", Plugin.Tools)) || exactCommand(grant("shell", "npm test", Plugin.Tools)) ||
		exactCommand(grant("Bash", "rm -rf build", claude.Plugin.Tools)) || exactCommand(backend.Grant{AllEdits: true}) {
		t.Error("exactCommand: want exact shell commands only")
	}
}
