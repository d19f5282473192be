package fakeapi

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// appServer is a running `codex app-server` that the test talks JSON-RPC
// to, line by line on its stdin and stdout.
type appServer struct {
	t         *testing.T
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	out       chan map[string]any // stdout lines, parsed; closed at EOF
	stderr    *os.File
	dir, work string

	mu     sync.Mutex
	log    [][]byte // {"dir":"in"|"out","msg":…} lines in the order seen
	nextID int
}

// startAppServer starts the real codex app-server with args against srv,
// with the throwaway homes in dir and the working folder work (new folders
// when empty). It is stopped when the test ends.
func startAppServer(t *testing.T, srv *OpenAIServer, dir, work string, args ...string) *appServer {
	t.Helper()
	bin := CodexPath(t)
	if dir == "" {
		dir = t.TempDir()
	}
	if work == "" {
		work = t.TempDir()
	}
	a := &appServer{t: t, dir: dir, work: work, out: make(chan map[string]any, 1000), stderr: stderrFile(t)}
	cmd := exec.Command(bin, append([]string{"app-server"}, args...)...)
	cmd.Dir = work
	cmd.Env = srv.CodexEnv(t, dir)
	ownGroup(cmd)
	cmd.Stderr = a.stderr
	var err error
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.cmd = cmd
	go func() {
		defer close(a.out)
		rd := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := rd.ReadBytes('\n')
			line = bytes.TrimSpace(line)
			if len(line) > 0 {
				var m map[string]any
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					t.Errorf("app-server stdout line is not JSON: %q", line)
				} else {
					a.record("out", line)
					a.out <- m
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(a.stop)
	return a
}

// record appends one line to the session's log.
func (a *appServer) record(dir string, msg []byte) {
	b, _ := json.Marshal(map[string]any{"dir": dir, "msg": json.RawMessage(msg)})
	a.mu.Lock()
	a.log = append(a.log, b)
	a.mu.Unlock()
}

// send writes one JSON-RPC message to the server.
func (a *appServer) send(msg map[string]any) {
	a.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		a.t.Fatal(err)
	}
	a.record("in", b)
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("write to app-server: %v", err)
	}
}

// request sends a request and returns its id.
func (a *appServer) request(method string, params any) float64 {
	a.t.Helper()
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	a.mu.Unlock()
	a.send(map[string]any{"id": id, "method": method, "params": params})
	return float64(id)
}

// next returns the next message from the server (a server that says
// nothing more is ended by go test's own timeout).
func (a *appServer) next() map[string]any {
	a.t.Helper()
	m, ok := <-a.out
	if !ok {
		a.t.Fatalf("app-server closed stdout; stderr:\n%s", readStderr(a.t, a.stderr))
	}
	return m
}

// until reads messages until one that match accepts, and returns it with
// the ones before it.
func (a *appServer) until(match func(map[string]any) bool) (map[string]any, []map[string]any) {
	a.t.Helper()
	var seen []map[string]any
	for {
		m := a.next()
		if match(m) {
			return m, seen
		}
		seen = append(seen, m)
	}
}

// stop closes stdin, reads what is left of stdout and waits for the server
// to exit, which it does at the end of its input. After the test failed
// (the server may be in the middle of a turn) its process group is killed
// first.
func (a *appServer) stop() {
	if a.cmd == nil {
		return
	}
	if a.t.Failed() {
		_ = killGroup(a.cmd)
	}
	a.stdin.Close()
	for range a.out {
	}
	if err := a.cmd.Wait(); err != nil && !a.t.Failed() {
		a.t.Errorf("app-server: %v; stderr:\n%s", err, readStderr(a.t, a.stderr))
	}
	a.cmd = nil
}

// call sends a request and waits for its response, which it returns with
// the messages that came before it. A JSON-RPC error fails the test.
func (a *appServer) call(method string, params any) (map[string]any, []map[string]any) {
	a.t.Helper()
	id := a.request(method, params)
	resp, seen := a.until(func(m map[string]any) bool { return m["id"] == id && m["method"] == nil })
	if resp["error"] != nil {
		a.t.Fatalf("%s: error %v", method, resp["error"])
	}
	res, _ := resp["result"].(map[string]any)
	return res, seen
}

