package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// reviewFindings is a review as the model answers codex's review prompt.
const reviewFindings = `{"findings":[{"title":"[P2] Say why","body":"The note gives no reason.","confidence_score":0.6,"priority":2,"code_location":{"absolute_file_path":"/tmp/notes.txt","line_range":{"start":1,"end":1}}}],"overall_correctness":"patch is correct","overall_explanation":"One small finding.","overall_confidence_score":0.6}`

// TestE2EServeCodexControls drives the real codex (app-server) through
// spbridge serve with the official ACP client, which validates every
// message: the model option lists the app-server's models right after
// session/new; read-only mode makes codex ask before a write (refused: the
// file stays unwritten) where auto writes unasked; /review and /compact are
// listed and /review runs; the model's question (request_user_input) is a
// permission request whose options are its answers, and the answer chosen
// reaches the model; session/list, session/close (then no codex process is
// left and `spbridge run` takes the package's lock) and session/resume.
func TestE2EServeCodexControls(t *testing.T) {
	t.Parallel()
	question := map[string]any{"questions": []any{map[string]any{
		"id": "color", "header": "Color", "question": "Which color?",
		"options": []any{map[string]any{"label": "Red (Recommended)", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}}}}
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall("*** Begin Patch\n*** Add File: ro.txt\n+read-only\n*** End Patch\n")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Not written.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall("*** Begin Patch\n*** Add File: auto.txt\n+auto\n*** End Patch\n")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Written.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(reviewFindings)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "request_user_input", Arguments: question}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Blue it is.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Run after close.")}},
	)
	work := filepath.Dir(e.pkg)
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
	bin := spbridgeBin(t)
	prompt := func(text string) map[string]any { return map[string]any{"op": "prompt", "session": "s1", "text": text} }
	setMode := func(id string) map[string]any {
		return map[string]any{"op": "ext", "method": "session/set_mode", "params": map[string]any{"sessionId": "$s1", "modeId": id}}
	}
	sid := map[string]any{"sessionId": "$s1"}
	steps := []any{
		map[string]any{"op": "initialize"},                                                                   // 0
		map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},                        // 1
		map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "config_option_update"}, // 2
		setMode("read-only"),         // 3
		prompt("write ro.txt"),       // 4
		setMode("auto"),              // 5
		prompt("write auto.txt"),     // 6
		prompt("/review notes.txt"),  // 7
		prompt("ask me for a color"), // 8
		map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work}},                                              // 9
		map[string]any{"op": "ext", "method": "session/close", "params": sid},                                                                     // 10
		map[string]any{"op": "children"},                                                                                                          // 11
		map[string]any{"op": "exec", "command": []string{bin, "run", e.pkg, "--backend", "codex", "after the close"}},                             // 12
		map[string]any{"op": "ext", "method": "session/resume", "params": map[string]any{"sessionId": "$s1", "cwd": work, "mcpServers": []any{}}}, // 13
		map[string]any{"op": "closeStdin"},
	}
	events := runACPClient(t, map[string]any{"command": []string{bin, "serve"}, "env": envMap, "cwd": work, "steps": steps,
		"permissions": []any{"reject_once", map[string]any{"optionId": "answer-1"}}})

	opened := response(t, events, 1)
	var modes []string
	for _, m := range opened["modes"].(map[string]any)["availableModes"].([]any) {
		modes = append(modes, m.(map[string]any)["id"].(string))
	}
	if !slices.Equal(modes, []string{"read-only", "auto", "full-access"}) {
		t.Errorf("modes %v", modes)
	}
	for step, want := range map[int]string{4: "end_turn", 6: "end_turn", 7: "end_turn", 8: "end_turn"} {
		if r := response(t, events, step); r["stopReason"] != want {
			t.Errorf("step %d: stopReason %v, want %s", step, r["stopReason"], want)
		}
	}

	// The models: the app-server's, right after session/new.
	var models, commands []string
	var permissions []map[string]any
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" {
			var p map[string]any
			json.Unmarshal(ev.Params, &p)
			permissions = append(permissions, p)
		}
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct {
			Update map[string]any `json:"update"`
		}
		json.Unmarshal(ev.Params, &p)
		switch p.Update["sessionUpdate"] {
		case "config_option_update":
			if models != nil {
				break
			}
			for _, o := range p.Update["configOptions"].([]any) {
				if o := o.(map[string]any); o["id"] == "model" {
					for _, v := range o["options"].([]any) {
						models = append(models, v.(map[string]any)["value"].(string))
					}
				}
			}
		case "available_commands_update":
			if commands != nil {
				break // the resumed session's
			}
			for _, c := range p.Update["availableCommands"].([]any) {
				commands = append(commands, c.(map[string]any)["name"].(string))
			}
		}
	}
	if len(models) < 2 || models[0] != "default" {
		t.Errorf("model option after session/new: %v, want the app-server's models", models)
	}
	for _, want := range []string{"new", "save", "review", "compact"} {
		if !slices.Contains(commands, want) {
			t.Errorf("commands %v lack %s", commands, want)
		}
	}

	// Read-only: codex asked before the write, and the refusal held; auto
	// wrote unasked.
	if _, err := os.Stat(filepath.Join(work, "ro.txt")); !os.IsNotExist(err) {
		t.Errorf("ro.txt was written in read-only mode (%v)", err)
	}
	if data, err := os.ReadFile(filepath.Join(work, "auto.txt")); err != nil || string(data) != "auto\n" {
		t.Errorf("auto.txt in auto mode: %q, %v", data, err)
	}
	if len(permissions) != 2 {
		t.Fatalf("%d permission requests, want the read-only write's and the question's: %v", len(permissions), permissions)
	}
	if tc := permissions[0]["toolCall"].(map[string]any); tc["kind"] != "edit" {
		t.Errorf("the read-only write's permission request: %v", tc)
	}

	// The question: its answers as options, the one chosen sent to the
	// model.
	q := permissions[1]
	var labels []string
	for _, o := range q["options"].([]any) {
		labels = append(labels, o.(map[string]any)["name"].(string))
	}
	if !slices.Equal(labels, []string{"Red (Recommended)", "Blue", "Don't answer"}) ||
		!strings.Contains(q["toolCall"].(map[string]any)["title"].(string), "Which color?") {
		t.Errorf("the question's permission request: %v", q)
	}
	reqs := srv.Requests()
	if len(reqs) < 8 {
		t.Fatalf("%d model requests, want 8", len(reqs))
	}
	if body := string(reqs[6].Body); !strings.Contains(body, "function_call_output") || !strings.Contains(body, "Blue") {
		t.Errorf("the answer did not reach the model: %.1500s", body)
	}
	if !strings.Contains(string(reqs[4].Body), "notes.txt") {
		t.Errorf("/review's instructions did not reach the model")
	}
	_, text := updatesOf(events)
	for _, want := range []string{"Not written.", "Written.", "One small finding.", "[P2] Say why", "Blue it is."} {
		if !strings.Contains(text, want) {
			t.Errorf("the replies %q lack %q", text, want)
		}
	}

	// The session's history, its close and resume.
	list := response(t, events, 9)["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["sessionId"] != e.pkg || list[0].(map[string]any)["title"] != "write ro.txt" {
		t.Errorf("session/list %v", list)
	}
	if ch := eventsOf(events, "children"); len(ch) != 1 || len(ch[0].Children) != 0 {
		t.Errorf("processes left after session/close: %+v", ch)
	}
	if ex := eventsOf(events, "exec"); len(ex) != 1 || ex[0].Code == nil || *ex[0].Code != 0 {
		t.Errorf("spbridge run after session/close: %+v", ex)
	}
	// Resumed without naming its backend, the session goes on with codex,
	// which its conversation last ran on.
	if r := response(t, events, 13); r["modes"] == nil || r["modes"].(map[string]any)["currentModeId"] != "auto" {
		t.Errorf("session/resume: %v", r)
	}
}
