package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"spbridge/internal/fakeapi"
	"spbridge/internal/trust"
)

// fakeapi.MCPServerEnv turns the test binary into a minimal MCP server on
// stdio.
func init() {
	helperModes[fakeapi.MCPServerEnv] = func() int { fakeapi.FakeMCPServer(os.Stdin, os.Stdout); return 0 }
}

// eventsOf returns the client's events of one kind (e.g. "exec").
func eventsOf(out []acpEvent, kind string) []acpEvent {
	var found []acpEvent
	for _, e := range out {
		if e.Event == kind {
			found = append(found, e)
		}
	}
	return found
}

// TestE2EServeControls drives the real claude through spbridge serve with
// the official ACP client: the modes offered and acceptEdits switched on
// (a Write then runs without a permission request), the commands listed
// (the project's own among them) and one run, the editor's MCP server
// reaching the model's tool list, a prompt queued behind a slow turn,
// session/list, session/close (then no CLI process is left and `spbridge
// run` takes the package's lock), session/resume, and the terminal log-in
// offered only to a client that runs one.
func TestE2EServeControls(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("slowly ", 60)
	write := map[string]any{"content": "made in acceptEdits\n"}
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_write", Name: "Write", Input: write}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Written."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hi Bob."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: long}}, ChunkDelay: 20 * time.Millisecond},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "The queued prompt's reply."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Run after close."}}},
	)
	work := filepath.Dir(e.pkg)
	// The fake model's Write names the file by its absolute path (the
	// script holds the same map).
	write["file_path"] = filepath.Join(work, "edited.txt")
	os.MkdirAll(filepath.Join(work, ".claude", "commands"), 0o755)
	os.WriteFile(filepath.Join(work, ".claude", "commands", "greet.md"),
		[]byte("---\ndescription: Greets someone\nargument-hint: NAME\n---\nSay hi to $ARGUMENTS.\n"), 0o644)
	// The project's own command acts once the folder is trusted
	// (spbridge trust add).
	if err := trust.Set(stateOf(e.env), work, true); err != nil {
		t.Fatal(err)
	}
	envMap := acpEnv(e.env)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	mcp := []any{map[string]any{"name": "fake", "command": exe, "args": []any{}, "env": []any{map[string]any{"name": fakeapi.MCPServerEnv, "value": "1"}}}}
	bin := spbridgeBin(t)
	prompt := func(text string) map[string]any { return map[string]any{"op": "prompt", "session": "s1", "text": text} }
	sid := map[string]any{"sessionId": "$s1"}
	steps := []any{
		map[string]any{"op": "initialize", "clientCapabilities": map[string]any{"auth": map[string]any{"terminal": true}}}, // 0
		map[string]any{"op": "newSession", "cwd": work, "meta": meta, "mcpServers": mcp, "saveAs": "s1"},                   // 1
		// The commands as claude lists them, the project's among them
		// (before the answer or after it, as claude starts).
		map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "available_commands_update", "contains": `"greet"`},
		map[string]any{"op": "ext", "method": "session/set_mode", "params": map[string]any{"sessionId": "$s1", "modeId": "acceptEdits"}}, // 3
		prompt("write the file"), // 4
		prompt("/greet Bob"),     // 5
		map[string]any{"op": "prompt", "session": "s1", "text": "count slowly", "async": true, "name": "slow"}, // 6
		map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "agent_message_chunk"},
		map[string]any{"op": "prompt", "session": "s1", "text": "and then this", "async": true, "name": "queued"}, // 8
		map[string]any{"op": "await", "name": "slow"},
		map[string]any{"op": "await", "name": "queued"},
		map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work}},                                              // 11
		map[string]any{"op": "ext", "method": "session/close", "params": sid},                                                                     // 12
		map[string]any{"op": "children"},                                                                                                          // 13
		map[string]any{"op": "exec", "command": []string{bin, "run", e.pkg, "after the close"}},                                                   // 14
		map[string]any{"op": "ext", "method": "session/resume", "params": map[string]any{"sessionId": "$s1", "cwd": work, "mcpServers": []any{}}}, // 15
		map[string]any{"op": "closeStdin"},
	}
	events := runACPClient(t, map[string]any{"command": []string{bin, "serve"}, "env": envMap, "cwd": work, "steps": steps})

	init := response(t, events, 0)
	for _, m := range init["authMethods"].([]any) {
		if m := m.(map[string]any); m["type"] != "terminal" || len(m["args"].([]any)) != 2 || m["args"].([]any)[0] != "--login" {
			t.Errorf("auth method for a terminal client: %v", m)
		}
	}
	caps := init["agentCapabilities"].(map[string]any)
	if sc := caps["sessionCapabilities"].(map[string]any); sc["list"] == nil || sc["resume"] == nil || sc["close"] == nil {
		t.Errorf("sessionCapabilities %v", sc)
	}
	var modes []string
	for _, m := range response(t, events, 1)["modes"].(map[string]any)["availableModes"].([]any) {
		modes = append(modes, m.(map[string]any)["id"].(string))
	}
	if !slices.Contains(modes, "acceptEdits") || !slices.Contains(modes, "plan") || !slices.Contains(modes, "default") {
		t.Errorf("modes %v", modes)
	}
	for step, want := range map[int]string{4: "end_turn", 5: "end_turn", 6: "end_turn", 8: "end_turn"} {
		if r := response(t, events, step); r["stopReason"] != want {
			t.Errorf("step %d: stopReason %v, want %s", step, r["stopReason"], want)
		}
	}
	var commands []string
	var modeUpdates []string
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" {
			t.Errorf("a permission request in acceptEdits: %s", ev.Params)
		}
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct {
			Update map[string]any `json:"update"`
		}
		json.Unmarshal(ev.Params, &p)
		switch p.Update["sessionUpdate"] {
		case "available_commands_update":
			for _, c := range p.Update["availableCommands"].([]any) {
				commands = append(commands, c.(map[string]any)["name"].(string))
			}
		case "current_mode_update":
			modeUpdates = append(modeUpdates, p.Update["currentModeId"].(string))
		}
	}
	for _, want := range []string{"new", "save", "greet", "compact"} {
		if !slices.Contains(commands, want) {
			t.Errorf("commands %v lack %s", commands, want)
		}
	}
	if !slices.Contains(modeUpdates, "acceptEdits") {
		t.Errorf("current_mode_update %v", modeUpdates)
	}
	if data, err := os.ReadFile(filepath.Join(work, "edited.txt")); err != nil || string(data) != "made in acceptEdits\n" {
		t.Errorf("the Write in acceptEdits: %q, %v", data, err)
	}
	reqs := e.srv.Requests()
	if len(reqs) < 6 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Body), "mcp__fake__shout") {
		t.Error("the editor's MCP server's tool did not reach the model")
	}
	if !strings.Contains(string(reqs[2].Body), "Say hi to Bob.") {
		t.Errorf("/greet Bob was not run as the project's command: %q", userTexts(reqs[2].Body))
	}
	_, text := updatesOf(events)
	if !strings.Contains(text, "The queued prompt's reply.") {
		t.Errorf("the queued prompt's reply is missing from %q", text)
	}
	list := response(t, events, 11)["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["sessionId"] != e.pkg || list[0].(map[string]any)["title"] != "write the file" {
		t.Errorf("session/list %v", list)
	}
	if ch := eventsOf(events, "children"); len(ch) != 1 || len(ch[0].Children) != 0 {
		t.Errorf("processes left after session/close: %+v", ch)
	}
	if ex := eventsOf(events, "exec"); len(ex) != 1 || ex[0].Code == nil || *ex[0].Code != 0 {
		t.Errorf("spbridge run after session/close: %+v", ex)
	}
	if r := response(t, events, 15); r["sessionId"] != nil || r["modes"] == nil {
		t.Errorf("session/resume: %v", r)
	}

	// A client without auth.terminal gets the agent method naming the
	// command to run.
	events = runACPClient(t, map[string]any{"command": []string{bin, "serve"}, "env": envMap, "cwd": work,
		"steps": []any{map[string]any{"op": "initialize"}, map[string]any{"op": "closeStdin"}}})
	for _, m := range response(t, events, 0)["authMethods"].([]any) {
		if m := m.(map[string]any); m["type"] != nil || !strings.Contains(m["description"].(string), "spbridge login --backend") {
			t.Errorf("auth method for a plain client: %v", m)
		}
	}
}
