package itemmap

import (
	"reflect"
	"strings"
	"testing"

	"spbridge/internal/archive"
)

// A turn with the tools that show as items of their own type, written as
// Claude Code writes tool calls and results.
const specialStream = `{"type":"system","subtype":"init","session_id":"s1","model":"m1"}
{"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"m1","content":[{"type":"tool_use","id":"toolu_ws","name":"WebSearch","input":{"query":"go flock"}}]},"parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_ws","content":"Web search results for query: \"go flock\""}]},"parent_tool_use_id":null,"tool_use_result":{"query":"go flock","results":[{"tool_use_id":"srvtoolu_1","content":[{"title":"flock(2)","url":"https://man7.org/linux/man-pages/man2/flock.2.html"},{"title":"syscall","url":"https://pkg.go.dev/syscall"}]},"Both pages describe it."],"durationSeconds":1.5}}
{"type":"assistant","message":{"id":"msg_2","role":"assistant","model":"m1","content":[{"type":"tool_use","id":"toolu_q","name":"AskUserQuestion","input":{"questions":[{"question":"Which lock?","header":"Lock","options":[{"label":"flock","description":"whole file"},{"label":"fcntl","description":"ranges"}],"multiSelect":false}]}}]},"parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","content":"User has answered your questions: \"Which lock?\"=\"flock\"."}]},"parent_tool_use_id":null}
{"type":"assistant","message":{"id":"msg_3","role":"assistant","model":"m1","content":[{"type":"tool_use","id":"toolu_p","name":"ExitPlanMode","input":{"plan":"1. Take the lock\n2. Save"}}]},"parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_p","content":"User has approved your plan."}]},"parent_tool_use_id":null}
{"type":"assistant","message":{"id":"msg_4","role":"assistant","model":"m1","content":[{"type":"tool_use","id":"toolu_sub","name":"Task","input":{"description":"look around","prompt":"..."}}]},"parent_tool_use_id":null}
{"type":"assistant","message":{"id":"msg_sub","role":"assistant","model":"m1","content":[{"type":"text","text":"a subagent's words"}]},"parent_tool_use_id":"toolu_sub"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_sub","content":[{"type":"text","text":"found it"}]}]},"parent_tool_use_id":null}
{"type":"control_request","request_id":"r1","request":{"subtype":"hook_callback","callback_id":"x"}}
{"type":"result","subtype":"success","is_error":false,"terminal_reason":"completed","session_id":"s1","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":2,"server_tool_use":{"web_search_requests":1},"cache_creation":{"ephemeral_1h_input_tokens":7}}}
{"type":"result","subtype":"success","is_error":false,"session_id":"s1","total_cost_usd":0.75,"usage":{"input_tokens":1,"output_tokens":1}}
`

func TestClaudeSpecialTools(t *testing.T) {
	m := NewClaude(SequentialIDs())
	p := &panel{}
	var controls []ControlRequest
	var ends []*TurnEnd
	for _, line := range strings.Split(strings.TrimSpace(specialStream), "\n") {
		r := m.Line([]byte(line))
		p.apply(t, r)
		controls = append(controls, r.ControlRequests...)
		if r.End != nil {
			ends = append(ends, r.End)
		}
	}
	byType := map[string]archive.Item{}
	for _, it := range p.items {
		byType[it.Type()] = it
	}
	ws := byType[archive.TypeWebSearch]
	wantResults := []any{
		map[string]any{"title": "flock(2)", "url": "https://man7.org/linux/man-pages/man2/flock.2.html"},
		map[string]any{"title": "syscall", "url": "https://pkg.go.dev/syscall"},
	}
	if ws.String("query") != "go flock" || ws.String("status") != archive.StatusSucceeded || !reflect.DeepEqual(ws.Get("results"), wantResults) {
		t.Errorf("webSearch = %v", ws.Map())
	}
	q := byType[archive.TypeQuestions]
	wantQ := []any{map[string]any{"question": "Which lock?", "options": []any{"flock", "fcntl"}, "answer": "flock"}}
	if !reflect.DeepEqual(q.Get("questions"), wantQ) {
		t.Errorf("questions = %v", q.Map())
	}
	if d := byType[archive.TypeDirections]; d.String("text") != "1. Take the lock\n2. Save" {
		t.Errorf("directions = %v", d.Map())
	}
	task := byType[archive.TypeTool]
	if task.String("name") != "Task" || task.String("summary") != "look around" || task.String("status") != archive.StatusSucceeded {
		t.Errorf("Task tool = %v", task.Map())
	}
	if len(p.items) != 4 {
		t.Errorf("%d items; a subagent's text must not show: %v", len(p.items), p.items)
	}
	if len(controls) != 1 || controls[0].Subtype != "hook_callback" {
		t.Errorf("control requests = %+v", controls)
	}
	if len(ends) != 2 {
		t.Fatalf("%d turn ends", len(ends))
	}
	u := ends[0].Usage
	if u.WebSearchRequests != "1" || u.CacheWrite1h != "7" || ends[0].CostUSD != "0.5" {
		t.Errorf("usage %+v cost %s", u, ends[0].CostUSD)
	}
	// total_cost_usd counts the whole process: the second turn cost 0.25.
	if ends[1].CostUSD != "0.25" {
		t.Errorf("second turn's cost %s, want 0.25", ends[1].CostUSD)
	}
	var calls []string
	for _, msg := range ends[0].History {
		for _, b := range msg.Content {
			calls = append(calls, msg.Role+":"+b.Type()+":"+b.String("name")+b.String("toolName"))
		}
	}
	want := []string{"assistant:toolCall:WebSearch", "tool:toolResult:WebSearch", "assistant:toolCall:AskUserQuestion", "tool:toolResult:AskUserQuestion",
		"assistant:toolCall:ExitPlanMode", "tool:toolResult:ExitPlanMode", "assistant:toolCall:Task", "tool:toolResult:Task"}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("history %q", calls)
	}
}

