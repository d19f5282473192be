package fakeapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runRequest starts a request that begins a turn (review/start,
// thread/compact/start) and reads until that turn completes, answering
// each server request with answer, as runTurn does for turn/start.
func (a *appServer) runRequest(method string, params map[string]any, answer func(req map[string]any) any) *appTurn {
	a.t.Helper()
	id := a.request(method, params)
	tr := &appTurn{}
	for {
		m := a.next()
		if m["id"] == id && m["method"] == nil {
			if m["error"] != nil {
				a.t.Fatalf("%s: error %v", method, m["error"])
			}
			if turn, ok := m["result"].(map[string]any)["turn"].(map[string]any); ok {
				tr.id, _ = turn["id"].(string)
			}
			continue
		}
		tr.msgs = append(tr.msgs, m)
		if m["id"] != nil && m["method"] != nil {
			var result any
			if answer != nil {
				result = answer(m)
			}
			if result == nil {
				a.t.Fatalf("unexpected server request %v", m)
			}
			a.send(map[string]any{"id": m["id"], "result": result})
			continue
		}
		if m["method"] == "turn/completed" {
			tr.completed, _ = paramsOf(m)["turn"].(map[string]any)
			return tr
		}
	}
}

// reviewJSON is a review as the model answers codex's review prompt.
const reviewJSON = `{"findings":[{"title":"[P1] Check the error","body":"The error of os.Remove is dropped.","confidence_score":0.8,"priority":1,"code_location":{"absolute_file_path":"/tmp/x/main.go","line_range":{"start":3,"end":3}}}],"overall_correctness":"patch is incorrect","overall_explanation":"One dropped error.","overall_confidence_score":0.7}`

// TestAppServerReview: review/start with custom instructions runs inline
// on the thread as a turn of its own: enteredReviewMode, the model's
// review, exitedReviewMode whose review is the text to show.
func TestAppServerReview(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem(reviewJSON)}})
	a := startAppServer(t, srv, "", "")
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThread()
	tr := a.runRequest("review/start", map[string]any{"threadId": thread,
		"target": map[string]any{"type": "custom", "instructions": "look at main.go"}}, nil)
	defer a.save("review")
	if tr.completed["status"] != "completed" {
		t.Errorf("review turn = %v", tr.completed)
	}
	entered := completedItems(tr.msgs, "enteredReviewMode")
	exited := completedItems(tr.msgs, "exitedReviewMode")
	if len(entered) != 1 || len(exited) != 1 {
		t.Fatalf("review items: entered %v, exited %v; methods %v", entered, exited, methods(tr.msgs))
	}
	if r, _ := exited[0]["review"].(string); !strings.Contains(r, "Check the error") {
		t.Errorf("exitedReviewMode review = %q", r)
	}
	bodies := responsesBodies(t, srv)
	if b, _ := json.Marshal(bodies); len(bodies) != 1 || !strings.Contains(string(b), "look at main.go") {
		t.Errorf("%d requests; the review's instructions are not in the model's request", len(bodies))
	}
}

// TestAppServerCompact: thread/compact/start on a thread with a turn runs a
// compaction turn: a contextCompaction item, turn/completed.
func TestAppServerCompact(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem("Hello.")}},
		ResponsesReply{Items: []OutputItem{MessageItem("Summary: the user said hi.")}})
	a := startAppServer(t, srv, "", "")
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThread()
	a.runTurn(map[string]any{"threadId": thread, "input": textInput("hi")}, nil)
	tr := a.runRequest("thread/compact/start", map[string]any{"threadId": thread}, nil)
	defer a.save("compact")
	if tr.completed["status"] != "completed" {
		t.Errorf("compact turn = %v", tr.completed)
	}
	if cs := completedItems(tr.msgs, "contextCompaction"); len(cs) != 1 {
		t.Errorf("contextCompaction items %v; methods %v", cs, methods(tr.msgs))
	}
}

// TestAppServerRequestUserInput: with the feature
// default_mode_request_user_input, the model's request_user_input call
// reaches the client as item/tool/requestUserInput; the answer (question
// id → labels) goes back to the model as the call's output.
func TestAppServerRequestUserInput(t *testing.T) {
	t.Parallel()
	args := map[string]any{"questions": []any{map[string]any{
		"id": "color", "header": "Color", "question": "Which color?",
		"options": []any{map[string]any{"label": "Red (Recommended)", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}}}}
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "request_user_input", Arguments: args}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Blue it is.")}})
	a := startAppServer(t, srv, "", "", "-c", "features.default_mode_request_user_input=true")
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThread()
	var asked []map[string]any
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("ask me")}, func(req map[string]any) any {
		if req["method"] != "item/tool/requestUserInput" {
			return nil
		}
		asked = append(asked, paramsOf(req))
		return map[string]any{"answers": map[string]any{"color": map[string]any{"answers": []any{"Blue"}}}}
	})
	defer a.save("request_user_input")
	if len(asked) != 1 {
		t.Fatalf("%d requestUserInput requests; methods %v", len(asked), methods(tr.msgs))
	}
	qs, _ := asked[0]["questions"].([]any)
	if len(qs) != 1 || qs[0].(map[string]any)["id"] != "color" {
		t.Errorf("questions = %v", asked[0]["questions"])
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	found := false
	for _, in := range bodies[1]["input"].([]any) {
		b, _ := json.Marshal(in)
		if strings.Contains(string(b), "function_call_output") && strings.Contains(string(b), "Blue") {
			found = true
		}
	}
	if !found {
		t.Errorf("the answer did not reach the model")
	}
}

