//go:build linux

package codex

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
)

// reviewJSON is a review as the model answers codex's review prompt.
const reviewJSON = `{"findings":[{"title":"[P1] Check the error","body":"The error of os.Remove is dropped.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"/tmp/x/main.go","line_range":{"start":3,"end":3}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One dropped error.","overall_confidence_score":0.7}`

// itemTexts lists the items as "type: text".
func itemTexts(items []archive.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Type()+": "+it.String("text"))
	}
	return out
}

// TestE2ECommands: on the app-server, /compact before any turn is refused
// without starting codex, "/review INSTRUCTIONS" runs review/start (the
// model gets codex's review prompt with them; its findings are the turn's
// reply and history), and /compact then compacts the thread (a notice).
// codex exec runs neither and says so.
func TestE2ECommands(t *testing.T) {
	b, srv := realCodex(t, TransportAppServer, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(reviewJSON)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Summary of the review.")}})
	if cmds := b.Commands(); !slices.ContainsFunc(cmds, func(c backend.Command) bool { return c.Name == "review" && c.InputHint != "" }) ||
		!slices.ContainsFunc(cmds, func(c backend.Command) bool { return c.Name == "compact" }) {
		t.Errorf("Commands() = %+v", cmds)
	}
	a := &approver{streaming: make(chan struct{})}
	if end := b.Turn(context.Background(), backend.Message{Text: "/compact"}, a); end.Status != itemmap.TurnFailed || !end.NotStarted {
		t.Errorf("/compact first: %+v", end)
	}
	if len(srv.Requests()) != 0 || b.Started() {
		t.Errorf("/compact before any turn reached codex")
	}
	a = &approver{streaming: make(chan struct{})}
	end := b.Turn(context.Background(), backend.Message{Text: "/review look at main.go"}, a)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("/review: %v %q", end.Status, itemTexts(a.items))
	}
	texts := itemTexts(a.items)
	if !slices.Contains(texts, "notice: Codex is reviewing: look at main.go") ||
		!slices.ContainsFunc(texts, func(s string) bool {
			return strings.HasPrefix(s, "assistant: One dropped error.") && strings.Contains(s, "[P1] Check the error")
		}) {
		t.Errorf("/review items = %q", texts)
	}
	if len(end.History) != 1 || !strings.Contains(end.History[0].Content[0].String("text"), "Check the error") {
		t.Errorf("/review history = %+v", end.History)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "look at main.go") {
		t.Fatalf("%d requests; the review's instructions did not reach the model", len(reqs))
	}
	a = &approver{streaming: make(chan struct{})}
	if end := b.Turn(context.Background(), backend.Message{Text: "/compact"}, a); end.Status != itemmap.TurnCompleted {
		t.Fatalf("/compact: %v %q", end.Status, itemTexts(a.items))
	}
	if texts := itemTexts(a.items); !slices.Contains(texts, "notice: Codex compacted the conversation.") {
		t.Errorf("/compact items = %q", texts)
	}
	if len(srv.Requests()) != 2 {
		t.Errorf("%d requests after /compact, want 2", len(srv.Requests()))
	}

	// codex exec: /review runs codex exec review, a session of its own
	// that later turns do not resume; /compact is refused.
	ex, exSrv := realCodex(t, TransportExec, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(reviewJSON)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Hello.")}})
	if cmds := ex.Commands(); len(cmds) != 1 || cmds[0].Name != "review" {
		t.Errorf("exec Commands() = %+v", cmds)
	}
	a = &approver{streaming: make(chan struct{})}
	end = ex.Turn(context.Background(), backend.Message{Text: "/compact"}, a)
	if !end.NotStarted || len(a.items) != 1 || !strings.Contains(a.items[0].String("text"), "not available with codex exec") {
		t.Errorf("exec /compact: %+v %q", end, itemTexts(a.items))
	}
	a = &approver{streaming: make(chan struct{})}
	end = ex.Turn(context.Background(), backend.Message{Text: "/review look at main.go"}, a)
	if end.Status != itemmap.TurnCompleted || !slices.ContainsFunc(itemTexts(a.items), func(s string) bool { return strings.Contains(s, "[P1] Check the error") }) {
		t.Fatalf("exec /review: %v %q", end.Status, itemTexts(a.items))
	}
	if reqs := exSrv.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "look at main.go") {
		t.Errorf("exec /review: the instructions did not reach the model")
	}
	if ex.Started() {
		t.Error("exec /review gave the conversation the review's thread")
	}
	a = &approver{streaming: make(chan struct{})}
	if end := ex.Turn(context.Background(), backend.Message{Text: "hi"}, a); end.Status != itemmap.TurnCompleted || !ex.Started() {
		t.Errorf("exec turn after /review: %v", end.Status)
	}
}

