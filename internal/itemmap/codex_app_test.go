package itemmap

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/canonjson"
)

// appServerSession reads a recorded app-server session: the server's lines
// as one stream, and the client's answers to approval requests by request
// id.
func appServerSession(t *testing.T, path string) ([]byte, map[string]gjson.Result) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	answers := map[string]gjson.Result{} // the client's results, by request id
	for _, line := range bytes.Split(data, []byte("\n")) {
		rec := gjson.ParseBytes(line)
		msg := rec.Get("msg")
		switch rec.Get("dir").String() {
		case "out":
			out.WriteString(msg.Raw)
			out.WriteByte('\n')
		case "in":
			if res := msg.Get("result"); res.Exists() && msg.Get("method").String() == "" {
				answers[msg.Get("id").Raw] = res
			}
		}
	}
	return out.Bytes(), answers
}

func runCodexApp(t *testing.T, r io.Reader, answers map[string]gjson.Result) *panel {
	t.Helper()
	m := NewCodexApp(SequentialIDs())
	p := &panel{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			res := m.Line(line)
			p.apply(t, res)
			for _, a := range res.Approvals {
				ans := answers[a.RequestID]
				if a.ToolName != QuestionsTool {
					m.Answered(a.RequestID, strings.HasPrefix(ans.Get("decision").String(), "accept"))
					continue
				}
				// As internal/codex does: the labels chosen, by question
				// (a form's: the label of the value the client sent).
				chosen := map[string]string{}
				for _, q := range gjson.GetBytes(line, "params.questions").Array() {
					if l := ans.Get("answers." + q.Get("id").String() + ".answers.0"); l.Exists() {
						chosen[q.Get("question").String()] = l.String()
					}
				}
				gjson.GetBytes(line, "params.requestedSchema.properties").ForEach(func(k, f gjson.Result) bool {
					v := ans.Get("content." + k.String())
					switch {
					case !v.Exists():
					case v.Type == gjson.True || v.Type == gjson.False:
						chosen[f.Get("title").String()] = map[bool]string{true: "Yes", false: "No"}[v.Bool()]
					default:
						for i, e := range f.Get("enum").Array() {
							if e.String() == v.String() {
								chosen[f.Get("title").String()] = f.Get("enumNames").Array()[i].String()
							}
						}
					}
					return true
				})
				_, r, ok := m.AnswerQuestions(a.RequestID, chosen, nil)
				if !ok {
					t.Errorf("AnswerQuestions(%s) not a question", a.RequestID)
				}
				p.apply(t, r)
			}
			if id, ok := viewedImage(line); ok {
				// As internal/codex does: the file the item named, read.
				p.apply(t, m.ViewedImage(id, Image{MimeType: "image/png", Data: redPNG}))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.InTurn() {
		p.apply(t, m.Finish(false, "codex app-server stopped before the turn ended.", ""))
	}
	return p
}

// redPNG is the 8×8 red square the recordings' tools looked at.
var redPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII=")

// viewedImage is the id of a completed imageView item on line.
func viewedImage(line []byte) (string, bool) {
	v := gjson.ParseBytes(line)
	if v.Get("method").String() != "item/completed" || v.Get("params.item.type").String() != "imageView" {
		return "", false
	}
	return v.Get("params.item.id").String(), true
}

// TestCodexAppViewImageRaw: the image codex sent the model in a
// view_image output (a raw response item, with experimentalRawEvents) is
// the one kept, whatever the file gave, and it follows the call's result.
func TestCodexAppViewImageRaw(t *testing.T) {
	stream, _ := appServerSession(t, "../../testdata/codex/app-server/view_image.jsonl")
	other := append([]byte(nil), redPNG...)
	other[len(other)-1] ^= 1 // the file changed since the model saw it
	raw := `{"method":"rawResponseItem/completed","params":{"threadId":"t","turnId":"u","item":{"type":"function_call","name":"view_image","arguments":"{\"path\":\"/home/dev/capture/codex-work/red.png\"}","call_id":"call_view_1"}}}` + "\n"
	out := `{"method":"rawResponseItem/completed","params":{"threadId":"t","turnId":"u","item":{"type":"function_call_output","call_id":"call_view_1","output":[{"type":"input_image","image_url":"data:image/png;base64,` +
		base64.StdEncoding.EncodeToString(redPNG) + `","detail":"original"}]}}}` + "\n"
	var lines [][]byte
	for _, line := range bytes.Split(stream, []byte("\n")) {
		if bytes.Contains(line, []byte(`"item/started"`)) && bytes.Contains(line, []byte(`"imageView"`)) {
			lines = append(lines, []byte(strings.TrimSuffix(raw, "\n")))
		}
		lines = append(lines, line)
		if _, ok := viewedImage(line); ok {
			lines = append(lines, []byte(strings.TrimSuffix(out, "\n")))
		}
	}
	m := NewCodexApp(SequentialIDs())
	p := &panel{}
	var views []*ToolView
	for _, line := range lines {
		if len(line) == 0 {
			continue
		}
		res := m.Line(line)
		for _, c := range res.Changes {
			if c.Tool != nil {
				views = append(views, c.Tool)
			}
		}
		p.apply(t, res)
		if id, ok := viewedImage(line); ok {
			// The file, read after the item completed, gives other bytes.
			res := m.ViewedImage(id, Image{MimeType: "image/png", Data: other})
			p.apply(t, res)
		}
	}
	h := historyOf(t, p)
	var msgs []struct {
		Role    string
		Content []map[string]any
	}
	if err := json.Unmarshal([]byte(h), &msgs); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(redPNG)
	var tool []map[string]any
	for _, m := range msgs {
		if m.Role == "tool" {
			tool = append(tool, m.Content...)
		}
	}
	if len(tool) != 2 || tool[0]["type"] != "toolResult" || tool[0]["content"] != "" ||
		tool[1]["type"] != "image" || tool[1]["sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("tool message = %v, want the result (no text) then the image %x", tool, sum)
	}
	last := views[len(views)-1]
	if len(last.Images) != 1 || !bytes.Equal(last.Images[0].Data, redPNG) {
		t.Errorf("last view's images = %v, want the image the model saw", last.Images)
	}
}

func TestCodexAppServerGolden(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded app-server sessions")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			stream, answers := appServerSession(t, f)
			whole := runCodexApp(t, bytes.NewReader(stream), answers).golden()
			byLine := runCodexApp(t, &lineReader{stream}, answers).golden()
			byTwo := runCodexApp(t, &chunkReader{stream, 2}, answers).golden()
			if !bytes.Equal(whole, byLine) || !bytes.Equal(whole, byTwo) {
				t.Fatalf("results differ by how the stream is read")
			}
			golden := filepath.Join("testdata", "codex", "app-server", name+".golden.json")
			if *update {
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

func FuzzCodexApp(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	for _, file := range files {
		stream, _ := appServerSession(&testing.T{}, file)
		for _, seed := range streamSeeds(stream, codexAppStart) {
			f.Add(seed)
		}
	}
	for _, line := range deepSeeds() {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewCodexApp(SequentialIDs())
		for _, line := range bytes.Split(data, []byte("\n")) {
			checkResult(t, m.Line(line))
		}
		checkResult(t, m.Finish(false, "end", ""))
	})
}

// historyOf returns the turn's history as canonical JSON.
func historyOf(t *testing.T, p *panel) string {
	t.Helper()
	if len(p.turns) != 1 {
		t.Fatalf("%d turns, want 1", len(p.turns))
	}
	out, err := canonjson.Encode(p.turns[0].(map[string]any)["history"])
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestCodexAppRawHistory: the model's own calls from the raw items make the
// history; a call without them falls back to the neutral form; a call whose
// output never came gets the tool item's result.
func TestCodexAppRawHistory(t *testing.T) {
	const (
		started = `{"method":"turn/started","params":{"turn":{"id":"t1"}}}`
		// A command whose raw call and output both came.
		rawA   = `{"method":"rawResponseItem/completed","params":{"item":{"type":"function_call","name":"exec_command","arguments":"{ \"cmd\" : \"ls\" }","call_id":"call_a"}}}`
		startA = `{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_a","command":"/bin/bash -lc ls","status":"inProgress"}}}`
		doneA  = `{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"call_a","command":"/bin/bash -lc ls","status":"failed","exitCode":2,"aggregatedOutput":"no\n"}}}`
		outA   = `{"method":"rawResponseItem/completed","params":{"item":{"type":"function_call_output","call_id":"call_a","output":"Process exited with code 2\nOutput:\nno\n"}}}`
		// A command with no raw items at all (an older codex).
		startB = `{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_b","command":"/bin/bash -lc pwd","status":"inProgress"}}}`
		doneB  = `{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"call_b","command":"/bin/bash -lc pwd","status":"completed","exitCode":0,"aggregatedOutput":"/w\n"}}}`
		// An output whose call never came: not used.
		outX = `{"method":"rawResponseItem/completed","params":{"item":{"type":"function_call_output","call_id":"call_x","output":"stray"}}}`
		// A freeform call and a content-item output, with no tool item.
		rawC = `{"method":"rawResponseItem/completed","params":{"item":{"type":"custom_tool_call","name":"view","input":"a.png","call_id":"call_c"}}}`
		outC = `{"method":"rawResponseItem/completed","params":{"item":{"type":"custom_tool_call_output","call_id":"call_c","output":[{"type":"input_text","text":"hi"}]}}}`
		// A command that still runs when the turn is interrupted.
		rawD   = `{"method":"rawResponseItem/completed","params":{"item":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"sleep 9\"}","call_id":"call_d"}}}`
		startD = `{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_d","command":"/bin/bash -lc 'sleep 9'","status":"inProgress"}}}`
		// A call that never got a tool item nor an output.
		rawE = `{"method":"rawResponseItem/completed","params":{"item":{"type":"function_call","name":"update_plan","arguments":"{}","call_id":"call_e"}}}`
		user = `{"method":"rawResponseItem/completed","params":{"item":{"type":"message","role":"user","content":[{"type":"input_text","text":"# Conversation so far"}]}}}`
	)
	stream := strings.Join([]string{started, user, rawA, startA, doneA, outA, startB, doneB, outX, rawC, outC, rawD, startD, rawE}, "\n")
	m := NewCodexApp(SequentialIDs())
	p := &panel{}
	for _, line := range strings.Split(stream, "\n") {
		p.apply(t, m.Line([]byte(line)))
	}
	p.apply(t, m.Finish(true, "", ""))
	got := historyOf(t, p)
	want := []string{
		`"arguments" : "{ \"cmd\" : \"ls\" }"`, `"id" : "call_a"`, `"name" : "exec_command"`,
		`"callID" : "call_a"`, `"content" : "Process exited with code 2\nOutput:\nno\n"`,
		`"arguments" : "{\"command\":\"pwd\"}"`, `"name" : "shell"`, `"content" : "/w\n"`,
		`"arguments" : "a.png"`, `"content" : "[{\"type\":\"input_text\",\"text\":\"hi\"}]"`,
		`"id" : "call_d"`, `"callID" : "call_d"`, `"id" : "call_e"`, `"callID" : "call_e"`,
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("history lacks %s:\n%s", w, got)
		}
	}
	for _, bad := range []string{"stray", "Conversation so far", "call_x"} {
		if strings.Contains(got, bad) {
			t.Errorf("history has %q:\n%s", bad, got)
		}
	}
	// Every call has one result, after it; a failed or cancelled tool's
	// result is an error.
	var h []map[string]any
	for _, msg := range p.turns[0].(map[string]any)["history"].([]any) {
		for _, b := range msg.(map[string]any)["content"].([]any) {
			h = append(h, b.(map[string]any))
		}
	}
	calls := map[string]int{}
	results := map[string]bool{}
	for i, b := range h {
		switch b["type"] {
		case "toolCall":
			calls[b["id"].(string)] = i
		case "toolResult":
			id := b["callID"].(string)
			if j, ok := calls[id]; !ok || j > i || results[id] {
				t.Errorf("result %d for %s: call at %d, before %v", i, id, j, ok)
			}
			results[id] = true
			wantErr := id == "call_a" || id == "call_d" || id == "call_e"
			if b["isError"] != wantErr {
				t.Errorf("result of %s: isError %v, want %v", id, b["isError"], wantErr)
			}
		}
	}
	if len(calls) != 5 || len(results) != 5 {
		t.Errorf("%d calls, %d results, want 5 each:\n%s", len(calls), len(results), got)
	}
}

func TestRawOutputFailed(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 0\nOutput:\nx\n", false},
		{"Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 3\nOutput:\n", true},
		{"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n", false},
		{"Exit code: 1\nOutput:\nfailed\n", true},
		{"Chunk ID: a\nProcess running with session ID 4\nOutput:\nProcess exited with code 9\n", false},
		{`{"output":"x","metadata":{"exit_code":1}}`, true},
		{`{"output":"x","metadata":{"exit_code":0}}`, false},
		{"plain text", false},
		{"", false},
	} {
		if got := rawOutputFailed(c.out); got != c.want {
			t.Errorf("rawOutputFailed(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

// TestCodexAppApprovalFolder: a command's approval carries the folder
// codex runs it in, and whether it may run outside the sandbox: the
// model's raw call says so (sandbox_permissions); a call not seen (a
// resumed thread sends none) may, and so may a request for additional
// permissions.
func TestCodexAppApprovalFolder(t *testing.T) {
	raw := func(id, args string) string {
		b, _ := json.Marshal(map[string]any{"method": "rawResponseItem/completed", "params": map[string]any{"item": map[string]any{
			"type": "function_call", "name": "exec_command", "arguments": args, "call_id": id}}})
		return string(b)
	}
	ask := func(n int, id, cwd, extra string) string {
		return fmt.Sprintf(`{"method":"item/commandExecution/requestApproval","id":%d,"params":{"kind":"command","threadId":"th","turnId":"t1","itemId":%q,"command":"/bin/bash -lc 'rm -f *'","cwd":%q%s}}`, n, id, cwd, extra)
	}
	started := func(id string) string {
		return fmt.Sprintf(`{"method":"item/started","params":{"item":{"type":"commandExecution","id":%q,"command":"/bin/bash -lc 'rm -f *'","status":"inProgress"}}}`, id)
	}
	lines := []string{`{"method":"turn/started","params":{"turn":{"id":"t1"}}}`,
		raw("call_in", `{"cmd":"rm -f *","workdir":"build"}`), started("call_in"), ask(0, "call_in", "/w/build", ""),
		raw("call_out", `{"cmd":"rm -f *","sandbox_permissions":"require_escalated","justification":"clean"}`), started("call_out"), ask(1, "call_out", "/w", `,"reason":"clean"`),
		raw("call_def", `{"cmd":"rm -f *","sandbox_permissions":"use_default"}`), started("call_def"), ask(2, "call_def", "/w", ""),
		started("call_unseen"), ask(3, "call_unseen", "/w", ""),
		raw("call_more", `{"cmd":"rm -f *"}`), started("call_more"), ask(4, "call_more", "/w", `,"additionalPermissions":{"network":{"enabled":true}}`),
		raw("call_net", `{"cmd":"rm -f *"}`), started("call_net"), ask(6, "call_net", "/w", `,"networkApprovalContext":{"host":"example.com","protocol":"https"}`),
		`{"method":"execCommandApproval","id":5,"params":{"callId":"call_legacy","conversationId":"th","command":["/bin/bash","-lc","rm -f *"],"cwd":"/w/legacy","parsedCmd":[]}}`,
	}
	m := NewCodexApp(SequentialIDs())
	var got []string
	for _, line := range lines {
		r := m.Line([]byte(line))
		checkResult(t, r)
		for _, a := range r.Approvals {
			got = append(got, fmt.Sprintf("%s %s %v", a.ToolUseID, a.Cwd, a.Escalated))
		}
	}
	want := []string{"call_in /w/build false", "call_out /w true", "call_def /w false", "call_unseen /w true", "call_more /w true", "call_net /w true", "call_legacy /w/legacy true"}
	if !slices.Equal(got, want) {
		t.Errorf("approvals\n%q\nwant\n%q", got, want)
	}
}

// TestCodexAppApprovalFolderRecorded: on the real codex's streams, a
// command asked about inside the sandbox (its policy found `rm -f *`
// dangerous) and the same one the model wants run outside it, each in
// the folder of its workdir (command_approval_raw); a thread without raw
// calls (command_approval_accept) may run it outside.
func TestCodexAppApprovalFolderRecorded(t *testing.T) {
	const work = "/home/dev/capture/codex-work"
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"command_approval_raw", []string{"call_inside " + work + "/build false", "call_outside " + work + "/build true"}},
		{"command_approval_accept", []string{"call_fake_0009 " + work + " true"}},
	} {
		_, approvals := appChanges(t, tc.name)
		var got []string
		for _, a := range approvals {
			got = append(got, fmt.Sprintf("%s %s %v", a.ToolUseID, a.Cwd, a.Escalated))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: approvals %q, want %q", tc.name, got, tc.want)
		}
	}
}
