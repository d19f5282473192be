//go:build linux

package codex

import (
	"context"
	"strings"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// TestE2ERewind reverts the real codex app-server's thread: after three
// turns, the last two dropped (Rewind: thread/revert), the next turn's
// request to the model holds the first turn and none of the two dropped,
// also when the server was put to sleep meanwhile. codex exec cannot.
func TestE2ERewind(t *testing.T) {
	say := func(text string) fakeapi.ResponsesReply {
		return fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(text)}}
	}
	b, srv := realCodex(t, TransportAppServer, say("ANSWER-one"), say("ANSWER-two"), say("ANSWER-three"), say("ANSWER-four"))
	turn := func(text string) {
		t.Helper()
		a := &approver{streaming: make(chan struct{})}
		if end := b.Turn(context.Background(), backend.Message{Text: text}, a); end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %q = %v %q", text, end.Status, itemTexts(a.items))
		}
	}
	for _, m := range []string{"MARK-one", "MARK-two", "MARK-three"} {
		turn(m)
	}
	if err := b.Rewind(context.Background(), 3); err == nil {
		t.Error("a rewind of every turn of the thread succeeded")
	}
	// Put to sleep, the server is started again to rewind the thread.
	if !b.Sleep() {
		t.Fatal("the idle app-server did not sleep")
	}
	if err := b.Rewind(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	turn("MARK-four")
	var last string
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "MARK-four") {
			last = string(r.Body)
		}
	}
	for _, want := range []string{"MARK-one", "ANSWER-one", "MARK-four"} {
		if !strings.Contains(last, want) {
			t.Errorf("the request after the rewind lacks %s: %.3000s", want, last)
		}
	}
	for _, gone := range []string{"MARK-two", "ANSWER-two", "MARK-three", "ANSWER-three"} {
		if strings.Contains(last, gone) {
			t.Errorf("the request after the rewind holds %s", gone)
		}
	}

	ex, _ := realCodex(t, TransportExec, say("ok"), say("ok"))
	a := &approver{streaming: make(chan struct{})}
	ex.Turn(context.Background(), backend.Message{Text: "one"}, a)
	ex.Turn(context.Background(), backend.Message{Text: "two"}, a)
	if err := ex.Rewind(context.Background(), 1); err == nil {
		t.Error("codex exec rewound its session")
	}
}
