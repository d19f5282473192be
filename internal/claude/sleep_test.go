package claude

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// TestSleepResumes: an idle claude is ended, and the next turn starts it
// again resuming its session, with the same message as it would have
// had awake.
func TestSleepResumes(t *testing.T) {
	b := fakeBackend(t, "resume-check", Options{})
	rec := &recorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "one"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 1 = %+v", end)
	}
	p := b.Proc()
	if !b.Awake() || !b.Sleep() {
		t.Fatal("an idle claude was not put to sleep")
	}
	if b.Awake() || b.Sleep() {
		t.Error("a claude put to sleep still runs, or sleeps again")
	}
	select {
	case <-p.Done():
	default:
		t.Error("the process put to sleep has not ended")
	}
	if end := b.Turn(context.Background(), backend.Message{Text: "two"}, rec); end.Status != itemmap.TurnCompleted || end.SessionID != "fake-session-1" {
		t.Fatalf("turn 2 = %+v", end)
	}
	got := rec.texts()
	if last := got[len(got)-1]; !strings.Contains(last, "--resume fake-session-1") {
		t.Errorf("the woken claude: %q, want it resuming fake-session-1", last)
	}
	if b.ResumeRefused() {
		t.Error("a resume that went well reads as refused")
	}
	if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "notice:") || strings.HasPrefix(s, "failure:") }) {
		t.Errorf("sleeping left items: %q", got)
	}
}

// TestSleepWaitsForBackground: a claude that said a task of its runs in
// the background stays awake until it says none does.
func TestSleepWaitsForBackground(t *testing.T) {
	b := fakeBackend(t, "background-task", Options{})
	rec := &recorder{}
	b.Turn(context.Background(), backend.Message{Text: "one"}, rec)
	if b.Sleep() || !b.Awake() {
		t.Fatal("a claude with a background task was put to sleep")
	}
	b.Turn(context.Background(), backend.Message{Text: "two"}, rec)
	if !b.Sleep() {
		t.Fatal("a claude whose background tasks ended was not put to sleep")
	}
}

// TestSleepResumeRefused: a claude that will not resume its session after
// a sleep ends the turn as not started, says so once, and the next turn
// starts a new session.
func TestSleepResumeRefused(t *testing.T) {
	b := fakeBackend(t, "refuse-resume", Options{})
	rec := &recorder{}
	b.Turn(context.Background(), backend.Message{Text: "one"}, rec)
	if !b.Sleep() {
		t.Fatal("not put to sleep")
	}
	end := b.Turn(context.Background(), backend.Message{Text: "two"}, rec)
	if !end.NotStarted {
		t.Fatalf("the refused resume's turn = %+v, want not started", end)
	}
	if got := rec.texts(); !strings.Contains(got[len(got)-1], "could not resume its session fake-session-1") {
		t.Errorf("items %q", got)
	}
	if !b.ResumeRefused() || b.ResumeRefused() {
		t.Error("ResumeRefused is not true once")
	}
	if b.SessionID() != "" || slices.Contains(b.args(), "--resume") {
		t.Errorf("the refused session is still resumed: %q", b.args())
	}
	if end := b.Turn(context.Background(), backend.Message{Text: "three"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("the turn after the refusal = %+v", end)
	}
}

// TestSleepRacesTurns: Sleep while turns run, from another goroutine:
// each turn ends well, on a process awake or woken (run with -race).
func TestSleepRacesTurns(t *testing.T) {
	b := fakeBackend(t, "echo", Options{})
	rec := &recorder{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				b.Sleep()
			}
		}
	}()
	for i := range 20 {
		text := fmt.Sprintf("turn %d", i)
		if end := b.Turn(context.Background(), backend.Message{Text: text}, rec); end.Status != itemmap.TurnCompleted {
			t.Errorf("%s = %+v: %q", text, end, rec.texts())
		}
	}
	close(stop)
	wg.Wait()
	got := rec.texts()
	for i := range 20 {
		if !slices.Contains(got, fmt.Sprintf("assistant: echo: turn %d", i)) {
			t.Errorf("turn %d's reply is missing: %q", i, got)
		}
	}
}
