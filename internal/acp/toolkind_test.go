package acp

import "testing"

// TestToolKindEveryName: the ACP kind of every tool name the CLIs' tool
// vocabularies know, and of names no CLI claims (other), as it was when
// the kinds lived in one switch here.
func TestToolKindEveryName(t *testing.T) {
	for name, want := range map[string]string{
		"Bash": "execute", "exec_command": "execute", "shell": "execute", "command_execution": "execute",
		"Read": "read", "NotebookRead": "read", "view_image": "read",
		"Write": "edit", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit", "apply_patch": "edit", "file_change": "edit",
		"Grep": "search", "Glob": "search", "LS": "search",
		"WebFetch": "fetch", "WebSearch": "fetch", "web_search": "fetch",
		"Task": "think", "Agent": "think", "TodoWrite": "think",
		// Commands a grant scopes, yet shown as other tools.
		"Monitor": "other", "PowerShell": "other",
		"": "other", "mcp__srv__write_file": "other", "bash": "other", "read": "other", "AskUserQuestion": "other", "ExitPlanMode": "other",
	} {
		if got := toolKind(name); got != want {
			t.Errorf("toolKind(%q) = %q, want %q", name, got, want)
		}
	}
}
