package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
	"spbridge/internal/restore"
	"spbridge/internal/supervise"
)

const fakeEnv = "SPBRIDGE_FAKE_CLAUDE"

func TestMain(m *testing.M) {
	supervise.Main() // the CLIs the tests start run under this binary as supervisor
	if mode := os.Getenv(fakeEnv); mode != "" {
		fakeClaude(mode)
		os.Exit(0)
	}
	if os.Getenv(fakeapi.MCPServerEnv) != "" {
		fakeapi.FakeMCPServer(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// fakeClaude impersonates `claude -p --input-format stream-json …`: it reads
// stream-json lines on stdin and answers each user message as mode says.
func fakeClaude(mode string) {
	if path, ok := strings.CutPrefix(mode, "replay:"); ok {
		replayClaude(path)
		return
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	emit := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		data, _ := json.Marshal(v)
		out.Write(append(data, '\n'))
		out.Flush()
	}
	session := "fake-session-1"
	if i := slices.Index(os.Args, "--resume"); i >= 0 {
		session = os.Args[i+1]
	}
	if mode == "ignore-signals" {
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	}
	if mode == "exit-after-turn" && slices.Contains(os.Args, "--resume") {
		mode = "dies-unread" // the restart fails
	}
	if mode == "refuse-resume" && slices.Contains(os.Args, "--resume") {
		// As claude 2.1.328 does for a session it does not have
		// (resume_unknown_id): one result, and exit, reading nothing.
		emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "num_turns": 0,
			"session_id": session, "errors": []any{"No conversation found with session ID: " + session}})
		os.Exit(1)
	}
	if mode == "dies-unread" {
		// Says why on stderr and exits without reading a byte.
		fmt.Fprintln(os.Stderr, "fake claude: cannot start: bad configuration")
		fmt.Fprintln(os.Stderr, "ANTHROPIC_API_KEY=sk-ant-api03-secretsecretsecret")
		os.Exit(2)
	}
	if mode == "deaf" {
		// Never reads stdin, never prints. (A bare select{} would be
		// reported as a deadlock by the runtime, ending the process.)
		for {
			time.Sleep(time.Hour)
		}
	}
	mcpPath, mcpData := fakeReadMCPConfig()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	lines := make(chan map[string]any)
	go func() {
		for in.Scan() {
			var v map[string]any
			if json.Unmarshal(in.Bytes(), &v) == nil {
				lines <- v
			}
		}
		close(lines)
	}()
	turn := 0
	bgBehavior := ""   // how the permission request between turns ("ask-between") was answered
	var names []string // the titles rename_session gave, in order
	for v := range lines {
		switch v["type"] {
		case "control_request":
			req := v["request"].(map[string]any)
			if req["subtype"] == "rename_session" {
				names = append(names, fmt.Sprint(req["title"], " (", req["source"], ")"))
			}
			if (mode == "ask-at-init" && req["subtype"] == "initialize") || (mode == "ask-at-mode" && req["subtype"] == "set_permission_mode") {
				// A background subagent's permission request comes before
				// the answer, which waits for it: one left unanswered
				// leaves the caller waiting too.
				emit(map[string]any{"type": "control_request", "request_id": "perm-between", "request": map[string]any{
					"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": "toolu_bg", "input": map[string]any{"command": "touch x"}}})
				behavior := "unanswered"
				for c := range lines {
					resp, _ := c["response"].(map[string]any)
					if c["type"] == "control_response" && resp["request_id"] == "perm-between" {
						behavior = resp["response"].(map[string]any)["behavior"].(string)
						break
					}
				}
				if req["subtype"] == "set_permission_mode" {
					emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": v["request_id"], "error": "answered " + behavior}})
				} else {
					emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": v["request_id"],
						"response": map[string]any{"commands": []any{map[string]any{"name": "answered-" + behavior}}}}})
				}
				continue
			}
			emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": v["request_id"], "response": map[string]any{}}})
			continue
		case "control_response":
			if resp, _ := v["response"].(map[string]any); resp["request_id"] == "perm-bg" {
				bgBehavior = resp["response"].(map[string]any)["behavior"].(string)
			}
			continue
		case "user":
		default:
			continue
		}
		turn++
		text := userText(v)
		switch mode {
		case "silent": // reads every message, prints nothing
			continue
		case "leak": // echoes the message and a key on stderr, then dies
			fmt.Fprintf(os.Stderr, "debug: got %q\nANTHROPIC_API_KEY=sk-ant-api03-secretsecretsecret\nAuthorization: Bearer abcdefghijklmnop\n", text)
			os.Exit(3)
		}
		emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": "fake-model"})
		msgID := fmt.Sprintf("msg_%d", turn)
		switch {
		case mode == "compact-crash" && !slices.Contains(os.Args, "--resume"):
			// Dies while it compacts.
			emit(map[string]any{"type": "system", "subtype": "status", "status": "compacting", "session_id": session})
			os.Exit(3)
		case mode == "crash" && !slices.Contains(os.Args, "--resume"):
			fmt.Fprintln(os.Stderr, "fake claude: something broke")
			streamStart(emit, msgID)
			emit(delta(msgID, 0, "partial"))
			os.Exit(3)
		case mode == "hang":
			streamStart(emit, msgID)
			select {}
		case mode == "slow" || mode == "ignore-signals":
			streamStart(emit, msgID)
			said := ""
			tick := time.NewTicker(20 * time.Millisecond)
		wait:
			for n := 1; ; n++ {
				select {
				case <-tick.C:
					s := fmt.Sprintf("%d ", n)
					said += s
					emit(delta(msgID, 0, s))
				case c, ok := <-lines:
					if !ok {
						os.Exit(0)
					}
					req, _ := c["request"].(map[string]any)
					if c["type"] == "control_request" && req["subtype"] == "interrupt" && mode == "slow" {
						emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": c["request_id"]}})
						break wait
					}
				}
			}
			tick.Stop()
			emit(map[string]any{"type": "assistant", "aborted": true, "message": map[string]any{"id": msgID, "model": "fake-model", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": said}}}})
			emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user]"}}}})
			emit(map[string]any{"type": "stream_event", "api_message_id": msgID, "event": map[string]any{"type": "message_stop"}, "abandoned_blocks": map[string]any{"api_message_id": msgID, "from_block_index": 1}})
			emit(result(session, "error_during_execution", true, "aborted_streaming", ""))
		case mode == "approval":
			emit(map[string]any{"type": "assistant", "message": map[string]any{"id": msgID, "model": "fake-model", "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "rm -rf x"}}}}})
			emit(map[string]any{"type": "control_request", "request_id": "perm-1", "request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": "toolu_1", "input": map[string]any{"command": "rm -rf x"}}})
			var behavior string
			for c := range lines {
				if c["type"] == "control_response" {
					resp := c["response"].(map[string]any)
					if resp["request_id"] == "perm-1" {
						behavior = resp["response"].(map[string]any)["behavior"].(string)
						break
					}
				}
			}
			res := map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done", "is_error": false}
			if behavior != "allow" {
				res = map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "denied by host", "is_error": true}
			}
			emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{res}}})
			emit(assistantText(msgID+"b", "after "+behavior))
			emit(result(session, "success", false, "completed", "after "+behavior))
		case mode == "latency":
			// Deltas that carry the time they were written, 200 µs apart.
			streamStart(emit, msgID)
			for i := 0; i < 1000; i++ {
				emit(delta(msgID, 0, fmt.Sprintf("%d ", time.Now().UnixNano())))
				time.Sleep(200 * time.Microsecond)
			}
			emit(result(session, "success", false, "completed", ""))
		case mode == "oversize":
			fmt.Println(`{"type":"assistant","padding":"` + strings.Repeat("x", 4096) + `"}`)
			emit(assistantText(msgID, "still here"))
			emit(result(session, "success", false, "completed", "still here"))
		case mode == "background" && turn == 1:
			// A subagent in the background, as Claude Code 2.1.328 runs one:
			// the Agent call returns at once and the turn ends; the child's
			// lines follow the result, then claude runs a turn of its own
			// (origin task-notification) to pass on the report.
			child := map[string]any{"parent_tool_use_id": "toolu_agent_1"}
			line := func(v map[string]any, extra map[string]any) map[string]any {
				for k, x := range extra {
					v[k] = x
				}
				return v
			}
			emit(map[string]any{"type": "assistant", "message": map[string]any{"id": msgID, "model": "fake-model", "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_agent_1", "name": "Agent", "input": map[string]any{"description": "Look", "prompt": "look at readme.txt"}}}}})
			emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_agent_1", "content": []any{map[string]any{"type": "text", "text": "Async agent launched successfully."}}}}}})
			emit(line(map[string]any{"type": "assistant", "message": map[string]any{"id": "msg_sub", "model": "fake-model", "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_sub_read", "name": "Read", "input": map[string]any{"file_path": "/w/readme.txt"}}}}}, child))
			emit(assistantText(msgID+"b", "launched"))
			emit(result(session, "success", false, "completed", "launched"))
			emit(line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_sub_read", "content": "one two three four"}}}}, child))
			emit(line(map[string]any{"type": "assistant", "message": map[string]any{"id": "msg_sub2", "model": "fake-model", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "4 words"}}}}, child))
			emit(map[string]any{"type": "system", "subtype": "task_notification", "tool_use_id": "toolu_agent_1", "status": "completed", "summary": "4 words"})
			emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": "fake-model"})
			emit(assistantText("msg_report", "the subagent counted 4 words"))
			emit(line(result(session, "success", false, "completed", "the subagent counted 4 words"),
				map[string]any{"origin": map[string]any{"kind": "task-notification", "producer": "session-task"}}))
		case mode == "garbage":
			fmt.Println("this is not JSON")
			fmt.Println(`{"broken":`)
			emit(assistantText(msgID, "fine"))
			emit(result(session, "success", false, "completed", "fine"))
		default: // echo (and "background" after its first turn)
			streamStart(emit, msgID)
			reply := "echo: " + text
			if mode == "ask-between" && turn == 2 {
				// The answer to the request asked between turns comes
				// before this turn's reply.
				for bgBehavior == "" {
					c, ok := <-lines
					if !ok {
						os.Exit(0)
					}
					if resp, _ := c["response"].(map[string]any); c["type"] == "control_response" && resp["request_id"] == "perm-bg" {
						bgBehavior = resp["response"].(map[string]any)["behavior"].(string)
					}
				}
				reply += " (between turns: " + bgBehavior + ")"
			}
			if mode == "resume-check" {
				reply = fmt.Sprintf("turn %d args %s", turn, strings.Join(os.Args[1:], " "))
			}
			if mode == "named" {
				reply = fmt.Sprintf("turn %d named %q resumed %v", turn, names, slices.Contains(os.Args, "--resume"))
			}
			if mode == "mcp-config" {
				reply = fmt.Sprintf("turn %d read %s: %s", turn, mcpPath, mcpData)
			}
			for i := 0; i < len(reply); i += 5 {
				emit(delta(msgID, 0, reply[i:min(i+5, len(reply))]))
			}
			emit(assistantText(msgID, reply))
			emit(map[string]any{"type": "stream_event", "api_message_id": msgID, "event": map[string]any{"type": "content_block_stop", "index": 0}})
			if mode == "background-task" {
				// A subagent runs past the first turn's result; the
				// second says it is over.
				tasks := []any{}
				if turn == 1 {
					tasks = append(tasks, map[string]any{"task_id": "t1", "task_type": "local_agent"})
				}
				emit(map[string]any{"type": "system", "subtype": "background_tasks_changed", "tasks": tasks, "session_id": session})
			}
			emit(result(session, "success", false, "completed", reply))
			if mode == "ask-between" && turn == 1 {
				// A background subagent asks after the turn's result.
				emit(map[string]any{"type": "control_request", "request_id": "perm-bg", "request": map[string]any{
					"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": "toolu_bg", "input": map[string]any{"command": "touch y"}}})
			}
			if mode == "exit-after-turn" {
				os.Exit(0)
			}
		}
	}
}

