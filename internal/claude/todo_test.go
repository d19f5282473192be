package claude

import (
	"slices"
	"testing"
)

// TestWithTodoTools: claude runs with TodoWrite switched on, unless the
// environment spbridge was given says otherwise.
func TestWithTodoTools(t *testing.T) {
	got := withTodoTools([]string{"HOME=/h"})
	if want := []string{"HOME=/h", "CLAUDE_CODE_ENABLE_TODO_TOOLS=true", "CLAUDE_CODE_ENABLE_TASKS=false"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	base := []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=false", "HOME=/h"}
	got = withTodoTools(base)
	if want := []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=false", "HOME=/h", "CLAUDE_CODE_ENABLE_TASKS=false"}; !slices.Equal(got, want) {
		t.Errorf("the user's choice: got %q, want %q", got, want)
	}
	if len(base) != 2 || cap(base) != 2 {
		t.Errorf("the caller's slice changed")
	}
	b := New(Options{Env: []string{"HOME=/h"}})
	if env := b.Env(); !slices.Contains(env, "CLAUDE_CODE_ENABLE_TODO_TOOLS=true") {
		t.Errorf("the backend's environment %q", env)
	}
}
