package acp

import (
	"slices"
	"testing"

	"spbridge/internal/jsonrpc"
)

// updateKinds lists the sessionUpdate kinds of the session/update messages.
func updateKinds(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		if m["method"] == "session/update" {
			out = append(out, m["params"].(map[string]any)["update"].(map[string]any)["sessionUpdate"].(string))
		}
	}
	return out
}

// TestReattach: session/load and session/resume of a session open on the
// same connection attach to it again, as the protocol's conformance kit
// asks (ACP-LOAD-001/002/003, ACP-RESUME-001/002): a load replays the
// conversation and then tells the commands, all before its answer; a
// resume sends nothing but its answer; both answer the modes and options,
// and the one open session (its CLI) goes on. session/new of the open
// package is still refused.
func TestReattach(t *testing.T) {
	c, be := startControls(t, Config{DefaultBackend: "claude"}, nil)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	waitUpdate(c, "available_commands_update")
	waitUpdate(c, "available_commands_update") // the CLI's own, once it started
	if res, _ := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}}); res["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", res)
	}

	load := map[string]any{"sessionId": sid, "cwd": t.TempDir(), "mcpServers": []any{}}
	res, seen := c.request("session/load", load)
	if res["configOptions"] == nil || res["modes"] == nil {
		t.Errorf("load answered %v", res)
	}
	got := updateKinds(seen)
	if len(got) == 0 || got[0] != "user_message_chunk" || got[len(got)-1] != "available_commands_update" || !slices.Contains(got, "agent_message_chunk") {
		t.Errorf("load sent %v before its answer, want the replay then the commands", got)
	}

	res, seen = c.request("session/resume", map[string]any{"sessionId": sid, "cwd": t.TempDir()})
	if res["configOptions"] == nil {
		t.Errorf("resume answered %v", res)
	}
	// Nothing came after the load's answer, and the resume sent nothing.
	if got := updateKinds(seen); len(got) != 0 {
		t.Errorf("after the load's answer and before the resume's: %v", got)
	}

	if res, _ := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("again")}}); res["stopReason"] != "end_turn" {
		t.Errorf("prompt after the reattach: %v", res)
	}
	if got := be(0).texts(); !slices.Equal(got, []string{"hi", "again"}) {
		t.Errorf("the session's CLI got %q", got)
	}
	if m, _ := c.response(c.call("session/new", newSessionParams(pkg))); errCode(m) != jsonrpc.CodeInvalidRequest {
		t.Errorf("session/new of the open package: %v", m)
	}
}

// TestLoadTellsCommandsFirst: a session/load (here on a new connection)
// tells the commands after the replay and before its answer, so that a
// client reads no update of the load after it.
func TestLoadTellsCommandsFirst(t *testing.T) {
	dir := t.TempDir()
	c, _ := startControls(t, Config{SessionsDir: dir, DefaultBackend: "claude"}, nil)
	res, _ := c.request("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
	sid := res["sessionId"].(string)
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}

	c2, _ := startControls(t, Config{SessionsDir: dir, DefaultBackend: "claude"}, nil)
	_, seen := c2.request("session/load", map[string]any{"sessionId": sid, "cwd": t.TempDir(), "mcpServers": []any{}})
	got := updateKinds(seen)
	if len(got) == 0 || got[0] != "user_message_chunk" || !slices.Contains(got, "available_commands_update") {
		t.Errorf("load sent %v before its answer, want the replay and the commands", got)
	}
	if slices.Index(got, "available_commands_update") < slices.Index(got, "agent_message_chunk") {
		t.Errorf("the commands came before the replay's end: %v", got)
	}
}
