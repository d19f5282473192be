//go:build linux

package codex

import (
	"context"
	"strconv"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// TestE2EAppServerCloseAfterInterrupt: the real codex app-server whose
// turn was interrupted while a command ran (which then does not exit when
// its input closes) is ended by Close without waiting for Opts.Grace,
// here an hour: Close returns, and the process is gone.
func TestE2EAppServerCloseAfterInterrupt(t *testing.T) {
	// The command is told from every other test's by a word of its own:
	// a "sleep 60" of a test running beside this one must not count.
	command := "sleep 60; echo close-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	b, _ := realCodex(t, TransportAppServer,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall(command)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
	// No escalation while the interrupt is taken (on a busy machine codex
	// may take longer than the default grace, and would be closed then):
	// the Close below is what is measured.
	b.Opts.Grace = time.Hour
	h := &approver{streaming: make(chan struct{})}
	done := make(chan *itemmap.TurnEnd)
	go func() { done <- b.Turn(context.Background(), backend.Message{Text: "wait"}, h) }()
	for len(cmdlineProcs(t, command)) == 0 {
		time.Sleep(10 * time.Millisecond) // waiting for the command to start, not timing it
	}
	b.Interrupt()
	if end := <-done; end.Status != itemmap.TurnInterrupted {
		t.Fatalf("status %s", end.Status)
	}
	p := b.Proc()
	if p == nil {
		t.Fatal("no app-server after the turn")
	}
	start := time.Now()
	b.Close()
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	select {
	case <-p.Done():
	default:
		t.Error("the app-server is not done after Close")
	}
}
