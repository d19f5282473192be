package wire

import (
	"reflect"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
)

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

// TestRestoredToolFile: a restored tool item (no view) of a tool whose
// summary is the one file it reads or changes shows that file as its
// location, absolute against the session's folder; any other tool's
// summary is no location. A restored web search is a fetch.
func TestRestoredToolFile(t *testing.T) {
	for name, want := range map[string]bool{
		"Read": true, "Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true, "view_image": true,
		"NotebookRead": false, "Bash": false, "shell": false, "apply_patch": false, "file_change": false, "Grep": false, "mcp__s__read": false,
	} {
		it := archive.ItemFromMap(map[string]any{"id": "t1", "type": archive.TypeTool, "name": name, "summary": "src/a.go",
			"status": archive.StatusSucceeded})
		u := ToolOf("tool_call", it, nil, "/w")
		got := len(u.locations) == 1 && u.locations[0].Path == absPath("src/a.go", "/w")
		if got != want || !want && len(u.locations) != 0 {
			t.Errorf("%s: locations %+v, want the file %v", name, u.locations, want)
		}
	}
	ws := archive.ItemFromMap(map[string]any{"id": "w1", "type": archive.TypeWebSearch, "query": "go", "status": archive.StatusSucceeded})
	if u := ToolOf("tool_call", ws, nil, "/w"); u.kind != "fetch" {
		t.Errorf("a restored web search is of kind %q", u.kind)
	}
}

func TestTodoEntries(t *testing.T) {
	tests := []struct {
		text    string
		entries []itemmap.PlanEntry
		todo    bool
	}{
		{"[x] a\n[ ] b\n", []itemmap.PlanEntry{{Content: "a", Status: "completed"}, {Content: "b", Status: "pending"}}, true},
		{"# Plan\n[x] a", []itemmap.PlanEntry{{Content: "# Plan", Status: "pending"}, {Content: "a", Status: "completed"}}, false},
		{"", []itemmap.PlanEntry{}, false},
	}
	for _, tt := range tests {
		entries, todo := TodoEntries(tt.text)
		if !reflect.DeepEqual(entries, tt.entries) || todo != tt.todo {
			t.Errorf("TodoEntries(%q) = %v, %v, want %v, %v", tt.text, entries, todo, tt.entries, tt.todo)
		}
	}
}
