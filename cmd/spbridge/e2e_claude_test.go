package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
	"spbridge/internal/restore"
)

func restoreText(c *archive.Conversation) string { return restore.Prefix(c.Items, c.History) }

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// removeBuilt removes what spbridgeBin built, once the tests are done.
type removeBuilt struct{ m *testing.M }

func (r removeBuilt) Run() int {
	code := r.m.Run()
	closeACPClient()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	return code
}

// spbridgeBin builds the spbridge command once for the end-to-end tests
// (and testscript's scripts); TestMain removes it at the end.
func spbridgeBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spbridge-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "spbridge")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = &exec.ExitError{Stderr: out}
		}
	})
	if buildErr != nil {
		t.Fatalf("build spbridge: %v", buildErr)
	}
	return builtBin
}

// e2e is one end-to-end run of spbridge run with the real claude.
type e2e struct {
	t      *testing.T
	srv    *fakeapi.Server
	pkg    string
	env    []string
	stdout syncBuffer
	stderr syncBuffer
	code   int
}

func newE2E(t *testing.T, replies ...fakeapi.Reply) *e2e {
	t.Helper()
	claude := fakeapi.ClaudePath(t)
	srv, err := fakeapi.NewAnthropic(replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	pkg := filepath.Join(root, "work", "Poster.silverpoint")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	os.MkdirAll(filepath.Join(home, "tmp"), 0o700)
	env := append(srv.ClaudeEnv(home), "SPBRIDGE_CLAUDE="+claude, "SPBRIDGE_STATE_DIR="+filepath.Join(root, "state"))
	return &e2e{t: t, srv: srv, pkg: pkg, env: env}
}

// run runs spbridge run PKG args… to its end (a run that hangs is ended by
// go test's own timeout: nothing here waits for a time); onStart, when set,
// gets the process once it runs, and a channel closed when it ended.
func (e *e2e) run(onStart func(cmd *exec.Cmd, ended <-chan struct{}), args ...string) {
	e.t.Helper()
	cmd := exec.Command(spbridgeBin(e.t), append([]string{"run", e.pkg}, args...)...)
	cmd.Env = e.env
	cmd.Stdout = &e.stdout
	cmd.Stderr = &e.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	ended := make(chan struct{})
	var wg sync.WaitGroup
	if onStart != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			onStart(cmd, ended)
		}()
	}
	cmd.Wait()
	close(ended)
	wg.Wait()
	e.code = cmd.ProcessState.ExitCode()
}

func (e *e2e) conv() *archive.Conversation {
	e.t.Helper()
	p, err := archive.Open(e.pkg, archive.KindDocument, true)
	if err != nil || p.Unreadable != "" {
		e.t.Fatalf("open saved conversation: %v %s", err, p.Unreadable)
	}
	return p.Conv
}

func (e *e2e) items() []string {
	var out []string
	for _, it := range e.conv().Items {
		s := it.Type() + ": " + it.String("text")
		if it.Type() == archive.TypeTool {
			s = it.Type() + ": " + it.String("name") + " " + it.String("summary") + " " + it.String("status")
		}
		out = append(out, s)
	}
	return out
}

func (e *e2e) fail(format string, args ...any) {
	e.t.Helper()
	e.t.Errorf(format, args...)
	e.t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", e.code, e.stdout.String(), e.stderr.String())
}

func TestE2EClaudeText(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello from the fake model."}}})
	e.run(nil, "hi there")
	if e.code != 0 || !strings.Contains(e.stdout.String(), "Hello from the fake model.") {
		e.fail("exit %d", e.code)
	}
	c := e.conv()
	if got := e.items(); len(got) != 2 || got[0] != "user: hi there" || got[1] != "assistant: Hello from the fake model." {
		e.fail("items %q", got)
	}
	if c.Provider != "claude-code" || c.Model == "" || c.EstimatedCost.Kind != archive.CostReported || c.Usage.Input == "0" {
		e.fail("provider %q model %q cost %+v usage %+v", c.Provider, c.Model, c.EstimatedCost, c.Usage)
	}
	if len(c.History) != 2 || c.History[0].Role != "user" || c.History[1].Content[0].String("text") != "Hello from the fake model." {
		e.fail("history %+v", c.History)
	}
	// The message went on stdin, never on the command line.
	reqs := e.srv.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "hi there") {
		t.Errorf("the message did not reach the API")
	}
}

