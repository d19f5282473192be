package session

import (
	"encoding/json"
	"testing"
)

// TestReplied: the replies become the questions request's input as the
// CLI takes them: a multi-select's items joined by ", " (an item that
// holds the separator or a quote JSON-quoted, nothing else escaped), a
// single choice with its note, words alone, a blank question left out;
// the rest of the input kept.
func TestReplied(t *testing.T) {
	in := json.RawMessage(`{"questions":[{"question":"A?"}],"metadata":{"source":"x"}}`)
	ans := Replied(in, []Reply{
		{Question: "A?", Multi: true, Chosen: []string{"x & y", `say "hi"`, "one, two"}, Text: " <own> "},
		{Question: "B?", Chosen: []string{"b"}, Text: "why"},
		{Question: "C?", Text: "words"},
		{Question: "D?", Multi: true},
		{Question: "E?", Text: "  "},
	})
	want := `{"annotations":{"B?":{"notes":"why"}},"answers":{"A?":"x & y, \"say \\\"hi\\\"\", \"one, two\", <own>","B?":"b","C?":"words"},` +
		`"metadata":{"source":"x"},"questions":[{"question":"A?"}]}`
	var got, wantV any
	json.Unmarshal(ans.UpdatedInput, &got)
	json.Unmarshal([]byte(want), &wantV)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(wantV)
	if !ans.Allow || string(g) != string(w) {
		t.Errorf("Replied = %v %s, want %s", ans.Allow, ans.UpdatedInput, want)
	}
	if ans := Replied(in, []Reply{{Question: "A?"}}); ans.Allow || ans.Message == "" {
		t.Errorf("no answer: %+v, want a refusal", ans)
	}
}
