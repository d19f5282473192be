package codex

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// steerer steers the turn once the assistant's text streams, from a
// goroutine of its own (Steer waits for codex's answer, which the turn
// reads), then lets the paused reply go on.
func steerer(t *testing.T, b *Backend, a *approver, text string, pause chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		<-a.streaming
		err := b.Steer(backend.Message{Text: text})
		close(pause)
		done <- err
	}()
	return done
}

func steerTexts(items []archive.Item) []string {
	var out []string
	for _, it := range items {
		if it.Type() == archive.TypeUser || it.Type() == archive.TypeAssistant {
			out = append(out, it.Type()+": "+it.String("text"))
		}
	}
	return out
}

// TestE2ESteerAppServer steers the real codex app-server while the
// model's first answer streams: turn/steer takes the message, the fake
// API's next request of the same turn carries it, and the turn's items and
// history hold it where codex took it. After the turn, Steer fails with
// ErrNoTurn; a review turn and codex exec take none (ErrCannotSteer).
func TestE2ESteerAppServer(t *testing.T) {
	pause := make(chan struct{})
	b, srv := realCodex(t, TransportAppServer,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("first answer")}, Pause: pause},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("done")}})
	a := &approver{streaming: make(chan struct{})}
	steered := steerer(t, b, a, "use blue", pause)
	end := b.Turn(context.Background(), backend.Message{Text: "paint it"}, a)
	if err := <-steered; err != nil {
		t.Fatalf("Steer = %v", err)
	}
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn = %v, items %q", end.Status, steerTexts(a.items))
	}
	// codex drops the answer that streamed (the model never sees it: its
	// item stays as far as it came, outside the history) and asks again
	// with the message.
	want := []string{"assistant: fir", "user: use blue", "assistant: done"}
	if got := steerTexts(a.items); !slices.Equal(got, want) {
		t.Errorf("items %q, want %q", got, want)
	}
	want = want[1:]
	var hist []string
	for _, m := range end.History {
		for _, bl := range m.Content {
			if bl.Type() == archive.BlockText {
				hist = append(hist, m.Role+": "+bl.String("text"))
			}
		}
	}
	if !slices.Equal(hist, want) {
		t.Errorf("history %q, want %q", hist, want)
	}
	reqs := srv.Requests()
	var bodies []string
	for _, r := range reqs {
		if strings.Contains(string(r.Body), "paint it") {
			bodies = append(bodies, string(r.Body))
		}
	}
	if len(bodies) != 2 || strings.Contains(bodies[0], "use blue") || !strings.Contains(bodies[1], "use blue") {
		t.Errorf("the model's requests of the turn (%d): the second must carry the steered message first", len(bodies))
	}
	if err := b.Steer(backend.Message{Text: "late"}); !errors.Is(err, backend.ErrNoTurn) {
		t.Errorf("Steer after the turn = %v, want ErrNoTurn", err)
	}

	ex, _ := realCodex(t, TransportExec)
	if err := ex.Steer(backend.Message{Text: "x"}); !errors.Is(err, backend.ErrCannotSteer) {
		t.Errorf("Steer on codex exec = %v, want ErrCannotSteer", err)
	}
}

// TestSteerNotAReview: a review or compaction turn takes no steered
// message, and says so, whatever codex would answer.
func TestSteerNotAReview(t *testing.T) {
	b := New(Options{Transport: TransportAppServer})
	b.openSteering(nil, "thread", "a review")
	b.setTurnID("turn-1")
	err := b.Steer(backend.Message{Text: "x"})
	if !errors.Is(err, backend.ErrCannotSteer) || !strings.Contains(err.Error(), "a review") {
		t.Errorf("Steer in a review = %v", err)
	}
	b.closeSteering()
	if err := b.Steer(backend.Message{Text: "x"}); !errors.Is(err, backend.ErrNoTurn) {
		t.Errorf("Steer after the turn = %v", err)
	}
}

// TestSteerUntaken: a message codex accepted whose item never came (an
// interrupt drops it) is handed back once the turn ended, once.
func TestSteerUntaken(t *testing.T) {
	b := New(Options{Transport: TransportAppServer})
	b.openSteering(nil, "thread", "")
	b.steer.pending = []backend.Message{{Text: "use blue"}}
	b.closeSteering()
	if u := b.Untaken(); len(u) != 1 || u[0].Text != "use blue" {
		t.Errorf("Untaken = %v", u)
	}
	if u := b.Untaken(); len(u) != 0 {
		t.Errorf("Untaken again = %v", u)
	}
}

// TestSteerItemBeforeAnswer: a steered message's item read before
// codex's answer to turn/steer is the message's place, and the answer then
// leaves nothing pending to hand back.
func TestSteerItemBeforeAnswer(t *testing.T) {
	b := New(Options{Transport: TransportAppServer})
	call := &steerCall{msg: backend.Message{Text: "use blue"}, done: make(chan error, 1)}
	b.steer.calls = map[string]*steerCall{`"spbridge-steer-1"`: call}
	m := itemmap.NewCodexApp(nil)
	rec := &approver{streaming: make(chan struct{})}
	b.steeredItem([]byte(`{"method":"item/completed","params":{"item":{"type":"userMessage","id":"u1","content":[{"type":"text","text":"use blue","text_elements":[]}]}}}`), m, rec)
	if !b.steerAnswer([]byte(`{"id":"spbridge-steer-1","result":{"turnId":"t"}}`)) || <-call.done != nil {
		t.Fatal("the answer was not taken")
	}
	if got := steerTexts(rec.items); !slices.Equal(got, []string{"user: use blue"}) {
		t.Errorf("items %q", got)
	}
	b.closeSteering()
	if u := b.Untaken(); len(u) != 0 {
		t.Errorf("handed back %v, which codex took", u)
	}
}

// TestSteerAnswers: codex's answers to turn/steer, as recorded
// (testdata/codex/app-server/steer.jsonl): taken, no active turn, a turn
// that cannot be steered.
func TestSteerAnswers(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   error
	}{
		{`{"id":"spbridge-steer-1","result":{"turnId":"t"}}`, nil},
		{`{"error":{"code":-32600,"message":"no active turn to steer"},"id":"spbridge-steer-1"}`, backend.ErrNoTurn},
		{`{"error":{"code":-32600,"data":{"message":"cannot steer a review turn","codexErrorInfo":{"activeTurnNotSteerable":{"turnKind":"review"}}},"message":"cannot steer a review turn"},"id":"spbridge-steer-1"}`, backend.ErrCannotSteer},
	} {
		b := New(Options{Transport: TransportAppServer})
		call := &steerCall{msg: backend.Message{Text: "m"}, done: make(chan error, 1)}
		b.steer.calls = map[string]*steerCall{`"spbridge-steer-1"`: call}
		if !b.steerAnswer([]byte(c.answer)) {
			t.Fatalf("%s: not taken as the answer", c.answer)
		}
		err := <-call.done
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.answer, err, c.want)
		}
		if b.steering() {
			t.Error("the call still waits")
		}
		if pending := len(b.steer.pending); (c.want == nil) != (pending == 1) {
			t.Errorf("%s: %d pending", c.answer, pending)
		}
	}
}
