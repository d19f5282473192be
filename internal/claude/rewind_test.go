package claude

import (
	"bufio"
	"context"
	"os"
	"slices"
	"testing"
)

// TestRewindResumesAtTurnEnd reads a recorded turn's lines as a turn
// would (observe), and checks that a rewind resumes the session at the
// last message of the turn kept, on the next start's command line only.
func TestRewindResumesAtTurnEnd(t *testing.T) {
	b := New(Options{})
	b.session = "S"
	f, err := os.Open("../../testdata/claude/tool_edit.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.observe(sc.Bytes(), nil)
	}
	// The recording's last message: its final assistant line.
	const last = "e3a5c7d4-ad63-46da-8b65-372577cc7041"
	b.turnEnded()
	b.lastUUID = "second-turn-end"
	b.turnEnded()
	if err := b.Rewind(context.Background(), 2); err == nil {
		t.Error("a rewind of both turns of the session succeeded")
	}
	if err := b.Rewind(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	args := b.argsTrusted(true)
	if i := slices.Index(args, "--resume-session-at"); i < 0 || args[i+1] != last || !slices.Contains(args, "--resume") {
		t.Errorf("after the rewind claude starts with %q, want --resume S --resume-session-at %s", args, last)
	}
	// Once a turn ran from there, the session goes on from its end.
	b.turnEnded()
	if args := b.argsTrusted(true); slices.Contains(args, "--resume-session-at") {
		t.Errorf("after the next turn claude starts with %q", args)
	}
}
