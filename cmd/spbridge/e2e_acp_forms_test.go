package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// askTwo is an AskUserQuestion call of two questions: a multi-select and a
// single choice.
func askTwo(id string) fakeapi.Reply {
	return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: id, Name: "AskUserQuestion", Input: map[string]any{"questions": []any{
		map[string]any{"question": "Which checks?", "header": "Checks", "multiSelect": true, "options": []any{
			map[string]any{"label": "vet", "description": "go vet"},
			map[string]any{"label": "test", "description": "go test"},
			map[string]any{"label": "lint", "description": "staticcheck"}}},
		map[string]any{"question": "Which lock?", "header": "Lock", "multiSelect": false, "options": []any{
			map[string]any{"label": "flock", "description": "whole file"},
			map[string]any{"label": "fcntl", "description": "ranges"}}}}}}}}
}

// forms are the elicitation/create requests of events, with their
// answers (nil for a form the agent took back).
func forms(events []acpEvent) (params []map[string]any, answers []json.RawMessage) {
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "elicitation/create" {
			var p map[string]any
			json.Unmarshal(ev.Params, &p)
			params = append(params, p)
			answers = append(answers, ev.Answer)
		}
	}
	return params, answers
}

// resultText is the text of a tool result's content (a string, or text
// blocks).
func resultText(content string) string {
	var s string
	if json.Unmarshal([]byte(content), &s) == nil {
		return s
	}
	var blocks []struct{ Text string }
	json.Unmarshal([]byte(content), &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// TestE2EServeQuestionForm drives the real claude through spbridge serve
// with the official ACP client, which advertises forms
// (clientCapabilities.elicitation.form): Claude's AskUserQuestion of three
// questions is ONE elicitation/create form (a multi-select, two single
// choices, and a box of the user's own words beside each), no permission
// request; the answers (two options and typed text for the multi-select,
// typed text alone, an option with a note) reach the model as the tool's
// result, and the saved conversation's questions item keeps them.
func TestE2EServeQuestionForm(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	ask := askTwo("toolu_form1")
	in := ask.Blocks[0].Input.(map[string]any)
	in["questions"] = append(in["questions"].([]any), map[string]any{"question": "Which editor?", "header": "Editor", "multiSelect": false,
		"options": []any{map[string]any{"label": "zed", "description": "Zed"}, map[string]any{"label": "vim", "description": "Vim"}}})
	e.srv.Push(ask, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Checks chosen."}}})
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	content := map[string]any{"q0": []any{"vet", "lint"}, "q0_other": "race, then fuzz", "q1_other": "a lock file of my own",
		"q2": "zed", "q2_other": "with vim keys"}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize", "elicitation": true},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "ask me about checks and locks", "async": true, "name": "p"},
			map[string]any{"op": "elicit", "before": "p", "answer": map[string]any{"action": "accept", "content": content}},
			map[string]any{"op": "await", "name": "p"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	if asked, _ := permissionRequests(events); len(asked) != 0 {
		t.Errorf("permission requests %q beside the form", asked)
	}
	params, _ := forms(events)
	if len(params) != 1 {
		t.Fatalf("%d forms, want one for both questions", len(params))
	}
	form := params[0]
	if form["mode"] != "form" || form["toolCallId"] == nil || form["toolCallId"] == "" {
		t.Errorf("form %v: want mode form and the question's tool call", form)
	}
	schema, _ := form["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	var keys []string
	for k := range props {
		keys = append(keys, k)
	}
	if len(props) != 6 {
		t.Fatalf("form fields %v, want q0, q0_other, q1, q1_other, q2, q2_other", keys)
	}
	q0, _ := props["q0"].(map[string]any)
	q1, _ := props["q1"].(map[string]any)
	if q0["type"] != "array" || q0["title"] != "Checks" || q0["description"] != "Which checks?" {
		t.Errorf("q0 %v: want the multi-select as an array", q0)
	}
	if q1["type"] != "string" || len(q1["oneOf"].([]any)) != 2 {
		t.Errorf("q1 %v: want a single choice of two options", q1)
	}
	if props["q0_other"].(map[string]any)["type"] != "string" {
		t.Errorf("q0_other %v", props["q0_other"])
	}

	got := resultText(toolResults(t, e.srv)["toolu_form1"])
	for _, want := range []string{`"Which checks?"="vet, lint, "race, then fuzz""`, `"Which lock?"="a lock file of my own"`,
		`"Which editor?"="zed" notes: with vim keys`} {
		if !strings.Contains(got, want) {
			t.Errorf("the model's tool result %s lacks %s", got, want)
		}
	}

	var answers []any
	var card any
	conv := e.conv()
	for _, it := range conv.Items {
		if it.Type() == archive.TypeQuestions {
			answers = nil
			for _, q := range it.Get("questions").([]any) {
				answers = append(answers, q.(map[string]any)["answer"])
			}
		}
		if it.Type() == archive.TypeToolApproval {
			card = conv.ApprovalCards[it.ID()]
		}
	}
	if len(answers) != 3 || answers[0] != `vet, lint, "race, then fuzz"` || answers[1] != "a lock file of my own" || answers[2] != "zed" {
		t.Errorf("the questions item's answers %q", answers)
	}
	if c, _ := card.(map[string]any); c["state"] != "allowed" {
		t.Errorf("approval card %v, want allowed", card)
	}
}

// TestE2EServeQuestionFormRefused drives the real claude through spbridge
// serve with the official ACP client, which fills in forms: a declined
// form refuses the AskUserQuestion call (the model hears so); an answer
// with an option the form did not offer refuses it too, saying which; and
// session/cancel while a form is open withdraws the form, answers Claude
// Code with a refusal and ends the turn cancelled, after which the session
// takes the next prompt.
func TestE2EServeQuestionFormRefused(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	e.srv.Push(askTwo("toolu_declined"), fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Declined, then."}}},
		askTwo("toolu_bad"), fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Not understood."}}},
		askTwo("toolu_open"),
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "After the cancel."}}})
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	prompt := func(name, text string) map[string]any {
		return map[string]any{"op": "prompt", "session": "s1", "text": text, "async": true, "name": name}
	}
	bad := map[string]any{"action": "accept", "content": map[string]any{"q0": []any{"vet", "gofmt"}}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize", "elicitation": true},                                             // 0
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},                       // 1
			prompt("declined", "ask me"),                                                                        // 2
			map[string]any{"op": "elicit", "before": "declined", "answer": map[string]any{"action": "decline"}}, // 3
			map[string]any{"op": "await", "name": "declined"},                                                   // 4
			prompt("bad", "ask me again"),                                                                       // 5
			map[string]any{"op": "elicit", "before": "bad", "answer": bad},                                      // 6
			map[string]any{"op": "await", "name": "bad"},                                                        // 7
			prompt("open", "ask me once more"),                                                                  // 8
			map[string]any{"op": "waitFor", "method": "elicitation/create"},                                     // 9
			map[string]any{"op": "cancel", "session": "s1"},                                                     // 10
			map[string]any{"op": "await", "name": "open"},                                                       // 11
			map[string]any{"op": "prompt", "session": "s1", "text": "go on"},                                    // 12
			map[string]any{"op": "closeStdin"},
		},
	})
	for step, want := range map[int]string{2: "end_turn", 5: "end_turn", 8: "cancelled", 12: "end_turn"} {
		if r := response(t, events, step); r["stopReason"] != want {
			t.Errorf("prompt of step %d: %v, want %s", step, r, want)
		}
	}
	if asked, _ := permissionRequests(events); len(asked) != 0 {
		t.Errorf("permission requests %q beside the forms", asked)
	}
	params, answers := forms(events)
	if len(params) != 3 || string(answers[2]) != "null" {
		t.Errorf("%d forms, answers %s: want three, the last withdrawn unanswered", len(params), answers)
	}
	results := toolResults(t, e.srv)
	for id, want := range map[string]string{
		"toolu_declined": "The user declined to answer the questions.",
		"toolu_bad":      `"gofmt" is not an option of "Which checks?"`,
	} {
		if got := resultText(results[id]); !strings.Contains(got, want) {
			t.Errorf("the model's result of %s: %q, want %q", id, got, want)
		}
	}
	if got := resultText(results["toolu_open"]); strings.Contains(got, "User has answered") || strings.Contains(got, "The user answered") {
		t.Errorf("the withdrawn form's call was answered: %q", got)
	}
	var cards []string
	conv := e.conv()
	for _, it := range conv.Items {
		if it.Type() == archive.TypeToolApproval {
			c, _ := conv.ApprovalCards[it.ID()].(map[string]any)
			s, _ := c["state"].(string)
			cards = append(cards, s)
		}
	}
	if len(cards) < 2 || cards[0] != "rejected" || cards[1] != "rejected" {
		t.Errorf("approval cards %q, want the declined and the misfit form rejected", cards)
	}
}