// initialize does the handshake: the initialize request, then the
// initialized notification.
func (a *appServer) initialize() map[string]any {
	a.t.Helper()
	return a.initializeWith(nil)
}

// initializeWith does the handshake with capabilities in initialize (nil:
// none).
func (a *appServer) initializeWith(capabilities map[string]any) map[string]any {
	a.t.Helper()
	res, _ := a.call("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "spbridge_test", "title": "spbridge test", "version": "0.0.1"},
		"capabilities": capabilities,
	})
	a.send(map[string]any{"method": "initialized"})
	return res
}

// startThread starts a thread in the working folder with the safe defaults
// (workspace-write sandbox, on-request approvals) and returns its id.
func (a *appServer) startThread() string {
	a.t.Helper()
	return a.startThreadWith(nil)
}

// startThreadWith starts a thread as startThread does, with extra params
// added to thread/start's.
func (a *appServer) startThreadWith(extra map[string]any) string {
	a.t.Helper()
	params := map[string]any{"cwd": a.work, "approvalPolicy": "on-request", "sandbox": "workspace-write"}
	maps.Copy(params, extra)
	res, _ := a.call("thread/start", params)
	thread, _ := res["thread"].(map[string]any)
	id, _ := thread["id"].(string)
	if id == "" {
		a.t.Fatalf("thread/start result without a thread id: %v", res)
	}
	return id
}

// textInput is a turn's input of one text.
func textInput(text string) []any {
	return []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}
}

// appTurn is what the server sent during one turn.
type appTurn struct {
	id        string
	msgs      []map[string]any // everything after turn/start's response, up to turn/completed
	completed map[string]any   // turn/completed's turn
}

// runTurn starts a turn with params (threadId and input at least) and reads
// until it completes, answering each server request with what answer
// returns for it (nil fails the test).
func (a *appServer) runTurn(params map[string]any, answer func(req map[string]any) any) *appTurn {
	a.t.Helper()
	res, _ := a.call("turn/start", params)
	tr := &appTurn{}
	tr.id, _ = res["turn"].(map[string]any)["id"].(string)
	for {
		m := a.next()
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

// paramsOf returns a message's params.
func paramsOf(m map[string]any) map[string]any {
	p, _ := m["params"].(map[string]any)
	return p
}

// methods lists the methods of msgs, responses as "response".
func methods(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		if meth, ok := m["method"].(string); ok {
			out = append(out, meth)
		} else {
			out = append(out, "response")
		}
	}
	return out
}

// notifications returns the params of the messages in msgs with method.
func notifications(msgs []map[string]any, method string) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if m["method"] == method {
			out = append(out, paramsOf(m))
		}
	}
	return out
}

// completedItems returns the items of the item/completed notifications in
// msgs with type typ.
func completedItems(msgs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, p := range notifications(msgs, "item/completed") {
		if it, _ := p["item"].(map[string]any); it["type"] == typ {
			out = append(out, it)
		}
	}
	return out
}

// joinDeltas joins the delta fields of the notifications in msgs with method.
func joinDeltas(msgs []map[string]any, method string) string {
	var b strings.Builder
	for _, p := range notifications(msgs, method) {
		d, _ := p["delta"].(string)
		b.WriteString(d)
	}
	return b.String()
}