// TestCommandOf: which prompts are Codex's commands.
func TestCommandOf(t *testing.T) {
	for _, tc := range []struct {
		text, name, arg string
		ok              bool
	}{
		{"/review", "review", "", true},
		{"  /review  look at\nmain.go ", "review", "look at\nmain.go", true},
		{"/compact", "compact", "", true},
		{"/compact now", "", "", false},
		{"/reviewer", "", "", false},
		{"review", "", "", false},
		{"look at this\n\n/review --base main", "", "", false},
	} {
		name, arg, ok := commandOf(tc.text)
		if name != tc.name || arg != tc.arg || ok != tc.ok {
			t.Errorf("commandOf(%q) = %q, %q, %v, want %q, %q, %v", tc.text, name, arg, ok, tc.name, tc.arg, tc.ok)
		}
	}
	b := New(Options{Transport: TransportExec})
	for arg, want := range map[string]string{"": "--uncommitted", "--base main": "main", "--commit abc": "abc", "look here": "-"} {
		argv, stdin := b.reviewArgs(arg)
		if argv[len(argv)-1] != want || slices.Contains(argv, "look here") || (want == "-" && stdin != arg) || (want != "-" && stdin != "") {
			t.Errorf("reviewArgs(%q) = %q, %q", arg, argv, stdin)
		}
	}
	for arg, want := range map[string]string{"": "uncommittedChanges", "--base main": "baseBranch", "--commit abc": "commit", "look here": "custom"} {
		if got := reviewTarget(arg)["type"]; got != want {
			t.Errorf("reviewTarget(%q) type = %v, want %s", arg, got, want)
		}
	}
}

// chooser answers questions requests with the first option whose label
// starts with pick, and records the items.
type chooser struct {
	approver
	asked []itemmap.Approval
	pick  string
}

func (c *chooser) Approve(_ context.Context, a itemmap.Approval) backend.Decision {
	c.mu.Lock()
	c.asked = append(c.asked, a)
	c.mu.Unlock()
	var in struct {
		Questions []struct {
			Question string
			Options  []struct{ Label string }
		}
	}
	if a.ToolName != itemmap.QuestionsTool || json.Unmarshal(a.Input, &in) != nil {
		return backend.Decision{}
	}
	answers := map[string]string{}
	for _, q := range in.Questions {
		for _, o := range q.Options {
			if strings.HasPrefix(o.Label, c.pick) {
				answers[q.Question] = o.Label
				break
			}
		}
	}
	raw, _ := json.Marshal(map[string]any{"answers": answers})
	return backend.Decision{Allow: true, UpdatedInput: raw}
}

// TestE2EQuestions: the model's request_user_input reaches the host as a
// questions request; the answer goes back to the model as the call's
// output and stays on the questions item; a question not answered tells
// the model so.
func TestE2EQuestions(t *testing.T) {
	args := map[string]any{"questions": []any{map[string]any{
		"id": "color", "header": "Color", "question": "Which color?",
		"options": []any{map[string]any{"label": "Red (Recommended)", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}}}}
	call := fakeapi.OutputItem{Type: "function_call", Name: "request_user_input", Arguments: args}
	b, srv := realCodex(t, TransportAppServer,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{call}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Blue it is.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{call}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("No answer, then.")}})
	for i, pick := range []string{"Blue", "nothing"} {
		c := &chooser{approver: approver{streaming: make(chan struct{})}, pick: pick}
		if end := b.Turn(context.Background(), backend.Message{Text: "ask me"}, c); end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %d: %v %q", i, end.Status, itemTexts(c.items))
		}
		if len(c.asked) != 1 || c.asked[0].ToolItemID == "" {
			t.Fatalf("turn %d asked %+v", i, c.asked)
		}
		var qs []archive.Item
		for _, it := range c.items {
			if it.Type() == archive.TypeQuestions {
				qs = append(qs, it)
			}
		}
		if len(qs) != 1 || qs[0].ID() != c.asked[0].ToolItemID {
			t.Fatalf("turn %d: questions items %v", i, qs)
		}
		q, _ := qs[0].Get("questions").([]any)
		answer, _ := q[0].(map[string]any)["answer"].(string)
		reqs := srv.Requests()
		body := string(reqs[len(reqs)-1].Body)
		if pick == "Blue" {
			if answer != "Blue" || !strings.Contains(body, `function_call_output`) || !strings.Contains(body, `Blue`) {
				t.Errorf("answered: item answer %q; the answer did not reach the model: %.2000s", answer, body)
			}
		} else if answer != "" {
			t.Errorf("not answered: item answer %q", answer)
		}
	}
}

