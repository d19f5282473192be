package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"spbridge/internal/acp/wire"
	"spbridge/internal/jsonrpc"
)

// formsCapability is the clientCapabilities of a client that fills in
// forms (and asks for _spbridge/item).
var formsCapability = map[string]any{"elicitation": map[string]any{"form": map[string]any{}},
	"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}

// formQuestions is a questions request's input: a multi-select, a single
// choice, a question of Codex's that takes no words of the user's own, and
// one with no options.
const formQuestions = `{"questions":[` +
	`{"question":"Which checks?","header":"Checks","multiSelect":true,"options":[{"label":"vet","description":"go vet"},{"label":"test"}]},` +
	`{"question":"Which lock?","options":[{"label":"flock"},{"label":"fcntl"}]},` +
	`{"question":"Color?","isOther":false,"options":[{"label":"Red"},{"label":"Blue"}]},` +
	`{"question":"Name?","options":[]}]}`

// startForms starts a server whose client fills in forms, with a session.
func startForms(t *testing.T) (*client, string) {
	c := startPlain(t, Config{}, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": formsCapability})
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	return c, res["sessionId"].(string)
}

// formTurn asks the questions of input in a turn, answers the form with
// answer (a result, or with error set an error), and returns the form and
// the turn's reply: how the questions request was answered.
func formTurn(t *testing.T, c *client, sid, input string, answer map[string]any, error bool) (form map[string]any, reply string) {
	t.Helper()
	pid := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("form " + input)}})
	m, _ := c.until(func(m map[string]any) bool { return m["method"] == "elicitation/create" })
	key := "result"
	if error {
		key = "error"
	}
	c.write(map[string]any{"jsonrpc": "2.0", "id": m["id"], key: answer})
	_, seen := c.response(pid)
	chunks := updates(seen, "agent_message_chunk")
	if len(chunks) == 0 {
		t.Fatalf("no reply; seen %v", seen)
	}
	return m["params"].(map[string]any), chunks[len(chunks)-1]["content"].(map[string]any)["text"].(string)
}

// TestFormRequest: the questions are one form, each question a field in
// their order: a multi-select an array of its options, a single choice a
// string of them, each with a box of the user's own words beside it unless
// the question takes none (then its choice is required), and a question
// with no options a required box alone.
func TestFormRequest(t *testing.T) {
	c, sid := startForms(t)
	form, _ := formTurn(t, c, sid, formQuestions, map[string]any{"action": "cancel"}, false)
	if form["sessionId"] != sid || form["mode"] != "form" || form["message"] != "Please answer these 4 questions." {
		t.Errorf("form %v", form)
	}
	schema := form["requestedSchema"].(map[string]any)
	raw, _ := json.Marshal(schema["properties"])
	want := `{"q0":{"description":"Which checks?","items":{"anyOf":[{"const":"vet","description":"go vet","title":"vet"},{"const":"test","title":"test"}]},"title":"Checks","type":"array"},` +
		`"q0_other":{"description":"Your own answer, besides the options chosen (optional).","title":"Other","type":"string"},` +
		`"q1":{"oneOf":[{"const":"flock","title":"flock"},{"const":"fcntl","title":"fcntl"}],"title":"Which lock?","type":"string"},` +
		`"q1_other":{"description":"Your own answer, or a note to the option chosen (optional).","title":"Other","type":"string"},` +
		`"q2":{"oneOf":[{"const":"Red","title":"Red"},{"const":"Blue","title":"Blue"}],"title":"Color?","type":"string"},` +
		`"q3":{"title":"Name?","type":"string"}}`
	if string(raw) != want {
		t.Errorf("properties\n%s\nwant\n%s", raw, want)
	}
	if req, _ := json.Marshal(schema["required"]); string(req) != `["q2","q3"]` {
		t.Errorf("required %s, want the question without words of its own and the one without options", req)
	}
	// In the questions' order on the wire, not the keys'.
	m, _ := json.Marshal(formRequest(sid, "t", make([]question, 12)))
	if i, j := strings.Index(string(m), `"q2"`), strings.Index(string(m), `"q10"`); i < 0 || j < i {
		t.Errorf("fields out of the questions' order: %s", m)
	}
}

