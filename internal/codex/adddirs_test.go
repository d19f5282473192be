package codex

import (
	"reflect"
	"testing"

	"spbridge/internal/backend"
)

// TestExecArgsAddDirs: codex exec gets one --add-dir a folder, after exec
// and before resume (exec resume has no such flag).
func TestExecArgsAddDirs(t *testing.T) {
	b := New(Options{Transport: TransportExec, Options: backend.Options{Dir: "/srv/work", AddDirs: []string{"/srv/assets", "/home/me/b"}}})
	want := []string{"-c", `sandbox_mode="workspace-write"`, "-c", "tools.update_plan.enabled=true", "-c", untrustedSrvWork, "exec", "--add-dir", "/srv/assets", "--add-dir", "/home/me/b", "--json", "--skip-git-repo-check", "-"}
	if got := b.args(nil); !reflect.DeepEqual(got, want) {
		t.Errorf("first turn: args = %q, want %q", got, want)
	}
	b.thread = "th-1"
	want = []string{"-c", `sandbox_mode="workspace-write"`, "-c", "tools.update_plan.enabled=true", "-c", untrustedSrvWork, "exec", "--add-dir", "/srv/assets", "--add-dir", "/home/me/b", "resume", "--json", "--skip-git-repo-check", "th-1", "-"}
	if got := b.args(nil); !reflect.DeepEqual(got, want) {
		t.Errorf("later turn: args = %q, want %q", got, want)
	}
}

// TestTurnSettingsWritableRoots: with additional folders, every turn/start
// in a workspace-write mode carries the sandbox policy with them as
// writable roots; read-only and full access carry none; without folders
// the policy goes only when the mode changed.
func TestTurnSettingsWritableRoots(t *testing.T) {
	dirs := []string{"/srv/assets", "/home/me/b"}
	policy := func(b *Backend) any {
		params := map[string]any{}
		b.turnSettings(params)
		return params["sandboxPolicy"]
	}
	b := New(Options{Options: backend.Options{AddDirs: dirs}})
	b.threadMode = b.mode
	want := map[string]any{"type": "workspaceWrite", "writableRoots": dirs}
	for turn := 1; turn <= 2; turn++ {
		if got := policy(b); !reflect.DeepEqual(got, want) {
			t.Errorf("auto, turn %d: sandboxPolicy = %v, want %v", turn, got, want)
		}
	}
	for mode, want := range map[string]any{ModeReadOnly: map[string]any{"type": "readOnly"}, ModeFullAccess: map[string]any{"type": "dangerFullAccess"}} {
		b.mode = mode
		if got := policy(b); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: sandboxPolicy = %v, want %v", mode, got, want)
		}
		if got := policy(b); got != nil {
			t.Errorf("%s, the next turn: sandboxPolicy = %v, want none", mode, got)
		}
	}
	plain := New(Options{})
	plain.threadMode = plain.mode
	if got := policy(plain); got != nil {
		t.Errorf("no folders: sandboxPolicy = %v, want none", got)
	}
}