func userText(v map[string]any) string {
	msg := v["message"].(map[string]any)
	var parts []string
	for _, c := range msg["content"].([]any) {
		b := c.(map[string]any)
		switch b["type"] {
		case "text":
			parts = append(parts, b["text"].(string))
		case "image":
			src := b["source"].(map[string]any)
			parts = append(parts, fmt.Sprintf("[%s %d base64 bytes]", src["media_type"], len(src["data"].(string))))
		}
	}
	return strings.Join(parts, " ")
}

func streamStart(emit func(any), msgID string) {
	emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}}})
	emit(map[string]any{"type": "stream_event", "api_message_id": msgID, "event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}})
}

func delta(msgID string, index int, s string) map[string]any {
	return map[string]any{"type": "stream_event", "api_message_id": msgID, "event": map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": s}}}
}

func assistantText(msgID, text string) map[string]any {
	return map[string]any{"type": "assistant", "message": map[string]any{"id": msgID, "model": "fake-model", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}}
}

func result(session, subtype string, isErr bool, reason, text string) map[string]any {
	return map[string]any{"type": "result", "subtype": subtype, "is_error": isErr, "terminal_reason": reason, "result": text, "session_id": session,
		"total_cost_usd": 0.001, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}
}

// recorder is a Host that keeps the items and answers approvals.
type recorder struct {
	mu     sync.Mutex
	items  []archive.Item
	allow  bool
	asked  []itemmap.Approval
	onItem func(archive.Item)
}

func (r *recorder) Change(c itemmap.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch c.Op {
	case itemmap.OpAdd:
		r.items = append(r.items, c.Item)
	case itemmap.OpRemove:
		r.items = slices.DeleteFunc(r.items, func(it archive.Item) bool { return it.ID() == c.Item.ID() })
	}
	if r.onItem != nil {
		r.onItem(c.Item)
	}
}

func (r *recorder) Approve(ctx context.Context, a itemmap.Approval) backend.Decision {
	r.mu.Lock()
	r.asked = append(r.asked, a)
	r.mu.Unlock()
	return backend.Decision{Allow: r.allow}
}

func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, it := range r.items {
		s := it.Type() + ": " + it.String("text")
		if it.Type() == archive.TypeTool {
			s = it.Type() + ": " + it.String("status")
		}
		out = append(out, s)
	}
	return out
}

func fakeBackend(t *testing.T, mode string, opts Options) *Backend {
	return fakeBackendTB(t, mode, opts)
}

func fakeBackendTB(t testing.TB, mode string, opts Options) *Backend {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.Program = exe
	opts.Env = append(os.Environ(), fakeEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	if opts.Grace == 0 {
		opts.Grace = 200 * time.Millisecond
	}
	opts.NewID = itemmap.SequentialIDs()
	b := New(opts)
	t.Cleanup(func() { b.Close() })
	return b
}

func TestTurnsShareOneProcess(t *testing.T) {
	b := fakeBackend(t, "echo", Options{})
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "hello"}, rec)
	if end.Status != itemmap.TurnCompleted || end.SessionID != "fake-session-1" || end.CostUSD == "" {
		t.Fatalf("turn 1 = %+v", end)
	}
	pid := b.Proc().Pid()
	img := backend.Image{MimeType: "image/png", Data: []byte("\x89PNG fake")}
	end = b.Turn(context.Background(), backend.Message{Text: "again", Images: []backend.Image{img}}, rec)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 2 = %+v", end)
	}
	if b.Proc().Pid() != pid {
		t.Error("the second turn started a new process")
	}
	want := []string{"assistant: echo: hello", "assistant: echo: again [image/png 12 base64 bytes]"}
	if got := rec.texts(); !slices.Equal(got, want) {
		t.Errorf("items = %q, want %q", got, want)
	}
	if len(end.History) != 1 || end.History[0].Content[0].String("text") != want[1][len("assistant: "):] {
		t.Errorf("history = %+v", end.History)
	}
}

