package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// newCodexE2E prepares a package and the real codex against a fake
// Responses API with these replies.
func newCodexE2E(t *testing.T, replies ...fakeapi.ResponsesReply) (*e2e, *fakeapi.OpenAIServer) {
	t.Helper()
	codexPath := fakeapi.CodexPath(t)
	srv, err := fakeapi.NewOpenAI(replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	pkg := filepath.Join(root, "work", "Poster.silverpoint")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644)
	env := append(srv.CodexEnv(t, root), "SPBRIDGE_CODEX="+codexPath, "SPBRIDGE_STATE_DIR="+filepath.Join(root, "state"))
	return &e2e{t: t, pkg: pkg, env: env}, srv
}

// inputTexts returns the texts of a Responses request's user input, in
// order.
func inputTexts(body []byte) []string {
	var out []string
	gjson.GetBytes(body, "input").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() != "user" {
			return true
		}
		m.Get("content").ForEach(func(_, c gjson.Result) bool {
			if c.Get("type").String() == "input_text" {
				out = append(out, c.Get("text").String())
			}
			return true
		})
		return true
	})
	return out
}

// transports runs a test once per codex transport.
func transports(t *testing.T, test func(t *testing.T, transport string)) {
	t.Parallel()
	for _, tr := range []string{"app-server", "exec"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			test(t, tr)
		})
	}
}

func TestE2ECodexTextAndResume(t *testing.T) { transports(t, testCodexTextAndResume) }

func testCodexTextAndResume(t *testing.T, transport string) {
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Hello from the fake Responses API.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("You said heron.")}})
	e.run(nil, "--backend", "codex", "--codex-transport", transport, "remember heron", "what did I say?")
	if e.code != 0 {
		e.fail("exit %d", e.code)
	}
	got := e.items()
	want := []string{"user: remember heron", "assistant: Hello from the fake Responses API.", "user: what did I say?", "assistant: You said heron."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		e.fail("items %q", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The second turn resumed the thread: the API saw the whole history.
	second := string(reqs[1].Body)
	if !strings.Contains(second, "remember heron") || !strings.Contains(second, "Hello from the fake Responses API.") || !strings.Contains(second, "what did I say?") {
		t.Errorf("the second request lacks the history: %.500s", second)
	}
	c := e.conv()
	if c.Provider != "codex" || c.Usage.Input == "0" || c.EstimatedCost.Kind != archive.CostUnknown {
		e.fail("provider %q usage %+v cost %+v", c.Provider, c.Usage, c.EstimatedCost)
	}
}

func TestE2ECodexReasoningCommandPatch(t *testing.T) { transports(t, testCodexReasoningCommandPatch) }

func testCodexReasoningCommandPatch(t *testing.T, transport string) {
	patch := "*** Begin Patch\n*** Add File: made-by-codex.txt\n+hello from the patch\n*** End Patch\n"
	e, _ := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ReasoningItem("Thinking it over"), fakeapi.ExecCommandCall("echo from-the-command")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall(patch)}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
	e.run(nil, "--backend", "codex", "--codex-transport", transport, "do things")
	got := e.items()
	if e.code != 0 || !containsStr(got, "thinking: Thinking it over") || !containsStr(got, "tool: shell echo from-the-command succeeded") ||
		got[len(got)-2] != "assistant: Done." || got[len(got)-1] != "notice: Changed 1 file: made-by-codex.txt (created, +1)." {
		e.fail("exit %d, items %q", e.code, got)
	}
	var patchItem archive.Item
	for _, it := range e.conv().Items {
		if it.String("name") == "apply_patch" {
			patchItem = it
		}
	}
	if patchItem.IsZero() || patchItem.String("status") != archive.StatusSucceeded {
		e.fail("no succeeded apply_patch item in %q", got)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(e.pkg), "made-by-codex.txt"))
	if err != nil || string(data) != "hello from the patch\n" {
		t.Errorf("the patch's file: %q, %v", data, err)
	}
}

func TestE2ECodexNotLoggedIn(t *testing.T) { transports(t, testCodexNotLoggedIn) }

func testCodexNotLoggedIn(t *testing.T, transport string) {
	e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Status: 401})
	e.run(nil, "--backend", "codex", "--codex-transport", transport, "hello?")
	got := e.items()
	if e.code != 1 || !strings.Contains(got[len(got)-1], "spbridge login --backend codex") {
		e.fail("exit %d, items %q", e.code, got)
	}
}

func TestE2ECodexImage(t *testing.T) { transports(t, testCodexImage) }

func testCodexImage(t *testing.T, transport string) {
	e, srv := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("A small square.")}})
	img, err := os.ReadFile("../../testdata/packages/Poster.silverpoint/agent/images/83caf76779373891ebfc9cd602157d32b82b34d926fa14856356a3219ed5fc94.png")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "square.png")
	os.WriteFile(file, img, 0o644)
	e.run(nil, "--backend", "codex", "--codex-transport", transport, "--image", file, "what is this?")
	if e.code != 0 {
		e.fail("exit %d", e.code)
	}
	reqs := srv.Requests()
	found := false
	gjson.GetBytes(reqs[len(reqs)-1].Body, "input").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, c gjson.Result) bool {
			if url := c.Get("image_url").String(); c.Get("type").String() == "input_image" && strings.HasPrefix(url, "data:image/png;base64,") {
				data, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/png;base64,"))
				found = found || bytes.Equal(data, img)
			}
			return true
		})
		return true
	})
	if !found {
		t.Error("no input_image with the file's bytes reached the API")
	}
	if texts := inputTexts(reqs[len(reqs)-1].Body); !containsStr(texts, "what is this?") {
		t.Errorf("user texts %q", texts)
	}
}