// save writes the session's log to testdata/codex/app-server/name.jsonl
// when the -record flag is set, with the throwaway folders' paths rewritten
// to the ones the shared fixtures use. Extra pairs of folder and replacement
// may follow.
func (a *appServer) save(name string, extra ...string) {
	a.t.Helper()
	if !*record {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var b bytes.Buffer
	for _, l := range a.log {
		b.Write(rewritePaths(l, a.dir, a.work, extra...))
		b.WriteByte('\n')
	}
	writeTestdata(a.t, filepath.Join("codex", "app-server", name+".jsonl"), b.Bytes())
}

// turnUsage returns the params of the turn's thread/tokenUsage/updated
// notifications.
func turnUsage(tr *appTurn) []map[string]any {
	var out []map[string]any
	for _, p := range notifications(tr.msgs, "thread/tokenUsage/updated") {
		if p["turnId"] == tr.id {
			out = append(out, p)
		}
	}
	return out
}

// appUsage is testUsage as app-server reports it in thread/tokenUsage/updated.
var appUsage = map[string]any{
	"totalTokens": 1050.0, "inputTokens": 1000.0, "cachedInputTokens": 600.0, "cacheWriteInputTokens": 0.0,
	"outputTokens": 50.0, "reasoningOutputTokens": 20.0,
}

func TestAppServerTurns(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{
			ReasoningItem("**Greeting the user**\n\nThe user said hi; reply briefly."),
			MessageItem("Hello from the fake API."),
		}, Usage: testUsage},
		ResponsesReply{Items: []OutputItem{MessageItem("You said hi.")},
			Usage: ResponsesUsage{InputTokens: 2000, CachedTokens: 1500, OutputTokens: 70, ReasoningTokens: 30, TotalTokens: 2070}},
	)
	a := startAppServer(t, srv, "", "")
	// The user agent names the version of the codex under test, whichever
	// set it is of ("codex-cli 0.169.0").
	out, err := exec.Command(CodexPath(t), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out))
	if res := a.initialize(); len(fields) == 0 || !strings.Contains(fmt.Sprint(res["userAgent"]), "/"+fields[len(fields)-1]+" ") {
		t.Errorf("initialize result = %v, want its user agent to name %q", res, out)
	}
	thread := a.startThread()

	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("hi")}, nil)
	defer a.save("two_turns")
	if tr.completed["status"] != "completed" || tr.completed["id"] != tr.id {
		t.Errorf("turn/completed turn = %v", tr.completed)
	}
	if got := joinDeltas(tr.msgs, "item/reasoning/summaryTextDelta"); got != "**Greeting the user**\n\nThe user said hi; reply briefly." {
		t.Errorf("reasoning deltas = %q", got)
	}
	if got := joinDeltas(tr.msgs, "item/agentMessage/delta"); got != "Hello from the fake API." {
		t.Errorf("agent message deltas = %q", got)
	}
	if rs := completedItems(tr.msgs, "reasoning"); len(rs) != 1 || !reflect.DeepEqual(rs[0]["summary"], []any{"**Greeting the user**\n\nThe user said hi; reply briefly."}) {
		t.Errorf("reasoning items = %v", rs)
	}
	if ms := completedItems(tr.msgs, "agentMessage"); len(ms) != 1 || ms[0]["text"] != "Hello from the fake API." {
		t.Errorf("agent messages = %v", ms)
	}
	if us := completedItems(tr.msgs, "userMessage"); len(us) != 1 {
		t.Errorf("user message items = %v", us)
	}
	usage := turnUsage(tr)
	if len(usage) != 1 {
		t.Fatalf("%d thread/tokenUsage/updated, want 1:\n%v", len(usage), methods(tr.msgs))
	}
	tu := usage[0]["tokenUsage"].(map[string]any)
	if !reflect.DeepEqual(tu["last"], appUsage) || !reflect.DeepEqual(tu["total"], appUsage) || usage[0]["turnId"] != tr.id {
		t.Errorf("token usage = %v, want last and total %v", usage[0], appUsage)
	}

	// A second turn on the same thread, in the same process.
	tr2 := a.runTurn(map[string]any{"threadId": thread, "input": textInput("what did I say?")}, nil)
	if ms := completedItems(tr2.msgs, "agentMessage"); tr2.completed["status"] != "completed" || len(ms) != 1 || ms[0]["text"] != "You said hi." {
		t.Errorf("second turn %v, agent messages %v", tr2.completed, ms)
	}
	usage = turnUsage(tr2)
	if len(usage) != 1 {
		t.Fatalf("%d thread/tokenUsage/updated, want 1", len(usage))
	}
	tu = usage[0]["tokenUsage"].(map[string]any)
	total := map[string]any{
		"totalTokens": 3120.0, "inputTokens": 3000.0, "cachedInputTokens": 2100.0, "cacheWriteInputTokens": 0.0,
		"outputTokens": 120.0, "reasoningOutputTokens": 50.0,
	}
	if !reflect.DeepEqual(tu["total"], total) || tu["last"].(map[string]any)["inputTokens"] != 2000.0 {
		t.Errorf("second token usage = %v, want the thread's total %v and the last request's", tu, total)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	if users, assistants := messageTexts(bodies[1], "user"), messageTexts(bodies[1], "assistant"); !containsAll(users, "hi", "what did I say?") || !containsAll(assistants, "Hello from the fake API.") {
		t.Errorf("second request: user texts %q, assistant texts %q, want the first turn in them", users, assistants)
	}
}