func TestApprovals(t *testing.T) {
	for _, allow := range []bool{true, false} {
		b := fakeBackend(t, "approval", Options{})
		rec := &recorder{allow: allow}
		end := b.Turn(context.Background(), backend.Message{Text: "delete"}, rec)
		if end.Status != itemmap.TurnCompleted || len(rec.asked) != 1 || rec.asked[0].ToolName != "Bash" {
			t.Fatalf("allow=%v: end %+v, asked %+v", allow, end, rec.asked)
		}
		texts := rec.texts()
		wantTool, wantReply := "tool: succeeded", "assistant: after allow"
		if !allow {
			wantTool, wantReply = "tool: denied", "assistant: after deny"
		}
		if !slices.Contains(texts, wantTool) || !slices.Contains(texts, wantReply) || !slices.Contains(texts, "toolApproval: ") {
			t.Errorf("allow=%v: items %q", allow, texts)
		}
	}
}

func TestInterruptKeepsProcess(t *testing.T) {
	b := fakeBackend(t, "slow", Options{})
	rec := &recorder{}
	var once sync.Once
	rec.onItem = func(it archive.Item) {
		if strings.Count(it.String("text"), " ") >= 3 {
			once.Do(func() { go b.Interrupt() })
		}
	}
	// The fake counts until the control request asks it to stop: a turn
	// that ignored the interrupt would never end.
	end := b.Turn(context.Background(), backend.Message{Text: "count"}, rec)
	if end.Status != itemmap.TurnInterrupted {
		t.Fatalf("status %s, want interrupted", end.Status)
	}
	texts := rec.texts()
	if len(texts) < 2 || !strings.HasPrefix(texts[0], "assistant: 1 2 3") || texts[len(texts)-1] != "notice: Interrupted." {
		t.Errorf("items %q", texts)
	}
	pid := b.Proc().Pid()
	// The process lives on and takes the next message.
	rec2 := &recorder{}
	var once2 sync.Once
	rec2.onItem = func(archive.Item) { once2.Do(func() { go b.Interrupt() }) }
	if end := b.Turn(context.Background(), backend.Message{Text: "again"}, rec2); end.Status != itemmap.TurnInterrupted || b.Proc().Pid() != pid {
		t.Errorf("second turn: %s, same process %v", end.Status, b.Proc().Pid() == pid)
	}
}

