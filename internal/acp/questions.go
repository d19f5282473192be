package acp

import (
	"context"
	"encoding/json"
	"fmt"

	"spbridge/internal/itemmap"
	"spbridge/internal/session"
)

// question is one question of an AskUserQuestion call
// (itemmap.QuestionsTool).
type question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header"`
	Options     []questionOption `json:"options"`
	MultiSelect bool             `json:"multiSelect"`
	IsOther     *bool            `json:"isOther"` // nil: takes the user's own words
}

// questionOption is one option of a question.
type questionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// questionsOf is the questions a permission request of
// itemmap.QuestionsTool (Claude Code's AskUserQuestion, Codex's
// requestUserInput) asks, nil when the request is about another tool or
// asks none.
func questionsOf(a itemmap.Approval) []question {
	if a.ToolName != itemmap.QuestionsTool {
		return nil
	}
	var in struct {
		Questions []question `json:"questions"`
	}
	if json.Unmarshal(a.Input, &in) != nil || len(in.Questions) == 0 {
		return nil
	}
	return in.Questions
}

// callID is the tool call a permission request is shown as: its tool's
// item, else the approval's own.
func callID(a itemmap.Approval) string {
	if a.ToolItemID != "" {
		return a.ToolItemID
	}
	return a.ItemID
}

// ask puts a questions request's questions to the client, one
// session/request_permission per question whose options are its answers
// (and "Don't answer"). Every question answered, the call is allowed with
// the answers in its input (itemmap.QuestionsTool): "answers", an
// object of each question's text to the label chosen. A question not
// answered denies the call, and the model hears so.
func (h *acpHost) ask(ctx context.Context, a itemmap.Approval, qs []question) session.Answer {
	ss := h.ss
	id := callID(a)
	var input map[string]any
	json.Unmarshal(a.Input, &input)
	replies := make([]session.Reply, 0, len(qs))
	for i, q := range qs {
		var opts []any
		for j, o := range q.Options {
			opt := map[string]any{"optionId": fmt.Sprint("answer-", j), "name": o.Label, "kind": "allow_once"}
			if o.Description != "" {
				opt["_meta"] = map[string]any{"spbridge": map[string]any{"description": o.Description}}
			}
			opts = append(opts, opt)
		}
		opts = append(opts, map[string]any{"optionId": "reject", "name": "Don't answer", "kind": "reject_once"})
		title := q.Question
		if q.Header != "" {
			title = q.Header + ": " + q.Question
		}
		params := map[string]any{
			"sessionId": ss.id,
			"toolCall": map[string]any{"toolCallId": id, "title": title, "kind": "other", "status": "pending",
				"rawInput": input, "_meta": map[string]any{"spbridge": map[string]any{"question": i}}},
			"options": opts,
		}
		m, err := ss.srv.w.Call(ctx, "session/request_permission", params)
		if err != nil {
			return session.Answer{Message: "The question was not answered: " + err.Error()}
		}
		chosen, ok := selected(m)
		var j int
		if ok {
			_, err := fmt.Sscanf(chosen, "answer-%d", &j)
			ok = err == nil && j >= 0 && j < len(q.Options)
		}
		if !ok {
			h.card(a.ItemID, CardRejected)
			return session.Answer{Message: "The user did not answer the question."}
		}
		replies = append(replies, session.Reply{Question: q.Question, Chosen: []string{q.Options[j].Label}})
	}
	ans := session.Replied(a.Input, replies)
	if ans.Allow {
		h.card(a.ItemID, CardAllowed)
	}
	return ans
}
