package session

import (
	"encoding/json"
	"strings"
)

// Reply is the user's answer to one question of a questions request
// (itemmap.QuestionsTool): the options chosen, by label, and the text the
// user typed as an answer of their own (the CLI's "other"); either may be
// empty. Multi is set when the question let the user choose more than one.
type Reply struct {
	Question string
	Multi    bool
	Chosen   []string
	Text     string
}

// Replied is the answer that allows questions request input with the
// user's replies, told the way the questions request takes them
// (itemmap.QuestionsTool): input with "answers", an object of each
// question's text to its answer, and "annotations" where a note rides
// along. A multi-select answer is its labels, and any text typed, joined by
// ", " as Claude Code's own terminal joins them (a label that holds ", "
// or a quote is JSON-quoted, so that it reads back as one); a
// single-select answer is the label chosen, or the text typed when none
// was, and text typed beside a choice is the question's note
// (annotations[question].notes: Claude Code shows the model `"question"=
// "answer" notes: …`; Codex hears it as a user note). A question the user
// left without an answer is left out; with none answered the request is
// refused.
func Replied(input json.RawMessage, replies []Reply) Answer {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil || in == nil {
		in = map[string]any{}
	}
	answers, notes := map[string]any{}, map[string]any{}
	for _, r := range replies {
		text := strings.TrimSpace(r.Text)
		var answer string
		switch {
		case r.Multi:
			items := r.Chosen
			if text != "" {
				items = append(items[:len(items):len(items)], text)
			}
			answer = joinAnswers(items)
		case len(r.Chosen) > 0:
			answer = r.Chosen[0]
			if text != "" {
				notes[r.Question] = map[string]any{"notes": text}
			}
		default:
			answer = text
		}
		if answer != "" {
			answers[r.Question] = answer
		}
	}
	if len(answers) == 0 {
		return Answer{Message: "The user answered none of the questions."}
	}
	in["answers"] = answers
	if len(notes) > 0 {
		in["annotations"] = notes
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return Answer{Message: "spbridge could not pass the answers on."}
	}
	return Answer{Allow: true, UpdatedInput: raw}
}

// joinAnswers joins a multi-select answer's items as Claude Code does: by
// ", ", an item that holds the separator or a quote JSON-quoted.
func joinAnswers(items []string) string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if strings.Contains(it, ", ") || strings.Contains(it, `"`) {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.Encode(it)
			it = strings.TrimSuffix(b.String(), "\n")
		}
		out = append(out, it)
	}
	return strings.Join(out, ", ")
}
