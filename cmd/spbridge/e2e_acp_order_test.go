package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/fakeapi"
)

// serveProc is spbridge serve with the real claude, driven line by line.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr syncBuffer
	seen   []map[string]any
}

func startServe(t *testing.T, e *e2e) *serveProc {
	t.Helper()
	p := &serveProc{t: t, cmd: exec.Command(spbridgeBin(t), "serve")}
	p.cmd.Env = e.env
	p.stdin, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.lines = bufio.NewScanner(stdout)
	p.lines.Buffer(nil, 64<<20)
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return p
}

// write sends messages in one write, so that spbridge reads them at once.
func (p *serveProc) write(msgs ...map[string]any) {
	var buf bytes.Buffer
	for _, m := range msgs {
		m["jsonrpc"] = "2.0"
		data, _ := json.Marshal(m)
		buf.Write(append(data, '\n'))
	}
	p.stdin.Write(buf.Bytes())
}

// response reads until the response to id and returns it.
func (p *serveProc) response(id float64) map[string]any {
	p.t.Helper()
	for _, m := range p.seen {
		if m["id"] == id && m["method"] == nil {
			return m
		}
	}
	for p.lines.Scan() {
		var m map[string]any
		if err := json.Unmarshal(p.lines.Bytes(), &m); err != nil {
			p.t.Fatalf("serve wrote %q", p.lines.Text())
		}
		p.seen = append(p.seen, m)
		if m["id"] == id && m["method"] == nil {
			return m
		}
	}
	p.t.Fatalf("serve ended without answering %v\nstderr:\n%s", id, p.stderr.String())
	return nil
}

func (p *serveProc) stopReason(id float64) string {
	p.t.Helper()
	m := p.response(id)
	res, _ := m["result"].(map[string]any)
	if res == nil {
		p.t.Fatalf("request %v: %v\nstderr:\n%s", id, m, p.stderr.String())
	}
	s, _ := res["stopReason"].(string)
	return s
}

// TestE2EServeOrder: with the real claude, a prompt written together with
// the session/new (or session/load) that opens its package runs, and a
// cancel written together with its prompt cancels it.
func TestE2EServeOrder(t *testing.T) {
	t.Parallel()
	// Only the second message's reply is slow, whichever request reaches
	// the fake first; everything else gets "ok".
	e := newE2E(t, fakeapi.Reply{
		Match: func(body []byte) bool {
			var req struct {
				MaxTokens int `json:"max_tokens"`
			}
			json.Unmarshal(body, &req)
			return req.MaxTokens > 1 && bytes.Contains(body, []byte("MSG-second"))
		},
		Blocks:     []fakeapi.Block{{Text: strings.Repeat("slowly ", 40)}},
		ChunkDelay: 20 * time.Millisecond,
	})
	open := map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}}
	prompt := func(id int, text string) map[string]any {
		return map[string]any{"id": id, "method": "session/prompt", "params": map[string]any{"sessionId": e.pkg, "prompt": []any{map[string]any{"type": "text", "text": text}}}}
	}
	cancel := map[string]any{"method": "session/cancel", "params": map[string]any{"sessionId": e.pkg}}

	p := startServe(t, e)
	p.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}},
		map[string]any{"id": 1, "method": "session/new", "params": open},
		prompt(2, "MSG-first"))
	if m := p.response(1); m["error"] != nil {
		t.Fatalf("session/new: %v", m)
	}
	if r := p.stopReason(2); r != "end_turn" {
		t.Errorf("the prompt written with session/new: %q", r)
	}
	p.write(prompt(3, "MSG-second"), cancel)
	if r := p.stopReason(3); r != "cancelled" {
		t.Errorf("the prompt written with its cancel: %q", r)
	}
	p.write(prompt(4, "MSG-third"))
	if r := p.stopReason(4); r != "end_turn" {
		t.Errorf("the prompt after the cancel: %q", r)
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, p.stderr.String())
	}

	p = startServe(t, e)
	load := map[string]any{"sessionId": e.pkg, "cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}}
	p.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}},
		map[string]any{"id": 1, "method": "session/load", "params": load},
		prompt(2, "MSG-fourth"))
	if m := p.response(1); m["error"] != nil {
		t.Fatalf("session/load: %v", m)
	}
	if r := p.stopReason(2); r != "end_turn" {
		t.Errorf("the prompt written with session/load: %q", r)
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, p.stderr.String())
	}
	pkg, err := archive.Open(e.pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, it := range pkg.Conv.Items {
		if it.Type() == archive.TypeUser {
			users = append(users, it.String("text"))
		}
	}
	joined := strings.Join(users, " ")
	if !strings.HasPrefix(joined, "MSG-first ") || !strings.HasSuffix(joined, "MSG-third MSG-fourth") {
		t.Errorf("saved user items %q", users)
	}
}
