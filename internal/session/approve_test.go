package session

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// askBackend asks about each approval of its next turn, in order, and
// keeps the decisions; between turns it asks what ask holds.
type askBackend struct {
	fakeBackend
	turnAsks [][]itemmap.Approval
	got      []backend.Decision
}

func (b *askBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	var asks []itemmap.Approval
	if len(b.turnAsks) > 0 {
		asks, b.turnAsks = b.turnAsks[0], b.turnAsks[1:]
	}
	for _, a := range asks {
		b.got = append(b.got, h.Approve(ctx, a))
	}
	return b.fakeBackend.Turn(ctx, msg, h)
}

// scriptFront answers each question with the next answer, and keeps what
// it was asked and what a grant answered.
type scriptFront struct {
	nopHost
	mu      sync.Mutex
	answers []Answer
	asked   []Question
	granted []string
}

func (f *scriptFront) Ask(_ context.Context, q Question) Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q)
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a
}

func (f *scriptFront) Granted(a itemmap.Approval, allowed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.granted = append(f.granted, fmt.Sprintf("%s=%v", backend.ApprovalCommand(a)+filePath(a), allowed))
}

func (f *scriptFront) ItemChanged(itemmap.Change)           {}
func (f *scriptFront) OwnTurnEnded(*itemmap.TurnEnd, error) {}
func (f *scriptFront) BetweenFailed(string)                 {}
func filePath(a itemmap.Approval) string {
	var in struct {
		FilePath string `json:"file_path"`
	}
	json.Unmarshal(a.Input, &in)
	return in.FilePath
}

func bashAsk(cwd, cmd string) itemmap.Approval {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return itemmap.Approval{ToolName: "Bash", Input: in, Cwd: cwd}
}

func editAsk(file string) itemmap.Approval {
	in, _ := json.Marshal(map[string]string{"file_path": file})
	return itemmap.Approval{ToolName: "Edit", Input: in}
}

// TestSessionApproves: the session decides its CLI's permission requests,
// for every front end: a request no grant covers is put to the front end
// with the "always" answers it may offer; an "always" answer is kept as a
// grant (the CLI is told an allowed one), so the same request is answered
// without asking (the front end told), in the turn and between turns
// alike; an "always reject" denies it; a denial once keeps nothing; "all
// edits" covers edits inside the session's folders (Cwd and AddDirs) only.
func TestSessionApproves(t *testing.T) {
	pkg, state := newPackage(t)
	work, extra := t.TempDir(), t.TempDir()
	be := &askBackend{fakeBackend: fakeBackend{name: "claude"}}
	s, err := Open(Options{Dir: pkg, Keep: true, Cwd: work, RecoveryDir: filepath.Join(state, "recovery"),
		CLIs:     rows(func(string, backend.Options) backend.Backend { return be }),
		Settings: Settings{CLI: "claude", Backend: backend.Options{AddDirs: []string{extra}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	be.turnAsks = [][]itemmap.Approval{{
		bashAsk(work, "make test"),        // asked: always
		bashAsk(work, "make test"),        // the grant
		bashAsk(work, "rm -rf build"),     // asked: rejected always
		bashAsk(work, "rm -rf build"),     // the grant rejects
		bashAsk(work, "curl example.com"), // asked: denied once
		bashAsk(work, "curl example.com"), // asked again: allowed once
		editAsk(filepath.Join(extra, "a.go")),
		editAsk(filepath.Join(extra, "b.go")),    // every edit in extra
		editAsk(filepath.Join(t.TempDir(), "c")), // outside: asked
	}}
	f := &scriptFront{answers: []Answer{
		{Allow: true, Always: true},
		{Always: true, Message: "no"},
		{Message: "not now"},
		{Allow: true},
		{Allow: true, Edits: true},
		{Message: "not there"},
	}}
	if _, err := s.Send(context.Background(), "go", nil, f); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range be.got {
		got = append(got, fmt.Sprintf("%v/%v/%s", d.Allow, d.Always != nil, d.Message))
	}
	want := []string{"true/true/", "true/false/", "false/false/no", "false/false/" + RejectedForSession,
		"false/false/not now", "true/false/", "true/true/", "true/false/", "false/false/not there"}
	if !slices.Equal(got, want) {
		t.Errorf("decisions\n%q\nwant\n%q", got, want)
	}
	if len(f.asked) != 6 {
		t.Fatalf("asked %d times, want 6", len(f.asked))
	}
	if q := f.asked[0]; !q.CanAlways || !strings.Contains(q.Always.String(), "make test") || q.CanEdits {
		t.Errorf("the command's question offers %+v", q)
	}
	if q := f.asked[4]; !q.CanEdits || !q.CanAlways {
		t.Errorf("an edit in an added folder offers %+v", q)
	}
	if q := f.asked[5]; q.CanEdits {
		t.Errorf("an edit outside the session's folders offers all edits: %+v", q)
	}
	if want := []string{"make test=true", "rm -rf build=false", filepath.Join(extra, "b.go") + "=true"}; !slices.Equal(f.granted, want) {
		t.Errorf("granted %q, want %q", f.granted, want)
	}
	// Between turns the same grants answer, and the front end is asked
	// about the rest as in a turn.
	s.Watch(f)
	b := &betweenHost{s: s, be: be}
	f.answers = []Answer{{Allow: true}}
	for _, a := range []itemmap.Approval{bashAsk(work, "make test"), bashAsk(work, "rm -rf build"), bashAsk(work, "go vet")} {
		be.got = append(be.got, b.Approve(context.Background(), a))
	}
	if d := be.got[len(be.got)-3:]; !d[0].Allow || d[1].Allow || !d[2].Allow || len(f.asked) != 7 {
		t.Errorf("between turns: %+v, asked %d times", d, len(f.asked))
	}
}
