package codex

import (
	"slices"
	"testing"

	"spbridge/internal/backend"
)

// TestResumeOption: a backend given a thread the user had (Options.Resume)
// has it from the start: exec's first turn is `codex exec resume THREAD`,
// the app-server's first turn resumes it (thread/resume), and the session
// counts as established (no "# Conversation so far" goes to it).
func TestResumeOption(t *testing.T) {
	const thread = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
	b := New(Options{Options: backend.Options{Resume: thread}, Transport: TransportExec})
	a := b.args(nil)
	if i := slices.Index(a, "resume"); i < 0 || !slices.Contains(a[i:], thread) {
		t.Errorf("exec's first turn: %q", a)
	}
	if !b.Started() || b.Thread() != thread {
		t.Errorf("started %v, thread %q", b.Started(), b.Thread())
	}
	if fresh := New(Options{Transport: TransportExec}); slices.Contains(fresh.args(nil), "resume") || fresh.Started() {
		t.Error("a backend without Resume resumes")
	}
}
