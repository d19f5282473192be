package codex

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

func fakeServer(t *testing.T, mode string) *Backend {
	exe, _ := os.Executable()
	b := New(Options{Options: backend.Options{Program: exe, Env: append(os.Environ(), fakeAppServerEnv+"="+mode, "GORACE=atexit_sleep_ms=0"), Dir: t.TempDir(), Grace: 200 * time.Millisecond}})
	t.Cleanup(func() { b.Close() })
	return b
}

// TestSleepResumesThread: an idle app-server is ended, keeping its
// thread, and the next turn starts another that resumes it.
func TestSleepResumesThread(t *testing.T) {
	b := fakeServer(t, "burst")
	h := &items{}
	if end := b.Turn(context.Background(), backend.Message{Text: "go"}, h); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 1: %+v", end)
	}
	p := b.Proc()
	if !b.Awake() || !b.Sleep() || b.Awake() {
		t.Fatal("the idle app-server was not put to sleep")
	}
	<-p.Done()
	h = &items{}
	if end := b.Turn(context.Background(), backend.Message{Text: "again"}, h); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 2: %+v", end)
	}
	if len(h.list) != 1 || h.list[0].String("text") != "done (resumed thread-1)" || b.Thread() != "thread-1" {
		t.Errorf("after the sleep: %d items (%v), thread %q", len(h.list), h.list, b.Thread())
	}
	if b.ResumeRefused() {
		t.Error("a resume that went well reads as refused")
	}
}

// TestSleepResumeRefusedThread: an app-server that will not resume the
// thread after a sleep ends the turn as not started, says so once, and
// the next turn starts a new thread.
func TestSleepResumeRefusedThread(t *testing.T) {
	b := fakeServer(t, "refuse-resume")
	b.Turn(context.Background(), backend.Message{Text: "go"}, &items{})
	if !b.Sleep() {
		t.Fatal("not put to sleep")
	}
	end := b.Turn(context.Background(), backend.Message{Text: "again"}, &items{})
	if !end.NotStarted {
		t.Fatalf("the refused resume's turn: %+v", end)
	}
	if !b.ResumeRefused() || b.ResumeRefused() || b.Thread() != "" {
		t.Errorf("refused once: thread %q", b.Thread())
	}
	h := &items{}
	if end := b.Turn(context.Background(), backend.Message{Text: "third"}, h); end.Status != itemmap.TurnCompleted || len(h.list) != 1 || strings.Contains(h.list[0].String("text"), "resumed") {
		t.Fatalf("the turn after the refusal: %+v, %v", end, h.list)
	}
}

// TestSleepExec: codex exec runs nothing between turns: nothing to put to
// sleep.
func TestSleepExec(t *testing.T) {
	b := New(Options{Transport: TransportExec})
	if b.Sleep() || b.Awake() {
		t.Error("codex exec put to sleep")
	}
}