// TestFormAnswers: an accepted form allows the questions request with the
// answers as the CLI takes them (a multi-select's labels and typed words
// joined, a single choice's label with the words beside it as its note,
// words alone as the answer, a question left blank left out); declined or
// cancelled it is refused; an answer that does not fit the form (an
// option not offered, a value of the wrong type, a field not asked,
// content that is no object, an action not known, no answer at all) is
// refused with why.
func TestFormAnswers(t *testing.T) {
	c, sid := startForms(t)
	accept := func(content any) map[string]any { return map[string]any{"action": "accept", "content": content} }
	for _, tc := range []struct {
		name   string
		answer map[string]any
		want   string
	}{
		{"answered", accept(map[string]any{"q0": []any{"vet", "test"}, "q0_other": "race", "q1": "fcntl", "q1_other": "  ranges  ", "q2": "Blue"}),
			`true {"annotations":{"Which lock?":{"notes":"ranges"}},"answers":{"Color?":"Blue","Which checks?":"vet, test, race","Which lock?":"fcntl"},"questions":`},
		{"own words", accept(map[string]any{"q1_other": "a lock file", "q3": "Ada", "q0": []any{}}),
			`true {"answers":{"Name?":"Ada","Which lock?":"a lock file"},"questions":`},
		{"declined", map[string]any{"action": "decline"}, "false The user declined to answer the questions."},
		{"cancelled", map[string]any{"action": "cancel"}, "false The user cancelled the questions."},
		{"not offered", accept(map[string]any{"q0": []any{"vet", "lint"}}), `false The questions were not answered: "lint" is not an option of "Which checks?".`},
		{"not offered single", accept(map[string]any{"q2": "Green"}), `false The questions were not answered: "Green" is not an option of "Color?".`},
		{"one for many", accept(map[string]any{"q0": "vet"}), `false The questions were not answered: q0 ("Which checks?") is not a list of options.`},
		{"many for one", accept(map[string]any{"q1": []any{"flock"}}), `false The questions were not answered: q1 ("Which lock?") is not one option.`},
		{"number for words", accept(map[string]any{"q3": 7}), `false The questions were not answered: q3 ("Name?") is not text.`},
		{"words for a choice only", accept(map[string]any{"q2_other": "Green"}), `false The questions were not answered: it has a field "q2_other" the form did not ask.`},
		{"content no object", accept("vet"), "false The questions were not answered: content is not an object."},
		{"nothing answered", accept(map[string]any{}), "false The user answered none of the questions."},
		{"no content", map[string]any{"action": "accept"}, "false The user answered none of the questions."},
		{"unknown action", map[string]any{"action": "_later"}, `false spbridge did not understand the editor's answer to the questions (action "_later").`},
	} {
		_, reply := formTurn(t, c, sid, formQuestions, tc.answer, false)
		if !strings.HasPrefix(reply, tc.want) {
			t.Errorf("%s: reply %q, want %q", tc.name, reply, tc.want)
		}
	}
}

// TestFormErrorFallsBack: a client that answers the form with an error is
// asked today's way: one permission request a question.
func TestFormErrorFallsBack(t *testing.T) {
	c, sid := startForms(t)
	c.mu.Lock()
	c.answers = []string{"answer-1"}
	c.mu.Unlock()
	in := `{"questions":[{"question":"Which lock?","options":[{"label":"flock"},{"label":"fcntl"}]}]}`
	form, reply := formTurn(t, c, sid, in, map[string]any{"code": jsonrpc.CodeMethodNotFound, "message": "no forms here"}, true)
	if form["message"] != "Which lock?" {
		t.Errorf("form %v", form)
	}
	if reply != `true {"answers":{"Which lock?":"fcntl"},"questions":[{"options":[{"label":"flock"},{"label":"fcntl"}],"question":"Which lock?"}]}` {
		t.Errorf("reply %q, want the permission request's answer", reply)
	}
}

// TestFormCancelledTurn: session/cancel while a form is open withdraws it
// ($/cancel_request naming it) and refuses the questions request: the turn
// ends, and the session takes the next prompt.
func TestFormCancelledTurn(t *testing.T) {
	c, sid := startForms(t)
	pid := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("form " + formQuestions)}})
	asked, _ := c.until(func(m map[string]any) bool { return m["method"] == "elicitation/create" })
	c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	withdrawn, _ := c.until(func(m map[string]any) bool { return m["method"] == "$/cancel_request" })
	if got := withdrawn["params"].(map[string]any)["requestId"]; got != asked["id"] {
		t.Errorf("$/cancel_request for %v, want the form %v", got, asked["id"])
	}
	m, seen := c.response(pid)
	if m["result"] == nil {
		t.Fatalf("the prompt: %v", m)
	}
	chunks := updates(seen, "agent_message_chunk")
	if len(chunks) == 0 || !strings.HasPrefix(chunks[0]["content"].(map[string]any)["text"].(string), "false The questions were not answered") {
		t.Errorf("the questions request's answer: %v, want a refusal", chunks)
	}
	// The client's late answer to the withdrawn form changes nothing.
	c.write(map[string]any{"jsonrpc": "2.0", "id": asked["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"q3": "late"}}})
	if res, _ := c.request("session/prompt", promptParams(sid, "hi")); res["stopReason"] != "end_turn" {
		t.Errorf("after the cancel: %v", res)
	}
}

// TestNoFormsCapability: a client that does not fill in forms (no
// clientCapabilities.elicitation.form object) is asked today's way.
func TestNoFormsCapability(t *testing.T) {
	for _, caps := range []any{map[string]any{}, map[string]any{"elicitation": map[string]any{}},
		map[string]any{"elicitation": map[string]any{"form": nil, "url": map[string]any{}}}, map[string]any{"elicitation": true}} {
		p, _ := json.Marshal(map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
		if wire.IsObject(wire.ReadCapabilities(p).Elicitation.Form) {
			t.Errorf("%s: forms", p)
		}
	}
	c := startPlain(t, Config{}, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}})
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	sid := res["sessionId"].(string)
	c.mu.Lock()
	c.answers = []string{"answer-0"}
	c.mu.Unlock()
	in := `{"questions":[{"question":"Which lock?","options":[{"label":"flock"},{"label":"fcntl"}]}]}`
	_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("form " + in)}})
	if n := count(seen, "elicitation/create"); n != 0 {
		t.Errorf("%d forms to a client that fills in none", n)
	}
	if n := count(seen, "session/request_permission"); n != 1 {
		t.Errorf("%d permission requests, want one", n)
	}
}