// TestE2EClaudePlainFolder: run on a git repository (a folder that is no
// document package) runs its turn in the repository, keeps the
// conversation in the state folder and writes nothing into the repository
// (git status stays clean); a second run there continues it (the model is
// told the conversation so far), the commands reading a conversation take
// the folder, and serve opening the folder lists that conversation and
// loads it. --plain-folder keeps it in the folder's agent/ instead.
func TestE2EClaudePlainFolder(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git: %v", err)
	}
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello from the fake model."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Still here."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "In the folder."}}})
	repo := e.pkg
	if err := os.Remove(filepath.Join(repo, "document.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=spbridge", "-c", "user.email=spbridge@example.com"}, args...)...)
		cmd.Dir, cmd.Env = repo, e.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	git("add", "main.go")
	git("commit", "-q", "-m", "the first")

	e.run(nil, "hi there")
	if e.code != 0 || !strings.Contains(e.stdout.String(), "Hello from the fake model.") ||
		!strings.Contains(e.stderr.String(), "is not a document package: its conversation is kept in spbridge's state folder") {
		e.fail("the first run")
	}
	if st := git("status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("git status after the first run:\n%s", st)
	}
	e.run(nil, "and again")
	if e.code != 0 || !strings.Contains(e.stdout.String(), "Still here.") || strings.Count(e.stderr.String(), "not a document package") != 1 {
		e.fail("the second run")
	}
	if st := git("status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("git status after the second run:\n%s", st)
	}
	reqs := e.srv.Requests()
	sent := strings.Join(userTexts(reqs[len(reqs)-1].Body), "\n")
	if !strings.Contains(sent, "# Conversation so far") || !strings.Contains(sent, "hi there") || !strings.Contains(sent, "Hello from the fake model.") || !strings.HasSuffix(sent, "and again") {
		t.Errorf("the second run sent %q", sent)
	}
	// The CLI worked in the repository itself.
	if body := string(reqs[0].Body); !strings.Contains(body, repo) {
		t.Errorf("the first request does not name the repository %s as the working folder", repo)
	}
	show := exec.Command(spbridgeBin(t), "conversation", "show", repo)
	show.Env = e.env
	out, err := show.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "User: hi there") || !strings.Contains(string(out), "Assistant: Still here.") {
		t.Errorf("conversation show of the folder: %v\n%s", err, out)
	}

	// serve opening the folder: the same conversation, listed and loaded.
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": repo,
		"steps": []any{
			map[string]any{"op": "initialize"}, // 0
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": repo}}, // 1
			map[string]any{"op": "closeStdin"},
		},
	})
	list, _ := response(t, events, 1)["sessions"].([]any)
	if len(list) != 1 {
		t.Fatalf("serve lists %v for the folder, want the one conversation", list)
	}
	first, _ := list[0].(map[string]any)
	id, _ := first["sessionId"].(string)
	if first["title"] != "hi there" || first["cwd"] != repo || id == "" {
		t.Errorf("serve lists %v", first)
	}
	events = runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": repo,
		"steps": []any{
			map[string]any{"op": "initialize"},                                                // 0
			map[string]any{"op": "loadSession", "sessionId": id, "cwd": repo, "saveAs": "s1"}, // 1
			map[string]any{"op": "closeStdin"},
		},
	})
	if _, text := updatesOf(events); !strings.Contains(text, "Hello from the fake model.") || !strings.Contains(text, "Still here.") {
		t.Errorf("serve's load of the folder's conversation replayed %q", text)
	}
	if st := git("status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("git status after serve:\n%s", st)
	}

	e.run(nil, "--plain-folder", "in the folder")
	if got := e.items(); e.code != 0 || len(got) != 2 || got[0] != "user: in the folder" || got[1] != "assistant: In the folder." {
		e.fail("items %q", got)
	}
}

