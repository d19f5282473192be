package backend

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"spbridge/internal/itemmap"
)

// A Grant is what an "always" answer to a permission request covers for
// the rest of the session, scoped the way Claude Code scopes its own
// rules. A command (Claude's Bash, Codex's shell: an input with a
// "command") is covered by its program and first argument, so "always" on
// `npm test` covers `npm test -- --watch` but neither `npm publish` nor
// `rm`; a command whose first argument is an option (`rm -rf build`) or
// that uses the shell's operators, pipes, redirections or substitutions is
// covered only as exactly that command. An edit (an input naming a
// file_path or notebook_path) is covered for that file. Any other tool (an
// MCP tool, say) is covered by its name.
//
// AllEdits covers every edit of the session, whatever the tool and file:
// the editor's "allow all edits", which also puts a CLI that has such a
// mode into it (Claude Code's acceptEdits).
type Grant struct {
	Tool     string
	Prefix   []string // the command's leading words
	Exact    string   // the whole command, when covered only as itself
	File     string   // the edited file
	AllEdits bool     // every edit, of any file
}

// shellSpecial are the characters that make a command more than a program
// and its arguments.
const shellSpecial = ";&|<>`$()\n\\*?{}[]~"

// GrantFor is the grant an "always" answer to a gives.
func GrantFor(a itemmap.Approval) Grant {
	if cmd := ApprovalCommand(a); cmd != "" {
		words := strings.Fields(cmd)
		if strings.ContainsAny(cmd, shellSpecial) || len(words) < 2 || strings.HasPrefix(words[1], "-") {
			return Grant{Tool: a.ToolName, Exact: strings.Join(words, " ")}
		}
		return Grant{Tool: a.ToolName, Prefix: words[:2]}
	}
	if f := approvalFile(a); f != "" {
		return Grant{Tool: a.ToolName, File: f}
	}
	return Grant{Tool: a.ToolName}
}

// Allows reports whether g covers a.
func (g Grant) Allows(a itemmap.Approval) bool {
	if g.AllEdits {
		return approvalFile(a) != "" && ApprovalCommand(a) == ""
	}
	if a.ToolName != g.Tool {
		return false
	}
	switch {
	case g.File != "":
		return approvalFile(a) == g.File
	case g.Exact != "":
		return strings.Join(strings.Fields(ApprovalCommand(a)), " ") == g.Exact
	case g.Prefix != nil:
		cmd := ApprovalCommand(a)
		words := strings.Fields(cmd)
		return !strings.ContainsAny(cmd, shellSpecial) && len(words) >= len(g.Prefix) && slices.Equal(words[:len(g.Prefix)], g.Prefix)
	}
	return true
}

// String says what g covers: "`npm test …`", "`rm -rf x`", "edits of
// a.go", "every mcp__s__t request".
func (g Grant) String() string {
	switch {
	case g.AllEdits:
		return "all edits"
	case g.File != "":
		return g.Tool + " of " + g.File
	case g.Exact != "":
		return "`" + g.Exact + "`"
	case g.Prefix != nil:
		return "`" + strings.Join(g.Prefix, " ") + " …`"
	}
	return "every " + g.Tool + " request"
}

// ClaudeRule is g as a Claude Code permission rule's content for its
// tool: "npm test:*" for a prefix, the command for an exact one, the file
// as an absolute path ("//home/me/a.go") for an edit, "" for the whole
// tool.
func (g Grant) ClaudeRule() string {
	switch {
	case g.File != "":
		if filepath.IsAbs(g.File) {
			return "/" + filepath.ToSlash(g.File)
		}
		return filepath.ToSlash(g.File)
	case g.Exact != "":
		return g.Exact
	case g.Prefix != nil:
		return strings.Join(g.Prefix, " ") + ":*"
	}
	return ""
}

// ApprovalCommand is the command a permission request is about, "" when
// it is not about a command.
func ApprovalCommand(a itemmap.Approval) string {
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(a.Input, &in) != nil || len(in.Command) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(in.Command, &s) == nil {
		return strings.TrimSpace(s)
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return ""
}

// approvalFile is the file an edit's request is about, "" when none.
func approvalFile(a itemmap.Approval) string {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	if json.Unmarshal(a.Input, &in) != nil {
		return ""
	}
	if in.FilePath != "" {
		return filepath.Clean(in.FilePath)
	}
	if in.NotebookPath != "" {
		return filepath.Clean(in.NotebookPath)
	}
	return ""
}