// escalated is a command the model asks to run outside the sandbox.
func escalated(cmd string) fakeapi.OutputItem {
	return fakeapi.OutputItem{Type: "function_call", Name: "exec_command", Arguments: map[string]any{
		"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Write outside the workspace?"}}
}

// TestE2ECodexApproval: the app-server asks before a command leaves the
// sandbox; --allow-tool shell accepts, no terminal and no --allow-tool
// declines.
func TestE2ECodexApproval(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir()
			target := filepath.Join(outside, "out.txt")
			e, _ := newCodexE2E(t,
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{escalated("echo outside > " + target)}},
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
			args := []string{"--backend", "codex", "--codex-transport", "app-server"}
			if allow {
				args = append(args, "--allow-tool", "shell")
			}
			e.run(nil, append(args, "write outside")...)
			got := e.items()
			_, err := os.Stat(target)
			status := "denied"
			if allow {
				status = "succeeded"
			}
			if e.code != 0 || !containsStr(got, "toolApproval: ") || !containsStr(got, "tool: shell echo outside > "+target+" "+status) || (err == nil) != allow {
				e.fail("exit %d, items %q, file written %v", e.code, got, err == nil)
			}
		})
	}
}

// TestE2ECodexInterrupt: Ctrl-C mid-stream; the app-server interrupts the
// turn and stays up, the partial reply is kept.
func TestE2ECodexInterrupt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("streaming slowly ", 200)
	e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(long)}, ChunkDelay: 50 * time.Millisecond})
	e.run(func(cmd *exec.Cmd, ended <-chan struct{}) {
		if e.stdout.waitFor("streaming", ended) {
			cmd.Process.Signal(syscall.SIGINT)
		}
	}, "--backend", "codex", "--codex-transport", "app-server", "talk")
	got := e.items()
	if e.code != exitInterrupted || len(got) < 3 || !strings.HasPrefix(got[1], "assistant: streaming") || got[len(got)-1] != "notice: Interrupted." {
		e.fail("exit %d, items %q", e.code, got)
	}
}

// TestE2ECodexEstimatedCost: codex reports no cost; on a model in the
// bundled price table the cost is estimated.
func TestE2ECodexEstimatedCost(t *testing.T) {
	transports(t, func(t *testing.T, transport string) {
		e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Priced.")},
			Usage: fakeapi.ResponsesUsage{InputTokens: 1000, OutputTokens: 100, TotalTokens: 1100}})
		e.run(nil, "--backend", "codex", "--codex-transport", transport, "--model", "gpt-5", "price this")
		c := e.conv()
		if e.code != 0 || c.Model != "gpt-5" || c.EstimatedCost.Kind != archive.CostEstimated || c.EstimatedCost.Dollars != "0.00225" {
			e.fail("model %q cost %+v usage %+v", c.Model, c.EstimatedCost, c.Usage)
		}
	})
}

// TestE2ECodexExecRefused: with --codex-transport exec, a command codex's
// exec policy forbids, which codex refuses without running it and codex
// exec --json reports nothing of, shows in the terminal as a denied tool
// with codex's reason, before the reply that follows it, and conversation
// show lists it so.
func TestE2ECodexExecRefused(t *testing.T) {
	t.Parallel()
	e, _ := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall("rm -f notes.txt")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("It was refused.")}})
	home := ""
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			home = v
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "rules"), 0o700); err != nil {
		t.Fatal(err)
	}
	rules := `prefix_rule(pattern=["rm"], decision="forbidden", justification="deleting files is not allowed here")` + "\n"
	if err := os.WriteFile(filepath.Join(home, "rules", "default.rules"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(filepath.Dir(e.pkg), "notes.txt")
	os.WriteFile(notes, []byte("keep me\n"), 0o644)
	e.run(nil, "--backend", "codex", "--codex-transport", "exec", "--color", "never", "tidy up")
	const line = "tool `rm -f notes.txt` (deleting files is not allowed here) [denied]\n"
	out := e.stdout.String()
	if e.code != 0 || !strings.Contains(out, line) || strings.Index(out, line) > strings.Index(out, "It was refused.") {
		e.fail("want %q before the reply", line)
	}
	if data, err := os.ReadFile(notes); err != nil || string(data) != "keep me\n" {
		t.Errorf("notes.txt: %q, %v", data, err)
	}
	cmd := exec.Command(spbridgeBin(t), "conversation", "show", e.pkg)
	cmd.Env = e.env
	shown, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(shown), "Tool shell: rm -f notes.txt (deleting files is not allowed here) [denied]\n") {
		t.Errorf("conversation show (%v):\n%s", err, shown)
	}
}