// TestAppServerCommandActions: a commandExecution item carries the
// actions codex parsed from its command: read (with the file's name and
// path), listFiles and search (query and path).
func TestAppServerCommandActions(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{ExecCommandCall("cat notes.txt")}},
		ResponsesReply{Items: []OutputItem{ExecCommandCall("ls src")}},
		ResponsesReply{Items: []OutputItem{ExecCommandCall("rg -n TODO src")}},
		ResponsesReply{Items: []OutputItem{MessageItem("Looked.")}})
	a := startAppServer(t, srv, "", "")
	for name, data := range map[string]string{"notes.txt": "a note\n", "src/app.go": "package app // TODO\n"} {
		p := filepath.Join(a.work, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThread()
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("look around")}, nil)
	defer a.save("command_actions")
	var types []string
	for _, c := range completedItems(tr.msgs, "commandExecution") {
		for _, act := range c["commandActions"].([]any) {
			types = append(types, act.(map[string]any)["type"].(string))
		}
	}
	if strings.Join(types, " ") != "read listFiles search" {
		t.Errorf("command actions %v, want read listFiles search", types)
	}
}

// TestMain lets the test binary be the fake MCP server codex starts.
func TestMain(m *testing.M) {
	if os.Getenv(MCPServerEnv) != "" {
		FakeMCPServer(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// TestAppServerMCPApproval: the model finds an MCP server's tool with
// tool_search and calls it; codex asks the client whether it may, as an
// MCP elicitation (mcpServer/elicitation/request, form mode, its _meta
// saying it is a tool call's approval); accepted, the tool runs.
func TestAppServerMCPApproval(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "tool_search_call", Query: "shout"}}},
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "shout", Namespace: "mcp__fake", Arguments: map[string]any{"text": "hi"}}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Shouted.")}})
	a := startAppServer(t, srv, "", "")
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThreadWith(map[string]any{"config": map[string]any{"mcp_servers": map[string]any{
		"fake": map[string]any{"command": exe, "args": []any{}, "env": map[string]any{MCPServerEnv: "1", MCPTokenEnv: "tok"}}}}})
	var asked []map[string]any
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("shout hi")}, func(req map[string]any) any {
		if req["method"] != "mcpServer/elicitation/request" {
			return nil
		}
		asked = append(asked, paramsOf(req))
		return map[string]any{"action": "accept", "content": nil}
	})
	defer a.save("mcp_tool_approval", exe, "/home/dev/capture/spbridge-test-binary")
	if len(asked) != 1 {
		t.Fatalf("%d elicitations; methods %v", len(asked), methods(tr.msgs))
	}
	calls := completedItems(tr.msgs, "mcpToolCall")
	if len(calls) != 1 || calls[0]["status"] != "completed" || !strings.Contains(fmtJSON(calls[0]["result"]), "HI tok") {
		t.Errorf("mcpToolCall items %v", calls)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAppServerMCPElicitation: an MCP server's own form (elicitation/create)
// reaches the client as mcpServer/elicitation/request (after the call's
// approval); the content the client accepts with goes back to the server.
func TestAppServerMCPElicitation(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "tool_search_call", Query: "ask color"}}},
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "ask", Namespace: "mcp__fake", Arguments: map[string]any{}}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Blue, then.")}})
	a := startAppServer(t, srv, "", "")
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThreadWith(map[string]any{"config": map[string]any{"mcp_servers": map[string]any{
		"fake": map[string]any{"command": exe, "args": []any{}, "env": map[string]any{MCPServerEnv: "1"}}}}})
	var forms []map[string]any
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("ask me")}, func(req map[string]any) any {
		if req["method"] != "mcpServer/elicitation/request" {
			return nil
		}
		p := paramsOf(req)
		if meta, _ := p["_meta"].(map[string]any); meta != nil && meta["codex_approval_kind"] == "mcp_tool_call" {
			return map[string]any{"action": "accept", "content": nil}
		}
		forms = append(forms, p)
		return map[string]any{"action": "accept", "content": map[string]any{"color": "blue", "confirm": true}}
	})
	defer a.save("mcp_elicitation", exe, "/home/dev/capture/spbridge-test-binary")
	if len(forms) != 1 || forms[0]["message"] != "Pick a color" {
		t.Fatalf("forms %v; methods %v", forms, methods(tr.msgs))
	}
	calls := completedItems(tr.msgs, "mcpToolCall")
	if len(calls) != 1 || !strings.Contains(fmtJSON(calls[0]["result"]), `\"color\":\"blue\"`) {
		t.Errorf("mcpToolCall items %v", calls)
	}
}

// TestExecReview: `codex exec review --json` with instructions runs a review
// in a session of its own and prints it as exec events.
func TestExecReview(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem(reviewJSON)}})
	run := runCodex(t, srv, "", "", "look at main.go", "-c", `sandbox_mode="workspace-write"`, "exec", "review", "--json", "--skip-git-repo-check", "-")
	if run.err != nil {
		t.Fatalf("codex exec review: %v\n%s", run.err, run.dump())
	}
	saveExecRecording(t, run, "review")
	if msg := run.find("item.completed"); msg == nil || !strings.Contains(fmtJSON(msg), "Check the error") {
		t.Errorf("no review message:\n%s", run.dump())
	}
	if b, _ := json.Marshal(responsesBodies(t, srv)); !strings.Contains(string(b), "look at main.go") {
		t.Errorf("the instructions did not reach the model")
	}
}