// TestE2EPrepare: Prepare starts the app-server and lists its models
// (Events.ModelsChanged) before any turn, without a thread; the first turn
// runs on that same server. codex exec has nothing to prepare.
func TestE2EPrepare(t *testing.T) {
	b, _ := realCodex(t, TransportAppServer)
	changed := make(chan []backend.Model, 1)
	b.Opts.Events.ModelsChanged = func(m []backend.Model) { changed <- m }
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	models := <-changed
	if len(models) < 2 || models[0].ID != "default" || !slices.EqualFunc(models, b.Models(), func(x, y backend.Model) bool { return x.ID == y.ID }) {
		t.Errorf("models after Prepare = %+v", models)
	}
	if b.Started() {
		t.Error("Prepare started a thread")
	}
	p := b.app.proc
	if p == nil {
		t.Fatal("no app-server after Prepare")
	}
	if err := b.Prepare(context.Background()); err != nil || b.app.proc != p {
		t.Errorf("a second Prepare: %v, another server %v", err, b.app.proc != p)
	}
	a := &approver{streaming: make(chan struct{})}
	if end := b.Turn(context.Background(), backend.Message{Text: "hi"}, a); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn after Prepare: %v %q", end.Status, itemTexts(a.items))
	}
	if b.app.proc != p || !b.Started() {
		t.Errorf("the turn did not run on the prepared server")
	}
	ex, _ := realCodex(t, TransportExec)
	if err := ex.Prepare(context.Background()); err != nil || ex.Proc() != nil {
		t.Errorf("exec Prepare: %v, process %v", err, ex.Proc())
	}
}

// always allows every request for the rest of the session, and counts
// them.
type always struct {
	approver
	asked []itemmap.Approval
}

func (a *always) Approve(_ context.Context, ap itemmap.Approval) backend.Decision {
	a.mu.Lock()
	a.asked = append(a.asked, ap)
	a.mu.Unlock()
	g, ok := backend.GrantFor(ap, Plugin.Tools)
	if !ok {
		return backend.Decision{Allow: true}
	}
	return backend.Decision{Allow: true, Always: &g}
}

// TestE2EMCPApproval: codex asks (as an MCP elicitation) before an MCP
// server's tool runs; the host is asked about the call, and its answer
// holds: allowed for the session, the tool runs, and its second call is
// not asked about again.
func TestE2EMCPApproval(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	call := fakeapi.OutputItem{Type: "function_call", Name: "shout", Namespace: "mcp__fake", Arguments: map[string]any{"text": "hi"}}
	b, _ := realCodex(t, TransportAppServer,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "tool_search_call", Query: "shout"}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{call}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{call}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Shouted twice.")}})
	b.Opts.MCPServers = []backend.MCPServer{{Name: "fake", Transport: backend.MCPStdio, Command: exe,
		Env: []backend.NameValue{{Name: fakeapi.MCPServerEnv, Value: "1"}, {Name: fakeapi.MCPTokenEnv, Value: "tok"}}}}
	h := &always{approver: approver{streaming: make(chan struct{})}}
	if end := b.Turn(context.Background(), backend.Message{Text: "shout hi twice"}, h); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn: %v %q", end.Status, itemTexts(h.items))
	}
	if len(h.asked) != 1 || h.asked[0].ToolName != "fake.shout" || h.asked[0].ToolItemID == "" {
		t.Fatalf("asked %+v, want the first call only", h.asked)
	}
	var ran int
	for _, it := range h.items {
		if it.Type() == archive.TypeTool && it.String("name") == "fake.shout" {
			if it.String("status") != archive.StatusSucceeded || !strings.Contains(it.String("detail"), "HI tok") {
				t.Errorf("the MCP call %v", it.Map())
			}
			ran++
		}
	}
	if ran != 2 {
		t.Errorf("%d MCP calls ran, want 2: %q", ran, itemTexts(h.items))
	}
}

// answerer allows every request; a questions request gets the labels of
// answers, by question.
type answerer struct {
	approver
	answers map[string]string
	asked   []itemmap.Approval
}

func (a *answerer) Approve(_ context.Context, ap itemmap.Approval) backend.Decision {
	a.mu.Lock()
	a.asked = append(a.asked, ap)
	a.mu.Unlock()
	if ap.ToolName != itemmap.QuestionsTool {
		return backend.Decision{Allow: true}
	}
	raw, _ := json.Marshal(map[string]any{"answers": a.answers})
	return backend.Decision{Allow: true, UpdatedInput: raw}
}

