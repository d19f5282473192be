package clis

import (
	"encoding/json"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// TestGrantVocabulary: what an "always" answer is scoped by, for every
// tool name of the CLIs' vocabularies and a few no CLI claims, as it was
// when the vocabularies lived in backend's grant rules: a command by its
// words and folder, a file's edit or read by its file, a file change by
// its files, any other tool whole; and which of them "all edits" covers.
func TestGrantVocabulary(t *testing.T) {
	const (
		command = "command"
		file    = "file"
		patch   = "patch"
		whole   = "whole"
	)
	dir := t.TempDir()
	for _, tc := range []struct {
		cli, name, scope string
		edit             bool
	}{
		{"claude", "Bash", command, false},
		{"claude", "Monitor", command, false},
		{"claude", "PowerShell", command, false},
		{"codex", "shell", command, false},
		{"claude", "Edit", file, true},
		{"claude", "MultiEdit", file, true},
		{"claude", "Write", file, true},
		{"claude", "NotebookEdit", file, true},
		{"claude", "Read", file, false},
		{"codex", "apply_patch", patch, true},
		{"claude", "WebFetch", whole, false},
		{"claude", "Grep", whole, false},
		{"claude", "mcp__srv__write_file", whole, false},
		{"codex", "exec_command", whole, false},
		{"codex", "mcp__srv__write_file", whole, false},
	} {
		in, _ := json.Marshal(map[string]string{"command": "npm test", "file_path": dir + "/a.go"})
		a := itemmap.Approval{ToolName: tc.name, Input: in, Cwd: dir,
			Tool: &itemmap.ToolView{Locations: []itemmap.Location{{Path: dir + "/b.go"}}}}
		cli, _ := Lookup(tc.cli)
		g, ok := backend.GrantFor(a, cli.Tools)
		if !ok {
			t.Errorf("%s %s: no grant", tc.cli, tc.name)
			continue
		}
		var scope string
		switch {
		case g.Prefix != nil && g.Prefix[0] == "npm" && g.Dir != "":
			scope = command
		case g.File == dir+"/a.go":
			scope = file
		case len(g.Files) == 1 && g.Files[0] == dir+"/b.go":
			scope = patch
		case g.Tool == tc.name:
			if tool, ok := g.WholeTool(); ok && tool == tc.name {
				scope = whole
			}
		}
		if scope != tc.scope {
			t.Errorf("%s %s: grant %+v, scoped as %q, want %q", tc.cli, tc.name, g, scope, tc.scope)
		}
		if !g.Allows(a) {
			t.Errorf("%s %s: its grant does not cover it", tc.cli, tc.name)
		}
		edits, ok := backend.EditsGrant(a, []string{dir}, cli.Tools)
		if ok != tc.edit || ok && !edits.Allows(a) {
			t.Errorf("%s %s: all edits offered %v, want %v", tc.cli, tc.name, ok, tc.edit)
		}
	}
}
