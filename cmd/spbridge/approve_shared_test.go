package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"spbridge/internal/acp"
	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/itemmap"
)

// askTwiceBackend's turn asks to run `make test` twice and `rm -rf build`
// once, in its folder, and keeps the decisions.
type askTwiceBackend struct {
	bgShellBackend
	dir string
	got []string
}

func (b *askTwiceBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	for _, cmd := range []string{"make test", "make test", "rm -rf build"} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		d := h.Approve(ctx, itemmap.Approval{ToolName: "Bash", Input: in, Cwd: b.dir})
		b.got = append(b.got, fmt.Sprintf("%s: allow %v, always %v", cmd, d.Allow, d.Always != nil))
	}
	return b.bgShellBackend.Turn(ctx, msg, h)
}

// TestRunAndServeShareApprovals: the shell and serve decide permission
// requests by the same rule, the session's: the user is asked about
// `make test` once, answers "always" ("a" on run's terminal,
// allow_always in the editor), the CLI is told the grant, and the second
// `make test` is allowed by it without a question; `rm -rf build`, not
// covered, is asked and denied.
func TestRunAndServeShareApprovals(t *testing.T) {
	want := []string{"make test: allow true, always true", "make test: allow true, always false", "rm -rf build: allow false, always false"}

	// spbridge run, asked on its terminal.
	shellBe := &askTwiceBackend{}
	s, h, _, _ := openBgShell(t, shellBe)
	defer s.Close()
	shellBe.dir = h.dir
	term := &termBuffer{asked: make(chan struct{}, 16)}
	h.json, h.errw, h.vocab = false, term, claude.Plugin.Tools
	answered := answerOnPrompt(h, "a", "n")
	if err := sendAll(context.Background(), stdio{err: term}, s, h, []string{"check"}, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shellBe.got, want) {
		t.Fatalf("run decided %q, want %q", shellBe.got, want)
	}
	<-answered

	// spbridge serve, asked in the editor.
	serveBe := &askTwiceBackend{dir: t.TempDir()}
	asked := serveDecide(t, serveBe, []string{"allow_always", "reject_once"})
	if !slices.Equal(serveBe.got, want) {
		t.Errorf("serve decided %q, want %q", serveBe.got, want)
	}
	if asked != 2 {
		t.Errorf("the editor was asked %d times, want 2", asked)
	}
}

// serveDecide runs one prompt through an ACP server on be, answering its
// permission requests with options in order, and returns how many it
// asked.
func serveDecide(t *testing.T, be backend.Backend, options []string) int {
	t.Helper()
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	row := claude.Plugin
	row.New = func(backend.Options, map[string]string) backend.Backend { return be }
	srv := acp.NewServer(outW, acp.Config{CLIs: []backend.Plugin{row}})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), inR); outW.Close() }()
	send := func(m map[string]any) {
		data, _ := json.Marshal(m)
		inW.Write(append(data, '\n'))
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{
		"cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}}})
	asked := 0
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Method == "session/request_permission":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": options[asked]}}})
			asked++
		case m.Method == "" && m.ID == float64(1):
			var r struct {
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal(m.Result, &r) != nil || r.SessionID == "" {
				t.Fatalf("session/new: %s %s", m.Result, m.Error)
			}
			send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": map[string]any{
				"sessionId": r.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "check"}}}})
		case m.Method == "" && m.ID == float64(2):
			if m.Error != nil {
				t.Fatalf("session/prompt: %s", m.Error)
			}
			inW.Close()
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	return asked
}
