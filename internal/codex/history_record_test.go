//go:build unix

package codex

// Recordings of the Codex CLI's own session files, made the way a user makes
// them (codex exec, codex exec resume, codex app-server) against the fake model API:
//
//	go test ./internal/codex -run TestRecord -record
//
// Each writes its session file(s) into testdata/history/ under a fixed
// name, with the throwaway folders' paths replaced by /work/project (and
// the home folder's by /home/user), so that the fixtures do not depend on the
// machine that recorded them.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/history/historytest"
	"spbridge/internal/itemmap"
)

// record is -record: the recording tests (here and in
// e2e_exechistory_test.go) write their fixtures from the real codex.
var record = flag.Bool("record", false, "record testdata/exec_history.* and testdata/history/ from the real codex")

// sessionID is the thread id of codex exec's --json output (its
// thread.started).
func sessionID(t *testing.T, out []byte) string {
	t.Helper()
	for _, l := range bytes.Split(out, []byte("\n")) {
		var v struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal(l, &v) == nil && v.Type == "thread.started" && v.ThreadID != "" {
			return v.ThreadID
		}
	}
	t.Fatalf("no session id in\n%s", out)
	return ""
}

func TestRecordCodex(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.CodexPath(t)
	srv, err := fakeapi.NewOpenAI(
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ReasoningItem("Greeting back."), fakeapi.MessageItem("Hello! How can I help?")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Running a command."), fakeapi.ExecCommandCall("echo hello from codex")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall("*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n*** End Patch\n")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ApplyPatchCall("*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall("echo failing >&2; exit 3")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done: notes.txt is edited and the command failed with 3.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("It is red.")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	work := filepath.Join(root, "project")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "red.png"), cutPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	env := srv.CodexEnv(t, root)
	pre := []string{"-c", `sandbox_mode="workspace-write"`, "exec"}
	out := historytest.Run(t, work, env, "Say hello", bin, append(pre, "--json", "--skip-git-repo-check", "-")...)
	id := sessionID(t, out)
	historytest.Run(t, work, env, "Use the tools", bin, append(pre, "resume", "--json", "--skip-git-repo-check", id, "-")...)
	historytest.Run(t, work, env, "What colour is this?", bin, append(pre, "--json", "-i", "red.png", "--skip-git-repo-check", "-")...)
	repl := strings.NewReplacer(work, "/work/project", root, "/home/user")
	for _, n := range historytest.Keep(t, filepath.Join(root, "codex-home", "sessions"), "rollout-*.jsonl", filepath.Join("codex", "sessions"), repl) {
		t.Log(n)
	}
}

// TestRecordCodexPicture records a codex exec turn with a picture codex
// can read (`codex exec -i blue.png`): codex-picture/sessions/….
func TestRecordCodexPicture(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.CodexPath(t)
	srv, err := fakeapi.NewOpenAI(fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("It is blue.")}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	work := filepath.Join(root, "project")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "blue.png"), bluePNG(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := srv.CodexEnv(t, root)
	historytest.Run(t, work, env, "What colour is this?", bin, "-c", `sandbox_mode="workspace-write"`, "exec", "--json", "-i", "blue.png", "--skip-git-repo-check", "-")
	if reqs := srv.Requests(); len(reqs) == 0 || !bytes.Contains(reqs[len(reqs)-1].Body, []byte("data:image/png;base64,")) {
		t.Fatalf("codex did not send the picture")
	}
	repl := strings.NewReplacer(work, "/work/project", root, "/home/user")
	for _, n := range historytest.Keep(t, filepath.Join(root, "codex-home", "sessions"), "rollout-*.jsonl", filepath.Join("codex-picture", "sessions"), repl) {
		t.Log(n)
	}
}

// allowAll is a host that allows every request.
type allowAll struct{}

func (allowAll) Change(itemmap.Change) {}

func (allowAll) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{Allow: true}
}

// TestRecordCodexAppServer records a thread run through codex app-server,
// as an editor runs it (spbridge's own codex backend): reasoning, a plan,
// a command, then an interrupted turn.
func TestRecordCodexAppServer(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	bin := fakeapi.CodexPath(t)
	srv, err := fakeapi.NewOpenAI(
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ReasoningItem("Planning."),
			{Type: "function_call", Name: "update_plan", Arguments: map[string]any{"plan": []any{
				map[string]any{"step": "List the files", "status": "in_progress"}, map[string]any{"step": "Report", "status": "pending"}}}}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.ExecCommandCall("ls")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("There is one file: red.png.")}},
		fakeapi.ResponsesReply{Hold: true, Items: []fakeapi.OutputItem{fakeapi.MessageItem("This answer is cut short by the interrupt.")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	work := filepath.Join(root, "project")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "red.png"), cutPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	b := New(Options{Options: backend.Options{Program: bin, Dir: work, Env: srv.CodexEnv(t, root),
		Grace: 2 * time.Second, IdleTimeout: time.Minute}, Transport: TransportAppServer})
	defer b.Close()
	end := b.Turn(context.Background(), backend.Message{Text: "List the files"}, allowAll{})
	if end == nil || end.Status != itemmap.TurnCompleted {
		t.Fatalf("first turn: %+v", end)
	}
	h := &interruptOnText{b: b}
	end = b.Turn(context.Background(), backend.Message{Text: "Tell me a long story"}, h)
	if end == nil || end.Status != itemmap.TurnInterrupted {
		t.Fatalf("second turn: %+v", end)
	}
	b.Close()
	repl := strings.NewReplacer(work, "/work/project", root, "/home/user")
	for _, n := range historytest.Keep(t, filepath.Join(root, "codex-home", "sessions"), "rollout-*.jsonl", filepath.Join("codex-app", "sessions"), repl) {
		t.Log(n)
	}
}

// interruptOnText interrupts the turn once the assistant's text streams.
type interruptOnText struct {
	b    *Backend
	once sync.Once
}

func (h *interruptOnText) Change(c itemmap.Change) {
	if c.Item.Type() == archive.TypeAssistant {
		h.once.Do(func() { go h.b.Interrupt() })
	}
}

func (h *interruptOnText) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{Allow: true}
}
