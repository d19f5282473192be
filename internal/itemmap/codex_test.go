package itemmap

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"spbridge/internal/archive"
)

// runCodex feeds a stream through a Codex mapper, reading it from r in
// whatever pieces r returns, as a supervisor does. A stream that ends inside
// a turn is finished as interrupted when interrupted is set (the recording
// sent SIGINT), else as failed. log, when not nil, is codex's log of the
// exec thread, which the mapper reads whole (ExecLog) before the stream: as
// when codex logs each step before codex exec prints anything of it.
func runCodex(t *testing.T, r io.Reader, interrupted bool, log []byte) *panel {
	t.Helper()
	m := NewCodex(SequentialIDs())
	p := &panel{}
	for l := range bytes.SplitSeq(log, []byte("\n")) {
		p.apply(t, m.ExecLog(l))
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			p.apply(t, m.Line(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.InTurn() {
		p.apply(t, m.Finish(interrupted, "Codex stopped before the turn ended.", ""))
	}
	return p
}

// codexStreams lists the recorded codex streams: the shared fixtures (copied
// into testdata/codex) and the project's own recordings in
// testdata/codex/exec at the top of the module, when there are any.
func codexStreams(t testing.TB) []string {
	shared, _ := filepath.Glob("testdata/codex/*.stdout.jsonl")
	if len(shared) == 0 {
		t.Fatalf("found no shared codex streams")
	}
	own, _ := filepath.Glob("../../testdata/codex/exec/*.stdout.jsonl")
	return append(shared, own...)
}

// codexGoldenPath names the golden file of a recorded stream: the shared
// fixtures' beside them, the project's own under testdata/codex/exec.
func codexGoldenPath(stream string) string {
	name := strings.TrimSuffix(filepath.Base(stream), ".stdout.jsonl") + ".golden.json"
	if filepath.Dir(stream) == filepath.Join("testdata", "codex") {
		return filepath.Join("testdata", "codex", name)
	}
	return filepath.Join("testdata", "codex", "exec", name)
}

// sentSIGINT reports whether a recording's stdin notes say the recorder
// interrupted the CLI.
func sentSIGINT(stdinPath string) bool {
	data, err := os.ReadFile(stdinPath)
	return err == nil && bytes.Contains(data, []byte("sent SIGINT"))
}

func TestCodexGolden(t *testing.T) {
	for _, f := range codexStreams(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout.jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			interrupted := sentSIGINT(strings.TrimSuffix(f, ".stdout.jsonl") + ".stdin.jsonl")
			// The thread's log, when the recording kept it.
			log, _ := os.ReadFile(strings.TrimSuffix(f, ".stdout.jsonl") + ".rollout.jsonl")
			whole := runCodex(t, bytes.NewReader(data), interrupted, log).golden()
			byLine := runCodex(t, &lineReader{data}, interrupted, log).golden()
			byTwo := runCodex(t, &chunkReader{data, 2}, interrupted, log).golden()
			if !bytes.Equal(whole, byLine) || !bytes.Equal(whole, byTwo) {
				t.Fatalf("results differ by how the stream is read")
			}
			golden := codexGoldenPath(f)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, whole, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(whole, want) {
				t.Errorf("items differ from %s; got:\n%s", golden, whole)
			}
		})
	}
}

// feedCodex maps the lines of stream (blank lines left out) and returns the
// panel and the turns that ended.
func feedCodex(t *testing.T, m *Codex, stream string) (*panel, []*TurnEnd) {
	t.Helper()
	p := &panel{}
	var ends []*TurnEnd
	for _, line := range strings.Split(stream, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		r := m.Line([]byte(line))
		checkResult(t, r)
		p.apply(t, r)
		if r.End != nil {
			ends = append(ends, r.End)
		}
	}
	return p, ends
}

// kinds lists the panel's items as "type:text" (or "type:name:status").
func kinds(items []archive.Item) []string {
	var out []string
	for _, it := range items {
		switch it.Type() {
		case archive.TypeTool:
			out = append(out, it.Type()+":"+it.String("name")+":"+it.String("status"))
		case archive.TypeWebSearch:
			out = append(out, it.Type()+":"+it.String("query")+":"+it.String("status"))
		default:
			out = append(out, it.Type()+":"+it.String("text"))
		}
	}
	return out
}

func TestUnwrapCommand(t *testing.T) {
	tests := []struct{ in, want string }{
		{`/bin/bash -lc 'echo hi'`, `echo hi`},
		{`bash -lc 'ls -la'`, `ls -la`},
		{`/bin/bash -lc "python3 -c \"print('b'*1200000)\""`, `python3 -c "print('b'*1200000)"`},
		{`/usr/bin/zsh -lc 'git status'`, `git status`},
		{`sh -c 'a && b'`, `a && b`},
		{`bash -c ls`, `ls`},
		{`bash -lc 'it'"'"'s here'`, `it's here`},
		{`bash -lc 'it'\''s here'`, `it's here`},
		{`bash -lc "echo \$HOME \\ \` + "`" + `"`, "echo $HOME \\ `"},
		{"bash -lc 'cat <<EOF\nline\nEOF'", "cat <<EOF\nline\nEOF"},
		{`bash -lc "echo $HOME"`, `bash -lc "echo $HOME"`}, // an expansion: not one literal word
		{`bash -lc 'a' 'b'`, `bash -lc 'a' 'b'`},           // two words
		{`bash -lc 'unclosed`, `bash -lc 'unclosed`},
		{`bash -lc ''`, `bash -lc ''`},
		{`bash -x 'echo hi'`, `bash -x 'echo hi'`},
		{`python3 -c 'print(1)'`, `python3 -c 'print(1)'`},
		{`ls -la`, `ls -la`},
		{`bash`, `bash`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := unwrapCommand(tt.in); got != tt.want {
			t.Errorf("unwrapCommand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCodexTopLevelError(t *testing.T) {
	const start = `{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
`
	tests := []struct {
		name   string
		stream string
		finish bool // the stream ends without the turn's end: Finish(false)
		status string
		items  []string
		detail string // the failure's detail
	}{{
		name: "retry then success",
		stream: start + `{"type":"error","message":"Reconnecting... 1/2"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ok"}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`,
		status: TurnCompleted,
		items:  []string{"notice:Reconnecting... 1/2", "assistant:ok"},
	}, {
		name: "error then turn.failed",
		stream: start + `{"type":"error","message":"unexpected status 401 Unauthorized"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}`,
		status: TurnFailed,
		items:  []string{"failure:" + CodexNotLoggedIn},
		detail: "unexpected status 401 Unauthorized",
	}, {
		name: "retries then turn.failed",
		stream: start + `{"type":"error","message":"Reconnecting... 1/2"}
{"type":"error","message":"Reconnecting... 2/2"}
{"type":"error","message":"stream disconnected"}
{"type":"turn.failed","error":{"message":"stream disconnected"}}`,
		status: TurnFailed,
		items:  []string{"notice:Reconnecting... 1/2", "notice:Reconnecting... 2/2", "failure:stream disconnected"},
	}, {
		name:   "turn.failed with a JSON body",
		stream: start + `{"type":"turn.failed","error":{"message":"{\"error\": {\"message\": \"bad request\", \"type\": \"invalid_request_error\"}}"}}`,
		status: TurnFailed,
		items:  []string{"failure:bad request"},
		detail: "{\n  \"error\": {\n    \"message\": \"bad request\",\n    \"type\": \"invalid_request_error\"\n  }\n}",
	}, {
		name:   "turn.failed that differs from the error",
		stream: start + `{"type":"error","message":"first"}` + "\n" + `{"type":"turn.failed","error":{"message":"second","code":"x"}}`,
		status: TurnFailed,
		items:  []string{"notice:first", "failure:second"},
		detail: "{\n  \"code\": \"x\"\n}",
	}, {
		name:   "turn.failed without a message",
		stream: start + `{"type":"error","message":"boom"}` + "\n" + `{"type":"turn.failed"}`,
		status: TurnFailed,
		items:  []string{"failure:boom"},
	}, {
		name:   "error then the stream ends",
		stream: start + `{"type":"error","message":"Reconnecting... 1/5"}`,
		finish: true,
		status: TurnFailed,
		items:  []string{"notice:Reconnecting... 1/5", "failure:Codex stopped."},
		detail: "exit status 1\nlast error: Reconnecting... 1/5",
	}, {
		name:   "an error item is a failure that does not end the turn",
		stream: start + `{"type":"item.completed","item":{"id":"item_0","type":"error","message":"model fell back"}}` + "\n" + `{"type":"turn.completed","usage":{}}`,
		status: TurnCompleted,
		items:  []string{"failure:model fell back"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewCodex(SequentialIDs())
			p, ends := feedCodex(t, m, tt.stream)
			if tt.finish {
				r := m.Finish(false, "Codex stopped.", "exit status 1")
				checkResult(t, r)
				p.apply(t, r)
				ends = append(ends, r.End)
			}
			if len(ends) != 1 || ends[0] == nil {
				t.Fatalf("%d turn ends", len(ends))
			}
			if ends[0].Status != tt.status || ends[0].SessionID != "th" {
				t.Errorf("status %q session %q, want %q th", ends[0].Status, ends[0].SessionID, tt.status)
			}
			if got := kinds(p.items); !reflect.DeepEqual(got, tt.items) {
				t.Errorf("items %q, want %q", got, tt.items)
			}
			for _, it := range p.items {
				if it.Type() == archive.TypeFailure && it.String("detail") != tt.detail {
					t.Errorf("failure detail %q, want %q", it.String("detail"), tt.detail)
				}
			}
			if m.InTurn() {
				t.Errorf("still in a turn")
			}
		})
	}
}

func TestCodexUsage(t *testing.T) {
	tests := []struct {
		usage                                string
		input, output, cacheRead, cacheWrite string
	}{
		{`{"input_tokens":100,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":5}`, "100", "20", "0", "0"},
		{`{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":345}`, "1000", "345", "200", ""},
		{`{"input_tokens":1200,"cached_input_tokens":200,"cache_write_input_tokens":300,"output_tokens":7,"reasoning_output_tokens":7}`, "700", "7", "200", "300"},
		{`{"input_tokens":10,"output_tokens":1}`, "10", "1", "", ""},
		{`{"input_tokens":5,"cached_input_tokens":9}`, "0", "", "9", ""},
		{`{}`, "", "", "", ""},
		{`null`, "", "", "", ""},
	}
	for _, tt := range tests {
		m := NewCodex(SequentialIDs())
		m.Line([]byte(`{"type":"turn.started"}`))
		r := m.Line([]byte(`{"type":"turn.completed","usage":` + tt.usage + `}`))
		if r.End == nil {
			t.Fatalf("usage %s: no turn end", tt.usage)
		}
		u := r.End.Usage
		got := []string{string(u.Input), string(u.Output), string(u.CacheRead), string(u.CacheWrite)}
		want := []string{tt.input, tt.output, tt.cacheRead, tt.cacheWrite}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("usage %s = %q, want %q", tt.usage, got, want)
		}
		if !reflect.DeepEqual(r.End.LastRound, u) || r.End.CostUSD != "" || r.End.Model != "" || u.WebSearchRequests != "" || u.ReportedCost != "" {
			t.Errorf("usage %s: turn end %+v", tt.usage, r.End)
		}
	}
}

func TestCodexInterrupted(t *testing.T) {
	const stream = `{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Running it."}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'sleep 100'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.updated","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'sleep 100'","aggregated_output":"partial\n","exit_code":null,"status":"in_progress"}}
{"type":"item.started","item":{"id":"item_2","type":"web_search","query":"go flock"}}
{"type":"item.started","item":{"id":"item_3","type":"agent_message","text":"Half a"}}`
	m := NewCodex(SequentialIDs())
	p, ends := feedCodex(t, m, stream)
	if len(ends) != 0 || !m.InTurn() {
		t.Fatalf("the turn ended early")
	}
	r := m.Finish(true, "ignored", "ignored")
	checkResult(t, r)
	p.apply(t, r)
	if r.End == nil || r.End.Status != TurnInterrupted || m.InTurn() {
		t.Fatalf("end %+v", r.End)
	}
	want := []string{"assistant:Running it.", "tool:shell:cancelled", "webSearch:go flock:cancelled", "assistant:Half a", "notice:Interrupted."}
	if got := kinds(p.items); !reflect.DeepEqual(got, want) {
		t.Errorf("items %q, want %q", got, want)
	}
	tool := p.items[1]
	if tool.String("statusText") != "cancelled" || tool.String("summary") != "sleep 100" || tool.String("detail") != "output:\npartial\n" {
		t.Errorf("tool %v", tool.Map())
	}
	// The history keeps the call with the output so far as an error, so
	// that no call is left without a result; the unfinished message is
	// not in it.
	var blocks []string
	for _, msg := range r.End.History {
		for _, b := range msg.Content {
			blocks = append(blocks, msg.Role+":"+b.Type()+":"+b.String("text")+b.String("arguments")+b.String("content"))
		}
	}
	wantBlocks := []string{"assistant:text:Running it.", `assistant:toolCall:{"command":"sleep 100"}`, "tool:toolResult:partial\n"}
	if !reflect.DeepEqual(blocks, wantBlocks) {
		t.Errorf("history %q, want %q", blocks, wantBlocks)
	}
	if !r.End.History[1].Content[0].Bool("isError") {
		t.Errorf("the cancelled command's result is not an error")
	}
	if r := m.Finish(true, "", ""); r.End != nil || len(r.Changes) > 0 {
		t.Errorf("Finish with no turn = %+v", r)
	}
}

func TestCodexItems(t *testing.T) {
	const stream = `not json
["an array"]
{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
{"type":"session.configured"}
{"type":"item.started","item":{"id":"item_0","type":"agent_message","text":"Hel"}}
{"type":"item.updated","item":{"id":"item_0","type":"agent_message","text":"Hello"}}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello."}}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello."}}
{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"**Thinking**"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"bash -lc 'false'","aggregated_output":"","exit_code":1,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"bash -lc 'rm -rf /'","aggregated_output":"","exit_code":null,"status":"declined"}}
{"type":"item.started","item":{"id":"item_4","type":"file_change","changes":[{"path":"a.go","kind":"update","diff":"@@ -1 +1 @@\n-a\n+b\n"},{"path":"b.go","kind":"add"}],"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_4","type":"file_change","changes":[{"path":"a.go","kind":"update","diff":"@@ -1 +1 @@\n-a\n+b\n"},{"path":"b.go","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_5","type":"file_change","changes":[{"path":"c.go","kind":"delete"}],"status":"failed"}}
{"type":"item.started","item":{"id":"item_6","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"flock"},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_6","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"flock"},"result":{"content":[{"type":"text","text":"found"}],"structured_content":null},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_7","type":"mcp_tool_call","server":"db","tool":"drop","arguments":{"table":"t"},"result":null,"error":{"message":"no such table"},"status":"failed"}}
{"type":"item.started","item":{"id":"item_8","type":"web_search","query":""}}
{"type":"item.completed","item":{"id":"item_8","type":"web_search","query":"","action":{"type":"search","query":"go flock"}}}
{"type":"item.started","item":{"id":"item_9","type":"todo_list","items":[{"text":"read","completed":false},{"text":"write","completed":false}]}}
{"type":"item.updated","item":{"id":"item_9","type":"todo_list","items":[{"text":"read","completed":true},{"text":"write","completed":false}]}}
{"type":"item.completed","item":{"id":"item_10","type":"collab_tool_call","tool":"spawn"}}
{"type":"item.started","item":{"id":"item_11","type":"command_execution","command":"echo late","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_11","type":"command_execution","command":"echo late","aggregated_output":"late\n","exit_code":0,"status":"completed"}}
{"type":"item.started","item":{"id":"item_11","type":"command_execution","command":"echo late","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}`
	m := NewCodex(SequentialIDs())
	p, ends := feedCodex(t, m, stream)
	if p.skipped != 4 {
		t.Errorf("%d lines skipped, want 4 (not JSON, not an object, an unknown event, an unknown item)", p.skipped)
	}
	want := []string{
		"assistant:Hello.", "thinking:**Thinking**", "tool:shell:failed", "tool:shell:denied",
		"tool:apply_patch:succeeded", "tool:apply_patch:failed", "tool:docs.search:succeeded", "tool:db.drop:failed",
		"webSearch:go flock:succeeded", "directions:[x] read\n[ ] write", "tool:shell:succeeded",
	}
	if got := kinds(p.items); !reflect.DeepEqual(got, want) {
		t.Fatalf("items %q, want %q", got, want)
	}
	fields := func(i int, keys ...string) []string {
		var out []string
		for _, k := range keys {
			out = append(out, p.items[i].String(k))
		}
		return out
	}
	checks := []struct {
		i    int
		want []string
	}{
		{2, []string{"false", "exit 1", ""}},
		{3, []string{"rm -rf /", "denied", ""}},
		{4, []string{"a.go, b.go", "2 files", "changes:\nupdate a.go\n@@ -1 +1 @@\n-a\n+b\nadd b.go"}},
		{5, []string{"c.go", "error", "changes:\ndelete c.go"}},
		{6, []string{"flock", "1 line", "arguments:\n{\n  \"query\": \"flock\"\n}\n\noutput:\nfound"}},
		{7, []string{`{"table":"t"}`, "error", "arguments:\n{\n  \"table\": \"t\"\n}\n\noutput:\nno such table"}},
		{10, []string{"echo late", "exit 0", "output:\nlate\n"}},
	}
	for _, c := range checks {
		if got := fields(c.i, "summary", "statusText", "detail"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("item %d: summary, statusText, detail = %q, want %q", c.i, got, c.want)
		}
	}
	if len(ends) != 1 {
		t.Fatalf("%d turn ends", len(ends))
	}
	var blocks []string
	for _, msg := range ends[0].History {
		for _, b := range msg.Content {
			s := msg.Role + ":" + b.Type()
			switch b.Type() {
			case archive.BlockText:
				s += ":" + b.String("text")
			case archive.BlockToolCall:
				s += ":" + b.String("name") + ":" + b.String("arguments")
			case archive.BlockToolResult:
				s += ":" + b.String("toolName") + ":" + b.String("content")
				if b.Bool("isError") {
					s += ":error"
				}
			}
			blocks = append(blocks, s)
		}
	}
	wantBlocks := []string{
		"assistant:text:Hello.",
		`assistant:toolCall:shell:{"command":"false"}`,
		"tool:toolResult:shell::error",
		`assistant:toolCall:shell:{"command":"rm -rf /"}`,
		"tool:toolResult:shell::error",
		`assistant:toolCall:apply_patch:{"changes":[{"path":"a.go","kind":"update","diff":"@@ -1 +1 @@\n-a\n+b\n"},{"path":"b.go","kind":"add"}]}`,
		"tool:toolResult:apply_patch:update a.go\n@@ -1 +1 @@\n-a\n+b\nadd b.go",
		`assistant:toolCall:apply_patch:{"changes":[{"path":"c.go","kind":"delete"}]}`,
		"tool:toolResult:apply_patch:delete c.go:error",
		`assistant:toolCall:mcp__docs__search:{"query":"flock"}`,
		"tool:toolResult:mcp__docs__search:found",
		`assistant:toolCall:mcp__db__drop:{"table":"t"}`,
		"tool:toolResult:mcp__db__drop:no such table:error",
		`assistant:toolCall:shell:{"command":"echo late"}`,
		"tool:toolResult:shell:late\n",
	}
	if !reflect.DeepEqual(blocks, wantBlocks) {
		t.Errorf("history\n%q\nwant\n%q", blocks, wantBlocks)
	}
	// The history's calls are named by the panel items' fresh ids.
	call := ends[0].History[0].Content[1]
	if call.String("id") != p.items[2].ID() {
		t.Errorf("call id %q, want the tool item's id %q", call.String("id"), p.items[2].ID())
	}
}

// TestCodexDeltas checks that a growing message reports what was appended,
// and a replaced one no delta.
func TestCodexDeltas(t *testing.T) {
	m := NewCodex(SequentialIDs())
	m.Line([]byte(`{"type":"turn.started"}`))
	var deltas []string
	for _, text := range []string{"Hel", "Hello", "Hello", "Bye"} {
		r := m.Line([]byte(`{"type":"item.updated","item":{"id":"item_0","type":"agent_message","text":"` + text + `"}}`))
		for _, c := range r.Changes {
			deltas = append(deltas, c.Op.String()+":"+c.Delta)
		}
	}
	want := []string{"add:", "update:lo", "update:"}
	if !reflect.DeepEqual(deltas, want) {
		t.Errorf("changes %q, want %q", deltas, want)
	}
}

// TestCodexProcesses checks that codex item ids, which restart in every
// process, name new items in the next turn.
func TestCodexProcesses(t *testing.T) {
	one := `{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"first"}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}
`
	two := strings.ReplaceAll(one, "first", "second")
	// A process that was stopped before it ended its turn, then another.
	cut := `{"type":"thread.started","thread_id":"th"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"cut"}}
`
	m := NewCodex(SequentialIDs())
	p, ends := feedCodex(t, m, one+two+cut+strings.ReplaceAll(one, "first", "third"))
	want := []string{"assistant:first", "assistant:second", "assistant:cut", "assistant:third"}
	if got := kinds(p.items); !reflect.DeepEqual(got, want) {
		t.Errorf("items %q, want %q", got, want)
	}
	if len(ends) != 3 || len(ends[2].History) != 1 || len(ends[2].History[0].Content) != 2 {
		t.Errorf("turn ends %+v", ends)
	}
}

func FuzzCodex(f *testing.F) {
	for _, file := range codexStreams(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			for _, seed := range streamSeeds(data, codexStart) {
				f.Add(seed)
			}
		}
	}
	f.Add([]byte(`{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc 'ls'","status":"in_progress"}}
{"type":"item.updated","item":{"id":"item_0","type":"todo_list","items":[{"text":"a","completed":true}]}}
{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"x":1},"error":{"message":"e"},"status":"failed"}}
{"type":"item.completed","item":{"id":"item_2","type":"web_search","action":{"queries":["q"]}}}
{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"p","kind":{"type":"update","move_path":"q"}}],"status":"completed"}}
{"type":"error","message":"x"}
{"type":"turn.failed","error":{"message":"x"}}`))
	for _, line := range deepSeeds() {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewCodex(SequentialIDs())
		for _, line := range bytes.Split(data, []byte("\n")) {
			checkResult(t, m.Line(line))
		}
		checkResult(t, m.Finish(len(data)%2 == 0, "end", ""))
		if m.InTurn() {
			t.Fatalf("in a turn after Finish")
		}
	})
}

// TestCodexThreadUsage checks that a turn's usage is its own: codex exec
// reports the thread's total so far, which a resume carries over (the
// recorded plain_text, resume and resume_json_before_subcommand runs of one
// thread, one request each, report 100, 200 and 300 input tokens).
func TestCodexThreadUsage(t *testing.T) {
	var stream strings.Builder
	for _, name := range []string{"plain_text", "resume", "resume_json_before_subcommand", "plain_text", "image_input"} {
		data, err := os.ReadFile(filepath.Join("testdata", "codex", name+".stdout.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(data)
	}
	_, ends := feedCodex(t, NewCodex(SequentialIDs()), stream.String())
	var got []string
	for _, e := range ends {
		got = append(got, string(e.Usage.Input)+"/"+string(e.Usage.Output))
	}
	// The second plain_text reports less than the thread's last total: a
	// total that went down is taken whole, as is another thread's.
	want := []string{"100/20", "100/20", "100/20", "100/20", "100/20"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turn usages %q, want %q", got, want)
	}
}

// TestCodexKeyUnset: a turn codex refused because its provider's key
// variable is not set ends with the failure that says so and counts as
// not logged in; another failure does not.
func TestCodexKeyUnset(t *testing.T) {
	m := NewCodex(SequentialIDs())
	m.Line([]byte(`{"type":"turn.started"}`))
	r := m.Line([]byte("{\"type\":\"turn.failed\",\"error\":{\"message\":\"Missing environment variable: `MY_KEY`.\"}}"))
	var failure string
	for _, c := range r.Changes {
		if c.Item.Type() == archive.TypeFailure {
			failure = c.Item.String("text")
		}
	}
	if failure != CodexKeyUnset("MY_KEY") || !CodexLoginFailure(failure) || r.End == nil || r.End.Status != TurnFailed {
		t.Errorf("failure %q, end %+v", failure, r.End)
	}
	if CodexLoginFailure("Codex reported that the turn failed.") {
		t.Error("any failure counts as not logged in")
	}
	for msg, want := range map[string]string{"Missing environment variable: `A_B`.": "A_B", "Missing environment variable: ``": "", "no": ""} {
		if got, _ := missingEnvVar(msg); got != want {
			t.Errorf("missingEnvVar(%q) = %q, want %q", msg, got, want)
		}
	}
}