func TestInterruptEscalates(t *testing.T) {
	b := fakeBackend(t, "ignore-signals", Options{Grace: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	rec := &recorder{}
	rec.onItem = func(archive.Item) { cancel() }
	// The fake ignores the control request and SIGINT: only the escalation
	// (SIGTERM, SIGKILL after Grace each) ends the turn.
	end := b.Turn(ctx, backend.Message{Text: "count"}, rec)
	if end.Status != itemmap.TurnInterrupted {
		t.Fatalf("status %s, want interrupted", end.Status)
	}
	if b.Proc() != nil {
		t.Error("the killed process is still held")
	}
}

func TestCrashThenResume(t *testing.T) {
	b := fakeBackend(t, "crash", Options{})
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "one"}, rec)
	if end.Status != itemmap.TurnFailed {
		t.Fatalf("status %s, want failed", end.Status)
	}
	texts := rec.texts()
	last := rec.items[len(rec.items)-1]
	if !strings.Contains(last.String("text"), "exit status 3") || !strings.Contains(last.String("detail"), "something broke") {
		t.Errorf("failure item %v", last.Map())
	}
	if !slices.Contains(texts, "assistant: partial") {
		t.Errorf("the partial reply was lost: %q", texts)
	}
	end = b.Turn(context.Background(), backend.Message{Text: "two"}, rec)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("after the crash: %s", end.Status)
	}
	if got := rec.texts(); got[len(got)-1] != "assistant: echo: two" {
		t.Errorf("items %q", got)
	}
	if !slices.Contains(b.args(), "--resume") {
		t.Errorf("the restarted process did not resume: %q", b.args())
	}
}

