package main

import (
	"bufio"
	"encoding/json"
	"os"
)

const fakeAskEnv = "SPBRIDGE_FAKE_ASKING_CLAUDE"

// fakeAskingClaude plays claude in stream-json mode for one message: it
// asks permission for a Bash command and reports the answer.
func fakeAskingClaude() int {
	emit := func(v any) { data, _ := json.Marshal(v); os.Stdout.Write(append(data, '\n')) }
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var m map[string]any
		if json.Unmarshal(in.Bytes(), &m) != nil || m["type"] != "user" {
			continue
		}
		cwd, _ := os.Getwd()
		emit(map[string]any{"type": "system", "subtype": "init", "session_id": "ask-1", "model": "fake", "cwd": cwd})
		emit(map[string]any{"type": "assistant", "message": map[string]any{"id": "m1", "role": "assistant", "model": "fake", "content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "rm -rf build"}}}}})
		emit(map[string]any{"type": "control_request", "request_id": "perm-1", "request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash",
			"tool_use_id": "toolu_1", "input": map[string]any{"command": "rm -rf build"}}})
		behavior := ""
		for in.Scan() {
			var c map[string]any
			if json.Unmarshal(in.Bytes(), &c) == nil && c["type"] == "control_response" {
				resp := c["response"].(map[string]any)
				if resp["request_id"] == "perm-1" {
					behavior = resp["response"].(map[string]any)["behavior"].(string)
					break
				}
			}
		}
		res := map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "removed", "is_error": false}
		if behavior != "allow" {
			res = map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "denied", "is_error": true}
		}
		emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{res}}})
		emit(map[string]any{"type": "assistant", "message": map[string]any{"id": "m2", "role": "assistant", "model": "fake", "content": []any{
			map[string]any{"type": "text", "text": "answer was " + behavior}}}})
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": "ask-1", "total_cost_usd": 0.001})
		return 0
	}
	return 0
}