// strictSandbox is a workspace-write sandbox policy for turn/start that
// leaves /tmp read-only, so that the test's other temporary folders are
// outside the workspace.
var strictSandbox = map[string]any{
	"type": "workspaceWrite", "writableRoots": []any{}, "networkAccess": false,
	"excludeTmpdirEnvVar": true, "excludeSlashTmp": true,
}

func TestAppServerCommandApproval(t *testing.T) {
	t.Parallel()
	for _, decision := range []string{"accept", "decline"} {
		t.Run(decision, func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir()
			target := filepath.Join(outside, "out.txt")
			srv := startOpenAI(t,
				ResponsesReply{Items: []OutputItem{MessageItem("First a command inside the workspace."), ExecCommandCall("echo inside > in.txt && cat in.txt")}},
				ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", Arguments: map[string]any{
					"cmd":                 "echo outside > " + target,
					"sandbox_permissions": "require_escalated",
					"justification":       "Write a file outside the workspace?",
				}}}},
				ResponsesReply{Items: []OutputItem{MessageItem("Done.")}},
			)
			a := startAppServer(t, srv, "", "")
			a.initialize()
			thread := a.startThread()
			var asked []map[string]any
			tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("write two files"), "sandboxPolicy": strictSandbox},
				func(req map[string]any) any {
					asked = append(asked, req)
					if req["method"] != "item/commandExecution/requestApproval" {
						return nil
					}
					return map[string]any{"decision": decision}
				})
			defer a.save("command_approval_"+decision, outside, "/home/dev/capture/outside")
			if b, err := os.ReadFile(filepath.Join(a.work, "in.txt")); err != nil || string(b) != "inside\n" {
				t.Errorf("in.txt = %q, %v: the sandboxed command did not run", b, err)
			}
			// Only the command that asked to leave the sandbox needs approval.
			if len(asked) != 1 {
				t.Fatalf("%d approval requests, want 1: %v", len(asked), asked)
			}
			p := paramsOf(asked[0])
			if p["threadId"] != thread || p["turnId"] != tr.id || p["reason"] != "Write a file outside the workspace?" ||
				!strings.Contains(fmt.Sprint(p["command"]), "echo outside > "+target) {
				t.Errorf("approval request params = %v", p)
			}
			cmds := completedItems(tr.msgs, "commandExecution")
			if len(cmds) != 2 || cmds[1]["id"] != p["itemId"] {
				t.Fatalf("commandExecution items = %v, want 2, the second one asked about", cmds)
			}
			if cmds[0]["status"] != "completed" || cmds[0]["exitCode"] != 0.0 || cmds[0]["aggregatedOutput"] != "inside\n" {
				t.Errorf("sandboxed command = %v", cmds[0])
			}
			_, err := os.Stat(target)
			switch decision {
			case "accept":
				if err != nil || cmds[1]["status"] != "completed" || cmds[1]["exitCode"] != 0.0 {
					t.Errorf("accepted command: %v; item %v", err, cmds[1])
				}
			case "decline":
				if err == nil || cmds[1]["status"] != "declined" {
					t.Errorf("declined command: file there: %v; item %v", err == nil, cmds[1])
				}
			}
			if resolved := notifications(tr.msgs, "serverRequest/resolved"); len(resolved) != 1 || resolved[0]["requestId"] != asked[0]["id"] {
				t.Errorf("serverRequest/resolved = %v", resolved)
			}
			bodies := responsesBodies(t, srv)
			if len(bodies) != 3 {
				t.Fatalf("%d requests, want 3", len(bodies))
			}
			outs := inputOfType(bodies[2], "function_call_output")
			t.Logf("output the model got for the command (%s): %q", decision, outs[len(outs)-1]["output"])
		})
	}
}