func TestIdleTimeout(t *testing.T) {
	b := fakeBackend(t, "hang", Options{IdleTimeout: 300 * time.Millisecond})
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "x"}, rec)
	if end.Status != itemmap.TurnFailed {
		t.Fatalf("status %s", end.Status)
	}
	if got := rec.texts(); !strings.Contains(got[len(got)-1], "printed nothing for 300ms") {
		t.Errorf("items %q", got)
	}
}

func TestGarbageSkipped(t *testing.T) {
	b := fakeBackend(t, "garbage", Options{})
	rec := &recorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "x"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("status %s", end.Status)
	}
	if n := b.SkippedLines(); n != 2 {
		t.Errorf("SkippedLines = %d, want 2", n)
	}
	want := []string{"notice: Skipped a line of 10 bytes from Claude Code that is not valid JSON.", "assistant: fine"}
	if got := rec.texts(); !slices.Equal(got, want) {
		t.Errorf("items %q", got)
	}
}

func TestMissingProgram(t *testing.T) {
	b := New(Options{Program: filepath.Join(t.TempDir(), "no-claude")})
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "x"}, rec)
	if end.Status != itemmap.TurnFailed || len(rec.items) != 1 || rec.items[0].String("text") != NotFoundText {
		t.Errorf("end %+v, items %q", end, rec.texts())
	}
	if b.Started() {
		t.Error("a session counts as started")
	}
}