// TestE2EServeCodexQuestionForm drives the real codex (app-server) through
// spbridge serve with the official ACP client, which fills in forms: the
// model's request_user_input of two questions is one form (each with a box
// of the user's own words: codex says isOther), no permission request; a
// choice with a note and an answer in the user's own words reach the model
// in codex's own shape ({answers: [label, "user_note: …"]}), and the
// questions item keeps the answers.
func TestE2EServeCodexQuestionForm(t *testing.T) {
	t.Parallel()
	question := map[string]any{"questions": []any{
		map[string]any{"id": "color", "header": "Color", "question": "Which color?",
			"options": []any{map[string]any{"label": "Red (Recommended)", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}},
		map[string]any{"id": "size", "header": "Size", "question": "Which size?",
			"options": []any{map[string]any{"label": "Small", "description": "s"}, map[string]any{"label": "Large", "description": "l"}}}}}
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "request_user_input", Arguments: question}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Navy blue, medium.")}},
	)
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	content := map[string]any{"q0": "Blue", "q0_other": "navy", "q1_other": "medium"}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize", "elicitation": true},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "ask me for a color and a size", "async": true, "name": "p"},
			map[string]any{"op": "elicit", "before": "p", "answer": map[string]any{"action": "accept", "content": content}},
			map[string]any{"op": "await", "name": "p"},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	if asked, _ := permissionRequests(events); len(asked) != 0 {
		t.Errorf("permission requests %q beside the form", asked)
	}
	params, _ := forms(events)
	if len(params) != 1 {
		t.Fatalf("%d forms, want one", len(params))
	}
	props, _ := params[0]["requestedSchema"].(map[string]any)["properties"].(map[string]any)
	if len(props) != 4 || props["q0_other"] == nil || props["q1_other"] == nil {
		t.Errorf("form fields %v, want each question with a box of the user's own words", props)
	}
	var output string
	for _, r := range srv.Requests() {
		gjson.GetBytes(r.Body, "input").ForEach(func(_, it gjson.Result) bool {
			if it.Get("type").String() == "function_call_output" {
				output = it.Get("output").String()
			}
			return true
		})
	}
	var got struct {
		Answers map[string]struct{ Answers []string } `json:"answers"`
	}
	if err := json.Unmarshal([]byte(output), &got); err != nil {
		t.Fatalf("the model's function_call_output %q: %v", output, err)
	}
	if c, s := got.Answers["color"].Answers, got.Answers["size"].Answers; len(c) != 2 || c[0] != "Blue" || c[1] != "user_note: navy" ||
		len(s) != 1 || s[0] != "medium" {
		t.Errorf("the model got %s, want color [Blue, user_note: navy] and size [medium]", output)
	}
	var answers []any
	for _, it := range e.conv().Items {
		if it.Type() == archive.TypeQuestions {
			for _, q := range it.Get("questions").([]any) {
				answers = append(answers, q.(map[string]any)["answer"])
			}
		}
	}
	if len(answers) != 2 || answers[0] != "Blue" || answers[1] != "medium" {
		t.Errorf("the questions item's answers %q", answers)
	}
}