// TestAppServerCommandApprovalRaw records what a client with the raw
// response items learns of a command it is asked about
// (command_approval_raw.jsonl): codex asks about `rm -f *` inside the
// sandbox (its policy finds it dangerous) as it asks about one the model
// wants run outside, with the same fields; the model's own call, which
// says which (sandbox_permissions), comes before the request, and the
// request's cwd is the call's workdir. Both are declined.
func TestAppServerCommandApprovalRaw(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_inside",
			Arguments: map[string]any{"cmd": "rm -f *", "workdir": "build"}}}},
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_outside",
			Arguments: map[string]any{"cmd": "rm -f *", "workdir": "build", "sandbox_permissions": "require_escalated", "justification": "Clean it outside the sandbox?"}}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Left as it was.")}},
	)
	a := startAppServer(t, srv, "", "")
	build := filepath.Join(a.work, "build")
	os.MkdirAll(build, 0o755)
	os.WriteFile(filepath.Join(build, "a.o"), []byte("x"), 0o644)
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThreadWith(map[string]any{"experimentalRawEvents": true})
	var asked []map[string]any
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("clean the build folder"), "sandboxPolicy": strictSandbox},
		func(req map[string]any) any {
			asked = append(asked, req)
			return map[string]any{"decision": "decline"}
		})
	defer a.save("command_approval_raw")
	if len(asked) != 2 {
		t.Fatalf("%d requests, want 2: %v", len(asked), asked)
	}
	for i, id := range []string{"call_inside", "call_outside"} {
		p := paramsOf(asked[i])
		if asked[i]["method"] != "item/commandExecution/requestApproval" || p["itemId"] != id || p["cwd"] != build {
			t.Errorf("request %d: %v", i, asked[i])
		}
	}
	// The raw call came before the request about it.
	var order []string
	for _, m := range tr.msgs {
		switch {
		case m["method"] == "rawResponseItem/completed":
			if it, _ := paramsOf(m)["item"].(map[string]any); it["type"] == "function_call" {
				order = append(order, "raw "+fmt.Sprint(it["call_id"]))
			}
		case m["method"] == "item/commandExecution/requestApproval":
			order = append(order, "ask "+fmt.Sprint(paramsOf(m)["itemId"]))
		}
	}
	if want := []string{"raw call_inside", "ask call_inside", "raw call_outside", "ask call_outside"}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if _, err := os.Stat(filepath.Join(build, "a.o")); err != nil {
		t.Errorf("build/a.o: %v (a declined command ran)", err)
	}
}

func TestAppServerFileChangeApproval(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	target := filepath.Join(outside, "patched.txt")
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{ApplyPatchCall("*** Begin Patch\n*** Add File: " + target + "\n+hello\n*** End Patch\n")}},
		ResponsesReply{Items: []OutputItem{MessageItem("Patched.")}},
	)
	a := startAppServer(t, srv, "", "")
	a.initialize()
	thread := a.startThread()
	var asked []map[string]any
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("patch a file outside"), "sandboxPolicy": strictSandbox},
		func(req map[string]any) any {
			asked = append(asked, req)
			if req["method"] != "item/fileChange/requestApproval" {
				return nil
			}
			return map[string]any{"decision": "accept"}
		})
	defer a.save("file_change_approval", outside, "/home/dev/capture/outside")
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello\n" {
		t.Errorf("patched.txt = %q, %v", b, err)
	}
	fcs := completedItems(tr.msgs, "fileChange")
	if len(asked) != 1 || len(fcs) != 1 || paramsOf(asked[0])["itemId"] != fcs[0]["id"] || fcs[0]["status"] != "completed" {
		t.Errorf("approval requests %v; fileChange items %v", asked, fcs)
	}
	want := []any{map[string]any{"path": target, "kind": map[string]any{"type": "add"}, "diff": "hello\n"}}
	if len(fcs) == 1 && !reflect.DeepEqual(fcs[0]["changes"], want) {
		t.Errorf("changes = %v, want %v", fcs[0]["changes"], want)
	}
}

