package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/proctest"
	"spbridge/internal/restore"
)

// fakeCodexEnv turns the test binary into a misbehaving codex; its value
// is the mode.
const fakeCodexEnv = "SPBRIDGE_FAKE_CODEX"

// fakeCodex plays codex (exec, or app-server when "app-server" is among
// the arguments) as mode says, and returns its exit status.
func fakeCodex(mode string) int {
	app := false
	for _, a := range os.Args[1:] {
		app = app || a == "app-server"
	}
	emit := func(v any) {
		data, _ := json.Marshal(v)
		os.Stdout.Write(append(data, '\n'))
	}
	if !app {
		switch mode {
		case "deaf": // never reads its prompt
			select {}
		case "silent": // reads its prompt, says nothing
			io.Copy(io.Discard, os.Stdin)
			select {}
		case "leak": // echoes the prompt and a key on stderr, then fails
			prompt, _ := io.ReadAll(os.Stdin)
			fmt.Fprintf(os.Stderr, "prompt: %s\nOPENAI_API_KEY=sk-proj-secretsecretsecret\n", prompt)
			return 1
		}
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	for in.Scan() {
		var m map[string]any
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		id := m["id"]
		switch m["method"] {
		case "initialize":
			emit(map[string]any{"id": id, "result": map[string]any{"userAgent": "fake"}})
		case "thread/start":
			emit(map[string]any{"id": id, "result": map[string]any{"thread": map[string]any{"id": "thread-1"}, "model": "fake-model"}})
			if mode == "deaf" {
				select {} // reads nothing more
			}
		case "turn/start":
			emit(map[string]any{"id": id, "result": map[string]any{"turn": map[string]any{"id": "turn-1"}}})
			if mode == "silent" {
				continue
			}
			emit(map[string]any{"method": "turn/started", "params": map[string]any{"turn": map[string]any{"id": "turn-1"}}})
			if mode == "deep" {
				os.Stdout.WriteString(strings.Repeat("[", 10<<20) + "\n")
				os.Stdout.WriteString(`{"id":3,"method":"x","params":` + strings.Repeat("[", 10<<20) + "\n")
			}
			emit(map[string]any{"method": "item/completed", "params": map[string]any{"item": map[string]any{"type": "agentMessage", "id": "msg", "text": "still here"}}})
			emit(map[string]any{"method": "turn/completed", "params": map[string]any{"turn": map[string]any{"id": "turn-1", "status": "completed"}}})
		default:
			if id != nil { // a request it does not know (model/list): refused at once, as a server does
				emit(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
	return 0
}

// fakeCodexBackend is a Backend on fakeCodex in mode over transport, with
// a marker in its processes' environment (see markedProcs).
func fakeCodexBackend(t *testing.T, mode, transport string, opts Options) (*Backend, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := "SPBRIDGE_TEST_MARKER=" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(os.Getpid())
	opts.Program, opts.Transport, opts.Dir = exe, transport, t.TempDir()
	opts.Env = append(os.Environ(), fakeCodexEnv+"="+mode, "GORACE=atexit_sleep_ms=0", marker)
	if opts.Grace == 0 {
		opts.Grace = 200 * time.Millisecond
	}
	opts.NewID = itemmap.SequentialIDs()
	b := New(opts)
	t.Cleanup(func() { b.Close() })
	return b, marker
}

// markedProcs returns the processes whose environment holds marker.
func markedProcs(t *testing.T, marker string) []int {
	t.Helper()
	ps, err := proctest.WithEnv(marker)
	if err != nil {
		t.Skip(err)
	}
	return proctest.PIDs(ps)
}

var bigMessage = backend.Message{Text: strings.Repeat("x", 1<<20)}

func texts(h *items) []string {
	var out []string
	for _, it := range h.list {
		out = append(out, it.Type()+": "+it.String("text"))
	}
	return out
}

// TestMessageNotRead: a codex that does not read the message (1 MB, more
// than the pipe holds) fails the turn at the idle timeout, on both
// transports, and leaves no process.
func TestMessageNotRead(t *testing.T) {
	for _, tr := range []string{TransportExec, TransportAppServer} {
		b, marker := fakeCodexBackend(t, "deaf", tr, Options{Options: backend.Options{IdleTimeout: 300 * time.Millisecond}})
		h := &items{}
		end := b.Turn(context.Background(), bigMessage, h)
		if end == nil || end.Status != itemmap.TurnFailed || !end.NotStarted {
			t.Fatalf("%s: end = %+v, want failed, not started", tr, end)
		}
		if got := texts(h); len(got) != 1 || !strings.Contains(got[0], "did not read the message for 300ms") {
			t.Errorf("%s: items %q", tr, got)
		}
		b.Close()
		if pids := markedProcs(t, marker); len(pids) > 0 {
			t.Errorf("%s: processes left: %v", tr, pids)
		}
	}
}

// TestMessageNotReadInterruptClose: Interrupt, or Close, ends a turn whose
// message codex does not read, long before the idle timeout, and leaves no
// process.
func TestMessageNotReadInterruptClose(t *testing.T) {
	for _, tr := range []string{TransportExec, TransportAppServer} {
		for _, how := range []string{"Interrupt", "Close"} {
			b, marker := fakeCodexBackend(t, "deaf", tr, Options{Options: backend.Options{IdleTimeout: time.Hour}})
			done := make(chan *itemmap.TurnEnd)
			go func() { done <- b.Turn(context.Background(), bigMessage, &items{}) }()
			waitRunning(b)
			if how == "Interrupt" {
				b.Interrupt()
			} else if err := b.Close(); err != nil {
				t.Errorf("%s, %s: %v", tr, how, err)
			}
			end := <-done
			want := itemmap.TurnFailed
			if how == "Interrupt" {
				want = itemmap.TurnInterrupted
			}
			if end == nil || end.Status != want || !end.NotStarted {
				t.Errorf("%s, %s: end = %+v, want %s, not started", tr, how, end, want)
			}
			b.Close()
			if pids := markedProcs(t, marker); len(pids) > 0 {
				t.Errorf("%s, %s: processes left: %v", tr, how, pids)
			}
		}
	}
}

// waitRunning waits until the first turn of a new backend has its process
// (its interrupt channel is set before; on app-server: the thread
// started).
func waitRunning(b *Backend) {
	for {
		if b.Proc() != nil && (b.transport == TransportExec || b.Thread() != "") {
			return
		}
		time.Sleep(time.Millisecond) // polling a state, not timing an event
	}
}

// TestSilentCodex: a codex that takes the message and prints nothing until
// the idle timeout gives a failure item and a non-nil TurnEnd.
func TestSilentCodex(t *testing.T) {
	for _, tr := range []string{TransportExec, TransportAppServer} {
		b, _ := fakeCodexBackend(t, "silent", tr, Options{Options: backend.Options{IdleTimeout: 300 * time.Millisecond}})
		h := &items{}
		end := b.Turn(context.Background(), backend.Message{Text: "x"}, h)
		if end == nil || end.Status != itemmap.TurnFailed {
			t.Fatalf("%s: end = %+v", tr, end)
		}
		if got := texts(h); len(got) != 1 || got[0] != "failure: codex printed nothing for 300ms; it was stopped." {
			t.Errorf("%s: items %q", tr, got)
		}
	}
}

// TestDeepLineAppServer: a 10 MB line of "[" from the app-server (and one
// that looks like a request) is skipped with a notice; the turn goes on.
func TestDeepLineAppServer(t *testing.T) {
	b, _ := fakeCodexBackend(t, "deep", TransportAppServer, Options{})
	h := &items{}
	end := b.Turn(context.Background(), backend.Message{Text: "x"}, h)
	if end == nil || end.Status != itemmap.TurnCompleted {
		t.Fatalf("end = %+v", end)
	}
	got := texts(h)
	if len(got) != 3 || !strings.Contains(got[0], "nested deeper than 1000 levels") || !strings.Contains(got[1], "nested deeper") || got[2] != "assistant: still here" {
		t.Errorf("items %q", got)
	}
}

// TestStderrPrivacy: codex's stderr goes into the failure's detail only,
// with its credentials masked and the prefix it echoed cut out.
func TestStderrPrivacy(t *testing.T) {
	b, _ := fakeCodexBackend(t, "leak", TransportExec, Options{})
	h := &items{}
	msg := backend.Message{Context: restore.Heading + "User: the secret launch code is 0000\n\nAssistant: noted\n\n", Text: "what now?"}
	end := b.Turn(context.Background(), msg, h)
	if end == nil || end.Status != itemmap.TurnFailed || len(h.list) != 1 {
		t.Fatalf("end = %+v, items %q", end, texts(h))
	}
	f := h.list[0]
	if text := f.String("text"); text != "codex exited before the turn ended (exit status 1)." {
		t.Errorf("failure text %q", text)
	}
	for _, s := range []string{f.String("detail"), b.StderrTail()} {
		if strings.Contains(s, "launch code") || strings.Contains(s, "Conversation so far") || strings.Contains(s, "secretsecret") {
			t.Errorf("leaked: %q", s)
		}
		if !strings.Contains(s, "prompt: ") || !strings.Contains(s, "OPENAI_API_KEY=sk-proj-secr****") {
			t.Errorf("not what stderr said, masked: %q", s)
		}
	}
}