func TestE2EClaudeThinking(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "thinking", Thinking: "Let me think about it."}, {Text: "Thought it through."}}})
	e.run(nil, "--json", "think")
	if got := e.items(); e.code != 0 || len(got) != 3 || got[1] != "thinking: Let me think about it." || got[2] != "assistant: Thought it through." {
		e.fail("items %q", got)
	}
	// --json: one JSON line per item change, the user's item first, the
	// reply growing under one id: added whole, then appends; last, the
	// turnEnd record with the turn's usage, context and cost.
	lines := strings.Split(strings.TrimSpace(e.stdout.String()), "\n")
	if len(lines) < 4 {
		e.fail("%d JSON lines", len(lines))
		return
	}
	end := gjson.Parse(lines[len(lines)-1])
	lines = lines[:len(lines)-1]
	if end.Get("type").String() != "turnEnd" || end.Get("status").String() != "completed" || end.Get("usage.input").Int() == 0 ||
		end.Get("contextWindow").Int() == 0 || end.Get("cost.kind").String() != "reported" || end.Get("cost.usd").Float() == 0 {
		e.fail("the last line is no turnEnd record: %s", end.Raw)
	}
	ids := map[string]string{}
	texts := map[string]string{}
	for i, l := range lines {
		v := gjson.Parse(l)
		if v.Get("op").String() == "append" {
			if v.Get("field").String() != "text" || texts[v.Get("id").String()] == "" {
				e.fail("line %d appends to no item: %s", i, l)
			}
			texts[v.Get("id").String()] += v.Get("text").String()
			continue
		}
		if !gjson.Valid(l) || v.Get("op").String() == "" || v.Get("item.id").String() == "" {
			e.fail("line %d is not an item change: %s", i, l)
			continue
		}
		if i == 0 && (v.Get("op").String() != "add" || v.Get("item.type").String() != "user") {
			e.fail("first line %s", l)
		}
		ids[v.Get("item.type").String()] = v.Get("item.id").String()
		texts[v.Get("item.id").String()] = v.Get("item.text").String()
	}
	saved := e.conv().Items[2]
	if ids["assistant"] != saved.ID() || texts[saved.ID()] != saved.String("text") {
		e.fail("the streamed item %s %q is not the saved one %s %q", ids["assistant"], texts[ids["assistant"]], saved.ID(), saved.String("text"))
	}
}

func bashRound(cmd string) []fakeapi.Reply {
	return []fakeapi.Reply{
		{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_e2e_1", Name: "Bash", Input: map[string]any{"command": cmd, "description": "Make a file"}}}},
		{Blocks: []fakeapi.Block{{Text: "Done with the command."}}},
	}
}

func TestE2EClaudeToolAllowed(t *testing.T) {
	t.Parallel()
	e := newE2E(t, bashRound("touch made-by-e2e.txt && echo made")...)
	e.run(nil, "--allow-tool", "Bash", "make the file")
	work := filepath.Dir(e.pkg)
	if _, err := os.Stat(filepath.Join(work, "made-by-e2e.txt")); err != nil {
		e.fail("the allowed command did not run: %v", err)
	}
	got := e.items()
	want := "tool: Bash touch made-by-e2e.txt && echo made succeeded"
	// The turn ends with what it changed in the folder.
	if e.code != 0 || !containsStr(got, want) || got[len(got)-2] != "assistant: Done with the command." ||
		got[len(got)-1] != "notice: Changed 1 file: made-by-e2e.txt (created)." {
		e.fail("items %q", got)
	}
	reqs := e.srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, `"tool_use_id":"toolu_e2e_1"`) || !strings.Contains(last, "made") {
		t.Errorf("the tool result did not reach the API: %.300s", last)
	}
}

func TestE2EClaudeToolDenied(t *testing.T) {
	t.Parallel()
	e := newE2E(t, bashRound("touch made-by-e2e.txt && echo made")...)
	e.run(nil, "make the file") // no terminal, no --allow-tool: denied
	work := filepath.Dir(e.pkg)
	if _, err := os.Stat(filepath.Join(work, "made-by-e2e.txt")); err == nil {
		e.fail("the denied command ran")
	}
	got := e.items()
	if e.code != 0 || !containsStr(got, "tool: Bash touch made-by-e2e.txt && echo made denied") || !containsStr(got, "toolApproval: ") {
		e.fail("items %q", got)
	}
}