func TestAppServerInterrupt(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("This is a long answer that streams slowly, so that the client can interrupt it.")}, Hold: true},
		ResponsesReply{Items: []OutputItem{MessageItem("Still here.")}},
	)
	a := startAppServer(t, srv, "", "")
	a.initialize()
	thread := a.startThread()
	res, _ := a.call("turn/start", map[string]any{"threadId": thread, "input": textInput("tell me a long story")})
	turn, _ := res["turn"].(map[string]any)["id"].(string)
	a.until(func(m map[string]any) bool { return m["method"] == "item/agentMessage/delta" })
	id := a.request("turn/interrupt", map[string]any{"threadId": thread, "turnId": turn})
	var gotResponse bool
	completed, seen := a.until(func(m map[string]any) bool {
		if m["id"] == id && m["method"] == nil {
			gotResponse = m["error"] == nil
		}
		return m["method"] == "turn/completed"
	})
	defer a.save("interrupt")
	if !gotResponse {
		// The response may come after turn/completed.
		resp, _ := a.until(func(m map[string]any) bool { return m["id"] == id && m["method"] == nil })
		gotResponse = resp["error"] == nil
	}
	if !gotResponse {
		t.Error("turn/interrupt failed")
	}
	tc, _ := paramsOf(completed)["turn"].(map[string]any)
	if tc["status"] != "interrupted" || tc["id"] != turn {
		t.Errorf("turn/completed turn = %v, want status interrupted", tc)
	}
	t.Logf("after turn/interrupt: %v", methods(seen))

	// The process lives on and takes the next turn on the same thread.
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("are you there?")}, nil)
	if ms := completedItems(tr.msgs, "agentMessage"); tr.completed["status"] != "completed" || len(ms) != 1 || ms[0]["text"] != "Still here." {
		t.Errorf("turn after the interrupt: %v, agent messages %v", tr.completed, ms)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	t.Logf("second request: user texts %q, assistant texts %q", messageTexts(bodies[1], "user"), messageTexts(bodies[1], "assistant"))
}

func TestAppServerImage(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Items: []OutputItem{MessageItem("Two red squares.")}})
	a := startAppServer(t, srv, "", "")
	path := filepath.Join(a.work, "red.png")
	pngBytes := writePNG(t, path)
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	a.initialize()
	thread := a.startThread()
	tr := a.runTurn(map[string]any{"threadId": thread, "input": []any{
		map[string]any{"type": "text", "text": "what is in these images?", "text_elements": []any{}},
		map[string]any{"type": "localImage", "path": path},
		map[string]any{"type": "image", "url": dataURL},
	}}, nil)
	defer a.save("image_input")
	if tr.completed["status"] != "completed" {
		t.Errorf("turn = %v", tr.completed)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(bodies))
	}
	if imgs := inputImages(bodies[0]); len(imgs) != 2 || imgs[0] != dataURL || imgs[1] != dataURL {
		t.Errorf("input images = %.200q, want the file's bytes twice", imgs)
	}
	msgs := inputOfType(bodies[0], "message")
	last, _ := json.Marshal(msgs[len(msgs)-1])
	t.Logf("user message as sent: %.1000s", last)
}

func TestAppServerResume(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("Noted: the word is heron.")}, Usage: testUsage},
		ResponsesReply{Items: []OutputItem{MessageItem("You said heron.")}},
	)
	dir, work := t.TempDir(), t.TempDir()
	first := startAppServer(t, srv, dir, work)
	first.initialize()
	thread := first.startThread()
	first.runTurn(map[string]any{"threadId": thread, "input": textInput("remember the word heron")}, nil)
	first.stop()

	// A new process picks the thread up from CODEX_HOME.
	a := startAppServer(t, srv, dir, work)
	a.initialize()
	// excludeTurns: without it the result carries the whole history and the
	// server sends a deprecationNotice.
	res, _ := a.call("thread/resume", map[string]any{"threadId": thread, "cwd": work, "approvalPolicy": "on-request", "sandbox": "workspace-write", "excludeTurns": true})
	defer a.save("resume")
	if th, _ := res["thread"].(map[string]any); th["id"] != thread {
		t.Fatalf("thread/resume result = %v", res)
	}
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("what was the word?")}, nil)
	if ms := completedItems(tr.msgs, "agentMessage"); len(ms) != 1 || ms[0]["text"] != "You said heron." {
		t.Errorf("agent messages %v", ms)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	if users, assistants := messageTexts(bodies[1], "user"), messageTexts(bodies[1], "assistant"); !containsAll(users, "remember the word heron", "what was the word?") || !containsAll(assistants, "Noted: the word is heron.") {
		t.Errorf("second request: user texts %q, assistant texts %q, want the first turn in them", users, assistants)
	}
	// The thread's total carries over from the first process. (thread/resume
	// is followed by a thread/tokenUsage/updated for the last turn.)
	usage := turnUsage(tr)
	if len(usage) != 1 {
		t.Fatalf("%d thread/tokenUsage/updated in the turn, want 1", len(usage))
	}
	tu := usage[0]["tokenUsage"].(map[string]any)
	if total := tu["total"].(map[string]any); total["inputTokens"] != 1100.0 || tu["last"].(map[string]any)["inputTokens"] != 100.0 {
		t.Errorf("token usage after resume = %v, want a total of 1000+100 input tokens and the last request's 100", tu)
	}
}

