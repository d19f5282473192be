package backend

import (
	"encoding/json"
	"testing"

	"spbridge/internal/itemmap"
)

// TestGrant: what an "always" answer covers.
func TestGrant(t *testing.T) {
	bash := func(cmd string) itemmap.Approval {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return itemmap.Approval{ToolName: "Bash", Input: in}
	}
	for _, tc := range []struct {
		granted, asked string
		want           bool
	}{
		{"npm test", "npm test", true},
		{"npm test", "npm  test -- --watch", true},
		{"npm test", "npm publish", false},
		{"npm test", "npm test && rm -rf /", false},
		{"go test ./...", "go test -run X ./cmd", true},
		{"rm -rf build", "rm -rf build", true},
		{"rm -rf build", "rm -rf /", false},
		{"ls", "ls", true},
		{"ls", "ls /etc", false},
		{"cat a | wc", "cat a | wc", true},
		{"cat a | wc", "cat a", false},
	} {
		g := GrantFor(bash(tc.granted))
		if got := g.Allows(bash(tc.asked)); got != tc.want {
			t.Errorf("GrantFor(%q).Allows(%q) = %v, want %v", tc.granted, tc.asked, got, tc.want)
		}
	}
	edit := func(f string) itemmap.Approval {
		return itemmap.Approval{ToolName: "Edit", Input: json.RawMessage(`{"file_path":"` + f + `"}`)}
	}
	if g := GrantFor(edit("/p/a.go")); !g.Allows(edit("/p/./a.go")) || g.Allows(edit("/p/b.go")) || g.Allows(bash("ls")) {
		t.Errorf("GrantFor(Edit) = %v: want the edits of /p/a.go and nothing else", g)
	} else if r := g.ClaudeRule(); r != "//p/a.go" {
		t.Errorf("GrantFor(Edit).ClaudeRule() = %q, want //p/a.go", r)
	}
	mcp := itemmap.Approval{ToolName: "mcp__s__t", Input: json.RawMessage(`{"q":1}`)}
	if g := GrantFor(mcp); !g.Allows(itemmap.Approval{ToolName: "mcp__s__t"}) || g.String() != "every mcp__s__t request" || g.ClaudeRule() != "" {
		t.Errorf("GrantFor(mcp) = %v", g)
	}
	if r := GrantFor(bash("npm test")).ClaudeRule(); r != "npm test:*" {
		t.Errorf("ClaudeRule(npm test) = %q", r)
	}
	all := Grant{AllEdits: true}
	write := itemmap.Approval{ToolName: "Write", Input: json.RawMessage(`{"file_path":"/q/new.go","content":"x"}`)}
	if !all.Allows(edit("/p/a.go")) || !all.Allows(write) || all.Allows(bash("ls")) || all.Allows(mcp) || all.String() != "all edits" {
		t.Errorf("AllEdits: want every edit of any file and nothing else")
	}
	codex := itemmap.Approval{ToolName: "shell", Input: json.RawMessage(`{"command":["git","status"]}`)}
	if g := GrantFor(codex); g.String() != "`git status …`" {
		t.Errorf("GrantFor(%s) = %v", codex.Input, g)
	}
}
