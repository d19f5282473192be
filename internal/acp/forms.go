package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// A form's fields: question i is field "q<i>" (its options, one or many,
// or its answer when it has no options) and, where the user may answer in
// their own words beside the options, "q<i>_other".
func formField(i int) string  { return fmt.Sprintf("q%d", i) }
func otherField(i int) string { return fmt.Sprintf("q%d_other", i) }

// takesOther reports whether question q takes an answer in the user's own
// words beside its options (itemmap.QuestionsTool: unless it says
// isOther false).
func takesOther(q question) bool { return q.IsOther == nil || *q.IsOther }

// formRequest is the elicitation/create params that ask questions qs (of
// tool call id) as one form: each question a field of its options (a
// single choice, or an array for a multi-select), a field of text beside
// it where the question takes the user's own words, or one of text alone
// when it has no options. A field is required where the question can be
// answered no other way.
func formRequest(sid, id string, qs []question) map[string]any {
	var props bytes.Buffer // in the questions' order
	props.WriteByte('{')
	var required []string
	add := func(key string, field map[string]any) {
		if props.Len() > 1 {
			props.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		v, _ := json.Marshal(field)
		props.Write(k)
		props.WriteByte(':')
		props.Write(v)
	}
	for i, q := range qs {
		field := map[string]any{"title": q.Question}
		if q.Header != "" {
			field["title"], field["description"] = q.Header, q.Question
		}
		if len(q.Options) == 0 {
			field["type"] = "string"
			add(formField(i), field)
			required = append(required, formField(i))
			continue
		}
		var opts []any
		for _, o := range q.Options {
			opt := map[string]any{"const": o.Label, "title": o.Label}
			if o.Description != "" {
				opt["description"] = o.Description
			}
			opts = append(opts, opt)
		}
		if q.MultiSelect {
			field["type"], field["items"] = "array", map[string]any{"anyOf": opts}
		} else {
			field["type"], field["oneOf"] = "string", opts
		}
		add(formField(i), field)
		if !takesOther(q) {
			required = append(required, formField(i))
			continue
		}
		desc := "Your own answer, or a note to the option chosen (optional)."
		if q.MultiSelect {
			desc = "Your own answer, besides the options chosen (optional)."
		}
		add(otherField(i), map[string]any{"type": "string", "title": "Other", "description": desc})
	}
	props.WriteByte('}')
	schema := map[string]any{"type": "object", "properties": json.RawMessage(props.Bytes())}
	if required != nil {
		schema["required"] = required
	}
	message := fmt.Sprintf("Please answer these %d questions.", len(qs))
	if len(qs) == 1 {
		message = qs[0].Question
	}
	return map[string]any{"sessionId": sid, "toolCallId": id, "mode": "form", "message": message, "requestedSchema": schema}
}

// formReplies reads an accepted form's content as the replies to qs; an
// error says how the content does not fit the form (a field it did not
// ask, a value of the wrong type, an option it did not offer).
func formReplies(content json.RawMessage, qs []question) ([]session.Reply, error) {
	var fields map[string]json.RawMessage
	if len(content) > 0 && string(content) != "null" {
		if err := json.Unmarshal(content, &fields); err != nil {
			return nil, errors.New("content is not an object")
		}
	}
	asked := map[string]bool{}
	replies := make([]session.Reply, 0, len(qs))
	for i, q := range qs {
		r := session.Reply{Question: q.Question, Multi: q.MultiSelect}
		asked[formField(i)] = true
		raw, ok := fields[formField(i)]
		switch {
		case !ok || string(raw) == "null":
		case len(q.Options) == 0:
			if json.Unmarshal(raw, &r.Text) != nil {
				return nil, fmt.Errorf("%s (%q) is not text", formField(i), q.Question)
			}
		case q.MultiSelect:
			if json.Unmarshal(raw, &r.Chosen) != nil {
				return nil, fmt.Errorf("%s (%q) is not a list of options", formField(i), q.Question)
			}
		default:
			var label string
			if json.Unmarshal(raw, &label) != nil {
				return nil, fmt.Errorf("%s (%q) is not one option", formField(i), q.Question)
			}
			if label != "" {
				r.Chosen = []string{label}
			}
		}
		r.Chosen = slices.Compact(r.Chosen)
		for _, c := range r.Chosen {
			if !slices.ContainsFunc(q.Options, func(o questionOption) bool { return o.Label == c }) {
				return nil, fmt.Errorf("%q is not an option of %q", c, q.Question)
			}
		}
		if len(q.Options) > 0 && takesOther(q) {
			asked[otherField(i)] = true
			if raw, ok := fields[otherField(i)]; ok && string(raw) != "null" && json.Unmarshal(raw, &r.Text) != nil {
				return nil, fmt.Errorf("%s (%q) is not text", otherField(i), q.Question)
			}
		}
		replies = append(replies, r)
	}
	for k := range fields {
		if !asked[k] {
			return nil, fmt.Errorf("it has a field %q the form did not ask", k)
		}
	}
	return replies, nil
}

// askForm puts a questions request's questions to the client as one form
// (elicitation/create). The form filled in allows the call with the
// answers, told the way the CLI takes them (session.Replied); declined,
// cancelled, not answered before the turn ends, or answered with content
// that does not fit the form, it is refused and the model hears why. A
// client that answers the request with an error is asked today's way
// instead: one permission request a question (ask). Each answer is
// recorded as the approval's card.
func (h *acpHost) askForm(ctx context.Context, a itemmap.Approval, qs []question) session.Answer {
	ss := h.ss
	id := callID(a)
	m, err := ss.srv.w.Call(ctx, "elicitation/create", formRequest(ss.id, id, qs))
	if err != nil {
		var rpcErr *jsonrpc.Error
		if ctx.Err() == nil && errors.As(err, &rpcErr) {
			return h.ask(ctx, a, qs)
		}
		return session.Answer{Message: "The questions were not answered: " + err.Error()}
	}
	var res struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m.Result, &res) != nil {
		h.card(a.ItemID, CardRejected)
		return session.Answer{Message: "spbridge could not read the editor's answer to the questions."}
	}
	switch res.Action {
	case "accept":
	case "decline":
		h.card(a.ItemID, CardRejected)
		return session.Answer{Message: "The user declined to answer the questions."}
	case "cancel":
		h.card(a.ItemID, CardCancelled)
		return session.Answer{Message: "The user cancelled the questions."}
	default:
		h.card(a.ItemID, CardRejected)
		return session.Answer{Message: fmt.Sprintf("spbridge did not understand the editor's answer to the questions (action %q).", res.Action)}
	}
	replies, err := formReplies(res.Content, qs)
	if err != nil {
		h.card(a.ItemID, CardRejected)
		return session.Answer{Message: "The questions were not answered: " + err.Error() + "."}
	}
	ans := session.Replied(a.Input, replies)
	if ans.Allow {
		h.card(a.ItemID, CardAllowed)
	} else {
		h.card(a.ItemID, CardRejected)
	}
	return ans
}