func TestAppServerUnauthorized(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t, ResponsesReply{Status: 401})
	a := startAppServer(t, srv, "", "")
	a.initialize()
	thread := a.startThread()
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("hi")}, nil)
	defer a.save("api_error_401")
	errs := notifications(tr.msgs, "error")
	if len(errs) != 1 || errs[0]["willRetry"] != false {
		t.Errorf("error notifications = %v", errs)
	}
	te, _ := tr.completed["error"].(map[string]any)
	if tr.completed["status"] != "failed" || !strings.Contains(fmt.Sprint(te["message"]), "401 Unauthorized") {
		t.Errorf("turn/completed turn = %v", tr.completed)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// oddArguments are exec_command arguments as a model might write them:
// keys in an unusual order, odd spacing, a newline, an escaped slash and a
// \u escape, none of which survives a decode and encode.
const oddArguments = "{ \"yield_time_ms\" :5000,\n  \"cmd\":\"printf 'a  b\\\\n' \\u003e odd.txt; cat odd.txt\",\"workdir\" : \".\\/\" }"

// rawItems returns the items of the rawResponseItem/completed
// notifications in msgs.
func rawItems(msgs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range notifications(msgs, "rawResponseItem/completed") {
		it, _ := p["item"].(map[string]any)
		out = append(out, it)
	}
	return out
}

// rawOfType returns the raw items of type typ, by call_id.
func rawOfType(items []map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, it := range items {
		if it["type"] == typ {
			id, _ := it["call_id"].(string)
			out[id] = it
		}
	}
	return out
}

func TestAppServerRawEvents(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("Running it."),
			{Type: "function_call", Name: "exec_command", CallID: "call_odd_bytes", ArgumentsText: oddArguments}}},
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_fails", ArgumentsText: `{"cmd":"echo oops >&2; exit 3"}`}}},
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_sandboxed",
			ArgumentsText: `{"cmd":"touch ` + filepath.Join(outside, "x") + `"}`}}},
		ResponsesReply{Items: []OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch", Input: patch}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Done.")}},
		ResponsesReply{Items: []OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_resumed", ArgumentsText: `{"cmd": "ls"}`}}},
		ResponsesReply{Items: []OutputItem{MessageItem("Listed.")}},
	)
	dir, work := t.TempDir(), t.TempDir()
	a := startAppServer(t, srv, dir, work)
	a.initializeWith(map[string]any{"experimentalApi": true})
	thread := a.startThreadWith(map[string]any{"experimentalRawEvents": true})
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("run things"), "sandboxPolicy": strictSandbox}, nil)
	a.stop()
	a.save("raw_events", outside, "/home/dev/capture/outside")
	if tr.completed["status"] != "completed" {
		t.Fatalf("turn/completed turn = %v", tr.completed)
	}
	raw := rawItems(tr.msgs)
	calls := rawOfType(raw, "function_call")
	// The model's arguments, byte for byte, under its own tool name and
	// call_id.
	if c := calls["call_odd_bytes"]; c["arguments"] != oddArguments || c["name"] != "exec_command" {
		t.Errorf("raw call = %v, want the arguments %q", c, oddArguments)
	}
	if c := rawOfType(raw, "custom_tool_call")["call_patch"]; c["input"] != patch || c["name"] != "apply_patch" {
		t.Errorf("raw patch call = %v", c)
	}
	// The outputs codex sent back are the ones the next requests carried.
	bodies := responsesBodies(t, srv)
	sent := map[string]any{}
	for _, typ := range []string{"function_call_output", "custom_tool_call_output"} {
		for _, o := range inputOfType(bodies[4], typ) {
			sent[fmt.Sprint(o["call_id"])] = o["output"]
		}
	}
	outs := rawOfType(raw, "function_call_output")
	maps.Copy(outs, rawOfType(raw, "custom_tool_call_output"))
	for _, id := range []string{"call_odd_bytes", "call_fails", "call_sandboxed", "call_patch"} {
		if outs[id] == nil || !reflect.DeepEqual(outs[id]["output"], sent[id]) {
			t.Errorf("raw output of %s = %v, want what the API got: %q", id, outs[id], sent[id])
		}
	}
	if out := fmt.Sprint(outs["call_fails"]["output"]); !strings.Contains(out, "Process exited with code 3") {
		t.Errorf("failed command's output %q", out)
	}
	// Raw items come as well for the turn's context (developer and user
	// messages), the user's message and the assistant's messages.
	var roles []string
	for _, it := range raw {
		if it["type"] == "message" {
			roles = append(roles, fmt.Sprint(it["role"]))
		}
	}
	if !containsAll(roles, "developer", "user", "assistant") {
		t.Errorf("raw message roles %v", roles)
	}

	// thread/resume takes no such switch (it is ignored): a resumed thread
	// sends no raw items.
	b := startAppServer(t, srv, dir, work)
	b.initializeWith(map[string]any{"experimentalApi": true})
	b.call("thread/resume", map[string]any{"threadId": thread, "cwd": work, "approvalPolicy": "on-request", "sandbox": "workspace-write",
		"excludeTurns": true, "experimentalRawEvents": true})
	tr = b.runTurn(map[string]any{"threadId": thread, "input": textInput("again")}, nil)
	defer b.save("raw_events_resume")
	if tr.completed["status"] != "completed" || len(completedItems(tr.msgs, "commandExecution")) != 1 {
		t.Errorf("resumed turn %v: %v", tr.completed, methods(tr.msgs))
	}
	if n := len(rawItems(tr.msgs)); n != 0 {
		t.Errorf("%d raw items after thread/resume, want none (update the backend and README: resumed threads can keep the model's bytes)", n)
	}
}

