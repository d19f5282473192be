package itemmap

import (
	"bytes"
	"os"
	"testing"
)

// fastLines are lines near the shapes the fast path takes, and some it
// must leave to the general way.
var fastLines = `{"type":"system","subtype":"init","session_id":"s","model":"m"}
{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{}}},"session_id":"s","parent_tool_use_id":null}
{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm\n\u00e9"}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"system","subtype":"thinking_tokens","estimated_tokens":3,"estimated_tokens_delta":3,"session_id":"s","uuid":"u"}
{"type":"system","subtype":"thinking_tokens","estimated_tokens":3,"parent_tool_use_id":"toolu_1","uuid":"u"}
{"type":"system","subtype":"thinking_tokens","estimated_tokens":{"a":1}}
{"type":"system","subtype":"thinking_tokens","estimated_tokens":3 }
{"type":"system","subtype":"thinking_tokens","subtype":"init","session_id":"t"}
{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello \"x\""}},"session_id":"s","parent_tool_use_id":null,"uuid":"u","api_message_id":"msg_1"}
{"type":"stream_event","event":{"delta":{"text":" sorted","type":"text_delta"},"index":1,"type":"content_block_delta"},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" twice"}},"api_message_id":"msg_1","api_message_id":"msg_2"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" other"}},"api_message_id":"msg_2"}
{"type":"stream_event","event":{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"bad"}},"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}},"api_message_id":"msg_1","parent_tool_use_id":"toolu_9"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"y"}},"parent_tool_use_id":null,"parent_tool_use_id":"toolu_9","api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"z"}},"api_message_id":"msg_1","type":"user","event":1}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"e"}},"api_\u006dessage_id":"msg_9","api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"n"}},"api_message_id":5}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"bad` + "\x01" + `"}},"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"w"}},"api_message_id":"msg_1"} 
{"type":"stream_event","event":{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\":"}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"stream_event","event":{"delta":{"partial_json":"\"ls\"}","type":"input_json_delta"},"index":2,"type":"content_block_delta"},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"stream_event","event":{"type":"content_block_stop","index":2},"session_id":"s","parent_tool_use_id":null,"api_message_id":"msg_1"}
{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"s"}
{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"after"}},"api_message_id":"msg_1"}`

// checkFastPath maps stream with the fast ways (the fast path, the tool
// results read ahead) and without them: every line must give the same
// result, and the mappers end the same.
func checkFastPath(t *testing.T, stream []byte) {
	t.Helper()
	fast, general := NewClaude(SequentialIDs()), NewClaude(SequentialIDs())
	general.noFast = true
	for i, line := range bytes.Split(stream, []byte("\n")) {
		got, want := dumpResult(t, fast.Line(line)), dumpResult(t, general.Line(line))
		if got != want {
			t.Fatalf("line %d %q: the fast path gives\n%s\nthe general way\n%s", i+1, line, got, want)
		}
	}
	if got, want := dumpResult(t, fast.Finish(false, "end", "")), dumpResult(t, general.Finish(false, "end", "")); got != want {
		t.Fatalf("finish: the fast path gives\n%s\nthe general way\n%s", got, want)
	}
}

// TestClaudeFastPath checks that the lines the fast path takes map as the
// general way maps them, on the recorded streams and on lines near the
// shapes it takes.
func TestClaudeFastPath(t *testing.T) {
	checkFastPath(t, []byte(fastLines))
	for _, f := range claudeStreams(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkFastPath(t, data)
	}
	// The fast path must have taken the deltas of fastLines.
	taken := 0
	for _, line := range bytes.Split([]byte(fastLines), []byte("\n")) {
		if _, ok := readFast(line); ok {
			taken++
		}
	}
	if taken < 8 {
		t.Fatalf("the fast path took %d lines of fastLines, want at least 8", taken)
	}
}

// FuzzClaudeFastPath checks on any stream that the fast path (and the
// tool results read ahead) map what they take as the general way does.
func FuzzClaudeFastPath(f *testing.F) {
	for _, seed := range streamSeeds([]byte(fastLines), claudeStart) {
		f.Add(seed)
	}
	for _, line := range bytes.Split([]byte(fastLines), []byte("\n")) {
		f.Add(line)
	}
	for _, file := range claudeStreams(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			for _, seed := range streamSeeds(data, claudeStart) {
				f.Add(seed)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastPath(t, data) })
}

// BenchmarkReadFast reads a text_delta line as the fast path does.
func BenchmarkReadFast(b *testing.B) {
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" parse I'll \"quoted\" -\u003e now"}},"session_id":"1f7b169c-846f-418a-a552-fa82fbf86758","parent_tool_use_id":null,"uuid":"d838ddd4-2f59-4f58-ab1b-9ff1f6f40b7a","api_message_id":"msg_mock_492f2b8a67697c4f"}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, ok := readFast(line); !ok {
			b.Fatal("not taken")
		}
	}
}