// TestClaudeInterruptDuringTool is Claude Code stopped by an interrupt while
// a tool ran: the tool is cancelled, not failed, and the turn interrupted.
func TestClaudeInterruptDuringTool(t *testing.T) {
	stream := `{"type":"system","subtype":"init","session_id":"s1","model":"m1"}
{"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"m1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"sleep 30"}}]},"parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[Request interrupted by user for tool use]","is_error":true}]},"parent_tool_use_id":null}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"parent_tool_use_id":null}
{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_tools","session_id":"s1","total_cost_usd":0.01}`
	m := NewClaude(SequentialIDs())
	p := &panel{}
	var end *TurnEnd
	for _, line := range strings.Split(stream, "\n") {
		r := m.Line([]byte(line))
		p.apply(t, r)
		if r.End != nil {
			end = r.End
		}
	}
	if end == nil || end.Status != TurnInterrupted {
		t.Fatalf("end %+v", end)
	}
	if got := p.items[0]; got.String("status") != archive.StatusCancelled || got.String("statusText") != "cancelled" {
		t.Errorf("tool %v", got.Map())
	}
	if last := p.items[len(p.items)-1]; last.String("text") != "Interrupted." {
		t.Errorf("last item %v", last.Map())
	}
}

// TestClaudeStreamedToolInput: with partial messages a tool's input streams
// as input_json_delta; the history keeps the exact bytes the model produced.
func TestClaudeStreamedToolInput(t *testing.T) {
	stream := `{"type":"system","subtype":"init","session_id":"s1","model":"m1"}
{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":7,"output_tokens":1}}}}
{"type":"stream_event","api_message_id":"msg_1","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}}
{"type":"stream_event","api_message_id":"msg_1","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ec"}}}
{"type":"stream_event","api_message_id":"msg_1","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ho hi\"}"}}}
{"type":"assistant","message":{"id":"msg_1","role":"assistant","model":"m1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"echo hi"}}]},"parent_tool_use_id":null}
{"type":"stream_event","api_message_id":"msg_1","event":{"type":"content_block_stop","index":0}}
{"type":"stream_event","api_message_id":"msg_1","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi","is_error":false}]},"parent_tool_use_id":null,"tool_use_result":{"stdout":"hi","stderr":"","interrupted":false}}
{"type":"result","subtype":"success","is_error":false,"session_id":"s1","total_cost_usd":0.01}`
	m := NewClaude(SequentialIDs())
	p := &panel{}
	var end *TurnEnd
	for _, line := range strings.Split(stream, "\n") {
		r := m.Line([]byte(line))
		p.apply(t, r)
		if r.End != nil {
			end = r.End
		}
	}
	if len(p.items) != 1 || p.items[0].String("summary") != "echo hi" || p.items[0].String("status") != archive.StatusSucceeded {
		t.Fatalf("items %v", p.items)
	}
	call := end.History[0].Content[0]
	if call.Type() != archive.BlockToolCall || call.String("arguments") != `{"command": "echo hi"}` {
		t.Errorf("toolCall %v, want the streamed bytes", call.Map())
	}
	if end.LastRound.Input != "7" || end.LastRound.Output != "12" {
		t.Errorf("last round %+v", end.LastRound)
	}
}