// TestAppServerRevert: thread/revert {threadId, beforeTurnId} on a thread
// started with historyMode "paginated" (as spbridge starts its threads)
// drops that turn and every later one: the answer, then the next turn's
// request to the model holds the first turn and nothing of the dropped
// ones. Recorded as revert.jsonl.
func TestAppServerRevert(t *testing.T) {
	t.Parallel()
	srv := startOpenAI(t,
		ResponsesReply{Items: []OutputItem{MessageItem("ANSWER-one")}},
		ResponsesReply{Items: []OutputItem{MessageItem("ANSWER-two")}},
		ResponsesReply{Items: []OutputItem{MessageItem("ANSWER-three")}},
		ResponsesReply{Items: []OutputItem{MessageItem("ANSWER-four")}},
	)
	a := startAppServer(t, srv, "", "")
	a.initializeWith(map[string]any{"experimentalApi": true}) // historyMode needs it
	thread := a.startThreadWith(map[string]any{"historyMode": "paginated", "experimentalRawEvents": true})
	var turns []string
	for _, m := range []string{"MARK-one", "MARK-two", "MARK-three"} {
		tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput(m)}, nil)
		if tr.completed["status"] != "completed" {
			t.Fatalf("turn %s: %v", m, tr.completed)
		}
		turns = append(turns, tr.id)
	}
	res, _ := a.call("thread/revert", map[string]any{"threadId": thread, "beforeTurnId": turns[1]})
	defer a.save("revert")
	if th, _ := res["thread"].(map[string]any); th != nil && th["id"] != thread {
		t.Errorf("thread/revert result = %v", res)
	}
	tr := a.runTurn(map[string]any{"threadId": thread, "input": textInput("MARK-four")}, nil)
	if tr.completed["status"] != "completed" {
		t.Fatalf("the turn after the revert: %v", tr.completed)
	}
	bodies := responsesBodies(t, srv)
	if len(bodies) != 4 {
		t.Fatalf("%d requests, want 4", len(bodies))
	}
	users, assistants := messageTexts(bodies[3], "user"), messageTexts(bodies[3], "assistant")
	if !containsAll(users, "MARK-one", "MARK-four") || !containsAll(assistants, "ANSWER-one") {
		t.Errorf("the request after the revert: user texts %q, assistant texts %q, want the first turn", users, assistants)
	}
	for _, gone := range []string{"MARK-two", "MARK-three", "ANSWER-two", "ANSWER-three"} {
		if slices.Contains(users, gone) || slices.Contains(assistants, gone) {
			t.Errorf("the request after the revert holds %s", gone)
		}
	}
}
