package claude

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestArgsSameFolder: trusted folder or not, claude is given settings (of
// --settings, over every settings file but the managed ones) that make
// each Bash command start in the session's folder, so that a request's
// folder is known (TestE2EServeClaudeGrantFolder shows it on the real
// CLI).
func TestArgsSameFolder(t *testing.T) {
	b := New(Options{})
	for _, trusted := range []bool{false, true} {
		a := b.argsTrusted(trusted)
		i := slices.Index(a, "--settings")
		if i < 0 || i+1 >= len(a) {
			t.Fatalf("trusted %v: args %q lack --settings", trusted, a)
		}
		var s struct{ Env map[string]string }
		if err := json.Unmarshal([]byte(a[i+1]), &s); err != nil || s.Env["CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR"] != "1" {
			t.Errorf("trusted %v: --settings %q (%v)", trusted, a[i+1], err)
		}
	}
}