func TestOversizeLineSkipped(t *testing.T) {
	b := fakeBackend(t, "oversize", Options{MaxLine: 1024})
	rec := &recorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "x"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("status %s", end.Status)
	}
	got := rec.texts()
	if len(got) != 2 || !strings.HasPrefix(got[0], "notice: Skipped a line of 4129 bytes") || got[1] != "assistant: still here" {
		t.Errorf("items %q", got)
	}
}

// TestBackgroundSubagentBetweenTurns: with no host watching between turns
// (Watch), what a background subagent and the turn claude runs for its
// report print after a turn's result is kept for the next turn, shown
// there, and neither ends that turn nor takes its place. (With a host, see
// TestBetweenTurnsDelivered.)
func TestBackgroundSubagentBetweenTurns(t *testing.T) {
	b := fakeBackend(t, "background", Options{})
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "have a subagent look"}, rec)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 1 = %+v", end)
	}
	if got, want := rec.texts(), []string{"tool: succeeded", "assistant: launched"}; !slices.Equal(got, want) {
		t.Errorf("turn 1 items = %q, want %q", got, want)
	}
	rec2 := &recorder{}
	end = b.Turn(context.Background(), backend.Message{Text: "again"}, rec2)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 2 = %+v", end)
	}
	want := []string{"tool: succeeded", "assistant: the subagent counted 4 words", "assistant: echo: again"}
	if got := rec2.texts(); !slices.Equal(got, want) {
		t.Errorf("turn 2 items = %q, want %q", got, want)
	}
	var said []string
	for _, m := range end.History {
		for _, c := range m.Content {
			if c.Type() == archive.BlockText {
				said = append(said, c.String("text"))
			}
		}
	}
	if !slices.Contains(said, "echo: again") {
		t.Errorf("turn 2 history = %q, want the reply to \"again\"", said)
	}
}

// TestUserMessageContext: the line claude reads carries the message's
// Context (the conversation so far, after a reopen), then the user's words,
// as one text block, then its images.
func TestUserMessageContext(t *testing.T) {
	ctx := restore.Heading + "User: hi\n\nAssistant: hello\n\n"
	m := userMessage(backend.Message{Context: ctx, Text: "next", Images: []backend.Image{{MimeType: "image/png", Data: []byte("png")}}})
	content := m["message"].(map[string]any)["content"].([]any)
	if len(content) != 2 || content[0].(map[string]any)["text"] != ctx+"next" || content[1].(map[string]any)["type"] != "image" {
		t.Errorf("content = %v", content)
	}
}

// TestNameSession: a new session is given the conversation's title once,
// on stdin before the first message (rename_session), also when the
// process began before the title was known (Prepare); a session claude
// resumes is not renamed, nor is one when there is no title.
func TestNameSession(t *testing.T) {
	turn := func(b *Backend, text string) string {
		t.Helper()
		rec := &recorder{}
		if end := b.Turn(context.Background(), backend.Message{Text: text}, rec); end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %q: %+v %q", text, end, rec.texts())
		}
		got := rec.texts()
		return got[len(got)-1]
	}
	b := fakeBackend(t, "named", Options{})
	b.SetTitle("Zebra talk")
	if got, want := turn(b, "one"), `assistant: turn 1 named ["Zebra talk (host)"] resumed false`; got != want {
		t.Errorf("first turn: %q, want %q", got, want)
	}
	b.SetTitle("Another title") // the session has its name
	if got, want := turn(b, "two"), `assistant: turn 2 named ["Zebra talk (host)"] resumed false`; got != want {
		t.Errorf("second turn: %q, want %q", got, want)
	}
	if slices.Contains(b.args(), "--name") {
		t.Errorf("the title is on the command line: %q", b.args())
	}

	early := fakeBackend(t, "named", Options{})
	if err := early.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	early.SetTitle("Known at the first turn")
	if got, want := turn(early, "one"), `assistant: turn 1 named ["Known at the first turn (host)"] resumed false`; got != want {
		t.Errorf("after Prepare: %q, want %q", got, want)
	}

	resumed := fakeBackend(t, "named", Options{Resume: "the-users-session"})
	resumed.SetTitle("Zebra talk")
	if got, want := turn(resumed, "one"), `assistant: turn 1 named [] resumed true`; got != want {
		t.Errorf("resumed: %q, want %q", got, want)
	}
	untitled := fakeBackend(t, "named", Options{})
	if got, want := turn(untitled, "one"), `assistant: turn 1 named [] resumed false`; got != want {
		t.Errorf("no title: %q, want %q", got, want)
	}
}
