package claude

import (
	"context"
	"strings"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/statedir"
)

// TestE2ERewind rewinds the real claude's session natively: after three
// turns, the last two dropped (Rewind), the next turn's request to the
// model holds the first turn and none of the two dropped.
func TestE2ERewind(t *testing.T) {
	t.Setenv(statedir.EnvVar, t.TempDir())
	b, s, _ := realClaude(t, Options{}, reply("ANSWER-one"), reply("ANSWER-two"), reply("ANSWER-three"), reply("ANSWER-four"))
	turn := func(text string) {
		t.Helper()
		rec := &recorder{}
		if end := b.Turn(context.Background(), backend.Message{Text: text}, rec); end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %q = %v %q", text, end.Status, rec.texts())
		}
	}
	for _, m := range []string{"MARK-one", "MARK-two", "MARK-three"} {
		turn(m)
	}
	if err := b.Rewind(context.Background(), 3); err == nil {
		t.Error("a rewind of every turn of claude's session succeeded")
	}
	if err := b.Rewind(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	turn("MARK-four")
	var last string
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" && strings.Contains(string(r.Body), "MARK-four") {
			last = messagesOf(r.Body)
		}
	}
	for _, want := range []string{"MARK-one", "ANSWER-one", "MARK-four"} {
		if !strings.Contains(last, want) {
			t.Errorf("the request after the rewind lacks %s: %.3000s", want, last)
		}
	}
	for _, gone := range []string{"MARK-two", "ANSWER-two", "MARK-three", "ANSWER-three"} {
		if strings.Contains(last, gone) {
			t.Errorf("the request after the rewind holds %s: %.3000s", gone, last)
		}
	}
	// The session goes on from there: one more turn holds the fourth.
	if err := b.Rewind(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}