func TestE2EClaudeInterrupt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("counting slowly ", 200)
	// The reply stops after its first chunk until claude hangs up: the
	// Ctrl-C always finds it streaming, however busy the machine.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: long}}, Hold: hold})
	e.run(func(cmd *exec.Cmd, ended <-chan struct{}) {
		// Ctrl-C once the first words arrived.
		if e.stdout.waitFor("counting", ended) {
			cmd.Process.Signal(syscall.SIGINT)
		}
	}, "count")
	got := e.items()
	if e.code != exitInterrupted || len(got) < 3 || !strings.HasPrefix(got[1], "assistant: counting") || got[len(got)-1] != "notice: Interrupted." {
		e.fail("exit %d, items %q", e.code, got)
	}
	if a := got[1]; len(a) >= len("assistant: ")+len(long) {
		e.fail("the reply was not cut: %d bytes", len(a))
	}
}

// syncBuffer is a bytes.Buffer that a running command may write while the
// test reads it, or waits for what it writes.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed at the next write; nil when no one waits
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

// waitFor waits until the buffer holds s, or until stop is closed (the
// writer ended); it reports whether the buffer holds s.
func (b *syncBuffer) waitFor(s string, stop <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if strings.Contains(b.buf.String(), s) {
			b.mu.Unlock()
			return true
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-stop:
			return strings.Contains(b.String(), s)
		}
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestE2EClaudeAPIError(t *testing.T) {
	t.Parallel()
	// Claude Code tries a rejected request again in other forms (six
	// requests in the fixtures); every one is refused.
	var refusals []fakeapi.Reply
	for range 10 {
		refusals = append(refusals, fakeapi.Reply{Status: 400, ErrorMessage: "bad request from the fake"})
	}
	e := newE2E(t, refusals...)
	// The turn ends on the API's refusal, not on the idle timeout: with a
	// day's idle timeout, only the refusal can end it.
	e.run(nil, "--idle-timeout", "24h", "fail please")
	got := e.items()
	if e.code != 1 || len(got) < 2 || !strings.HasPrefix(got[len(got)-1], "failure: ") || !strings.Contains(got[len(got)-1], "bad request from the fake") {
		e.fail("exit %d, items %q", e.code, got)
	}
}

func TestE2EClaudeImage(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "A small square."}}})
	img, err := os.ReadFile("../../testdata/packages/Poster.silverpoint/agent/images/83caf76779373891ebfc9cd602157d32b82b34d926fa14856356a3219ed5fc94.png")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "square.png")
	os.WriteFile(file, img, 0o644)
	e.run(nil, "--image", file, "what is this?")
	if e.code != 0 {
		e.fail("exit %d", e.code)
	}
	reqs := e.srv.Requests()
	body := reqs[len(reqs)-1].Body
	found := false
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").String() == "image" && b.Get("source.media_type").String() == "image/png" {
				data, _ := base64.StdEncoding.DecodeString(b.Get("source.data").String())
				found = found || bytes.Equal(data, img)
			}
			return true
		})
		return true
	})
	if !found {
		t.Errorf("no image block with the file's bytes reached the API")
	}
	c := e.conv()
	if !c.Items[0].Bool("hasImage") || c.History[0].Content[1].Type() != archive.BlockImage {
		e.fail("the image is not in the conversation: %v", c.Items[0].Map())
	}
	if _, err := os.Stat(filepath.Join(e.pkg, "agent", "images", c.History[0].Content[1].String("sha256")+".png")); err != nil {
		e.fail("the image was not stored: %v", err)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// userTexts returns the user's own text blocks of a Messages API request,
// without the CLI's system reminders.
func userTexts(body []byte) []string {
	var out []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() != "user" {
			return true
		}
		c := m.Get("content")
		if c.Type == gjson.String {
			out = append(out, c.String())
			return true
		}
		c.ForEach(func(_, b gjson.Result) bool {
			if t := b.Get("text").String(); b.Get("type").String() == "text" && !strings.HasPrefix(t, "<system-reminder>") && !strings.HasPrefix(t, "[Image") {
				out = append(out, t)
			}
			return true
		})
		return true
	})
	return out
}