// TestE2EMCPForm: an MCP server's form (elicitation/create) reaches the
// host as questions, one a field, and the content its answers make goes
// back to the server.
func TestE2EMCPForm(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := realCodex(t, TransportAppServer,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "tool_search_call", Query: "ask color"}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "ask", Namespace: "mcp__fake", Arguments: map[string]any{}}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Blue, then.")}})
	b.Opts.MCPServers = []backend.MCPServer{{Name: "fake", Transport: backend.MCPStdio, Command: exe,
		Env: []backend.NameValue{{Name: fakeapi.MCPServerEnv, Value: "1"}}}}
	h := &answerer{approver: approver{streaming: make(chan struct{})}, answers: map[string]string{"Color": "Blue", "Sure?": "Yes"}}
	if end := b.Turn(context.Background(), backend.Message{Text: "ask me"}, h); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn: %v %q", end.Status, itemTexts(h.items))
	}
	if len(h.asked) != 2 || h.asked[1].ToolName != itemmap.QuestionsTool {
		t.Fatalf("asked %+v, want the call's approval and the form", h.asked)
	}
	var out string
	for _, it := range h.items {
		if it.Type() == archive.TypeTool && it.String("name") == "fake.ask" {
			out = it.String("detail")
		}
	}
	if !strings.Contains(out, `"action":"accept"`) || !strings.Contains(out, `"color":"blue"`) || !strings.Contains(out, `"confirm":true`) {
		t.Errorf("what the MCP server got: %q", out)
	}
}

// TestE2EExecMCP: codex exec, which cannot ask, runs the editor's MCP
// server's tools in auto mode, and refuses them in read-only mode.
func TestE2EExecMCP(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := []fakeapi.ResponsesReply{
		{Items: []fakeapi.OutputItem{{Type: "tool_search_call", Query: "shout"}}},
		{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "shout", Namespace: "mcp__fake", Arguments: map[string]any{"text": "hi"}}}},
		{Items: []fakeapi.OutputItem{fakeapi.MessageItem("done")}},
	}
	for _, mode := range []string{ModeAuto, ModeReadOnly} {
		t.Run(mode, func(t *testing.T) {
			b, _ := realCodex(t, TransportExec, script...)
			b.Opts.MCPServers = []backend.MCPServer{{Name: "fake", Transport: backend.MCPStdio, Command: exe,
				Env: []backend.NameValue{{Name: fakeapi.MCPServerEnv, Value: "1"}, {Name: fakeapi.MCPTokenEnv, Value: "tok"}}}}
			if err := b.SetMode(context.Background(), mode); err != nil {
				t.Fatal(err)
			}
			a := &approver{streaming: make(chan struct{})}
			if end := b.Turn(context.Background(), backend.Message{Text: "shout hi"}, a); end.Status != itemmap.TurnCompleted {
				t.Fatalf("turn: %v %q", end.Status, itemTexts(a.items))
			}
			var call archive.Item
			for _, it := range a.items {
				if it.Type() == archive.TypeTool && it.String("name") == "fake.shout" {
					call = it
				}
			}
			ran := call.String("status") == archive.StatusSucceeded && strings.Contains(call.String("detail"), "HI tok")
			if ran != (mode == ModeAuto) {
				t.Errorf("%s: the MCP call %v", mode, call.Map())
			}
		})
	}
}

// TestCommandAfterRestore: after a reopen the message's Context holds the
// conversation so far and its Text the user's words: a command is read from
// the words alone (/compact refused on exec, not sent as text), and a
// prompt goes to the CLI as the Context, then the words.
func TestCommandAfterRestore(t *testing.T) {
	ctx := restore.Heading + "User: hi\n\nAssistant: hello\n\n"
	b, _ := fakeCodexBackend(t, "silent", TransportExec, Options{})
	h := &items{}
	end := b.Turn(context.Background(), backend.Message{Context: ctx, Text: "/compact"}, h)
	if end == nil || !end.NotStarted || len(h.list) != 1 || !strings.HasPrefix(h.list[0].String("text"), "/compact is not available with codex exec") {
		t.Errorf("/compact after a restore: end %+v, items %q", end, texts(h))
	}
	in := input(backend.Message{Context: ctx, Text: "/compact now"})
	if text := in[0].(map[string]any)["text"]; text != ctx+"/compact now" {
		t.Errorf("app-server input text = %q", text)
	}
}
