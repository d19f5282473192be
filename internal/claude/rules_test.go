package claude

import (
	"encoding/json"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// TestSessionRule: a grant is told to Claude Code only where its own rule
// means exactly the same: a whole tool by its plain name.
func TestSessionRule(t *testing.T) {
	approval := func(tool string, input any) itemmap.Approval {
		in, _ := json.Marshal(input)
		return itemmap.Approval{ToolName: tool, Input: in}
	}
	for _, a := range []itemmap.Approval{
		approval("Bash", map[string]string{"command": "rm -f *"}),
		approval("Bash", map[string]string{"command": "npm test"}),
		approval("Bash", map[string]string{"command": "git status"}),
		approval("Edit", map[string]string{"file_path": "/p/a.go"}),
		approval("Read", map[string]string{"file_path": "/p/*.go"}),
		approval("mcp__s", map[string]string{}),
		approval("mcp__s__*", map[string]string{}),
		approval("Web(Fetch)", map[string]string{}),
	} {
		if g, ok := backend.GrantFor(a, Plugin.Tools); ok {
			if r, told := sessionRule(g); told {
				t.Errorf("GrantFor(%s %s) told to Claude Code as %v", a.ToolName, a.Input, r)
			}
		}
	}
	if _, told := sessionRule(backend.Grant{AllEdits: true, Roots: []string{"/w"}}); told {
		t.Error("all edits told to Claude Code")
	}
	for _, name := range []string{"mcp__srv__write_file", "WebFetch"} {
		g, ok := backend.GrantFor(approval(name, map[string]string{}), Plugin.Tools)
		if !ok {
			t.Fatalf("no grant for %s", name)
		}
		if r, told := sessionRule(g); !told || r["toolName"] != name || len(r) != 1 {
			t.Errorf("sessionRule(GrantFor(%s)) = %v, %v, want the whole tool", name, r, told)
		}
	}
}