// TestE2EClaudeRestore runs a turn, lets claude exit, and runs two more
// turns in a second spbridge run: the first of them starts a new session
// told "# Conversation so far", the second continues it without the prefix;
// the prefix reaches the CLI only.
func TestE2EClaudeRestore(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Noted the zebra."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "You told me about a zebra."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Third reply."}}})
	state := t.TempDir()
	e.env = append(e.env, "SPBRIDGE_STATE_DIR="+state)
	// Record claude's command lines through a wrapper.
	argvLog := filepath.Join(t.TempDir(), "argv.log")
	wrapper := filepath.Join(t.TempDir(), "claude")
	real := fakeapi.ClaudePath(t)
	os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$@\" >> "+argvLog+"\nexec "+real+" \"$@\"\n"), 0o755)
	e.env = append(e.env, "SPBRIDGE_CLAUDE="+wrapper)

	e.run(nil, "remember ZEBRA-7731 please")
	if e.code != 0 {
		e.fail("first run: exit %d", e.code)
	}
	saved := e.conv()
	e.stdout, e.stderr = syncBuffer{}, syncBuffer{}
	e.run(nil, "what did I say?", "and now?")
	if e.code != 0 {
		e.fail("second run: exit %d", e.code)
	}

	reqs := e.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	second, third := userTexts(reqs[1].Body), userTexts(reqs[2].Body)
	want := "# Conversation so far\n" + "User: remember ZEBRA-7731 please\n\nAssistant: Noted the zebra." + restore.Closing + "what did I say?"
	if len(second) != 1 || second[0] != want {
		t.Errorf("the new session's first user text = %q, want %q", second, want)
	}
	if got := restoreText(saved) + "what did I say?"; got != want {
		t.Errorf("restore.Prefix gives %q", got)
	}
	if len(third) != 2 || third[0] != want || third[1] != "and now?" {
		t.Errorf("the third turn's user texts = %q (want the history, then the message without a prefix)", third)
	}
	if s2, s3 := reqs[1].Header.Get("X-Claude-Code-Session-Id"), reqs[2].Header.Get("X-Claude-Code-Session-Id"); s2 == "" || s2 != s3 || s2 == reqs[0].Header.Get("X-Claude-Code-Session-Id") {
		t.Errorf("sessions: %q, %q, %q: want a new one for the second run, kept for the third turn", reqs[0].Header.Get("X-Claude-Code-Session-Id"), s2, s3)
	}
	argv, _ := os.ReadFile(argvLog)
	turns := 0
	for _, l := range strings.Split(string(argv), "\n") {
		if strings.HasPrefix(l, "-p ") {
			turns++
		}
	}
	if turns != 2 || strings.Contains(string(argv), "--resume") {
		t.Errorf("claude's command lines:\n%s\nwant two processes, none with --resume", argv)
	}

	// The prefix went to the CLI only.
	conv, _ := os.ReadFile(filepath.Join(e.pkg, "agent", "conversation.json"))
	logs, _ := filepath.Glob(filepath.Join(state, "audit", "*"))
	var logData []byte
	for _, l := range logs {
		d, _ := os.ReadFile(l)
		logData = append(logData, d...)
	}
	for name, data := range map[string]string{"conversation.json": string(conv), "audit log": string(logData), "stdout": e.stdout.String(), "stderr": e.stderr.String()} {
		if strings.Contains(data, "Conversation so far") || strings.Contains(data, "User: remember ZEBRA-7731") {
			t.Errorf("the prefix is in the %s", name)
		}
	}
	texts := e.items()
	if len(texts) != 6 || texts[2] != "user: what did I say?" || texts[4] != "user: and now?" {
		e.fail("items %q", texts)
	}
	// Three turns, three records, the chain whole.
	cmd := exec.Command(spbridgeBin(t), "audit", "verify", e.pkg)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok: 3 records, keyed (HMAC-SHA-256)\n") {
		t.Errorf("audit verify: %v\n%s", err, out)
	}
}

// TestE2EClaudeNotLoggedIn: the fake API refuses the key; the failure says
// how to log in.
func TestE2EClaudeNotLoggedIn(t *testing.T) {
	t.Parallel()
	var refusals []fakeapi.Reply
	for range 10 {
		refusals = append(refusals, fakeapi.Reply{Status: 401, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"})
	}
	e := newE2E(t, refusals...)
	e.run(nil, "hello?")
	got := e.items()
	if e.code != 1 || len(got) == 0 || !strings.Contains(got[len(got)-1], "spbridge login --backend claude") {
		e.fail("exit %d, items %q", e.code, got)
	}
}
