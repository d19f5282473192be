package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/session"
)

// fakeTurnsEnv makes the test binary a claude that answers every message
// of its session with "reply to " and the message's last line.
const fakeTurnsEnv = "SPBRIDGE_FAKE_CLAUDE_TURNS"

func init() { helperModes[fakeTurnsEnv] = fakeClaudeTurns }

func fakeClaudeTurns() int {
	f := newFakeStream()
	for n := 1; ; n++ {
		text, ok := f.userText()
		if !ok {
			return 0
		}
		if n == 1 {
			f.emit(map[string]any{"type": "system", "subtype": "init", "session_id": "fake-turns", "model": "claude-sonnet-4-5"})
		}
		lines := strings.Split(strings.TrimSpace(text), "\n")
		f.finish("reply to " + lines[len(lines)-1])
	}
}

// userText waits for the next user message and returns its text.
func (f *fakeStream) userText() (string, bool) {
	for f.in.Scan() {
		var m struct {
			Type    string
			Message struct{ Content json.RawMessage }
		}
		if json.Unmarshal(f.in.Bytes(), &m) != nil || m.Type != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Message.Content, &s) == nil {
			return s, true
		}
		var blocks []struct{ Type, Text string }
		json.Unmarshal(m.Message.Content, &blocks)
		var texts []string
		for _, b := range blocks {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		return strings.Join(texts, "\n"), true
	}
	return "", false
}

// killProc is a spbridge serve process driven over its standard input and
// output.
type killProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr syncBuffer
	id     int
	seen   []string // what came since the last answer
}

func startKillServe(t *testing.T, env []string) *killProc {
	t.Helper()
	p := &killProc{t: t, cmd: exec.Command(spbridgeBin(t), "serve")}
	p.cmd.Env = env
	p.cmd.Stderr = &p.stderr
	p.in, _ = p.cmd.StdinPipe()
	out, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	p.out = bufio.NewScanner(out)
	p.out.Buffer(nil, 16<<20)
	return p
}

// call sends a request and waits for its answer, which it returns (a
// failed answer fails the test).
func (p *killProc) call(method string, params any) map[string]any {
	p.t.Helper()
	p.id++
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	if _, err := p.in.Write(append(data, '\n')); err != nil {
		p.t.Fatalf("%s: %v\n%s", method, err, p.stderr.String())
	}
	p.seen = nil
	for p.out.Scan() {
		var m struct {
			ID     *int
			Method string
			Result map[string]any
			Error  any
		}
		if json.Unmarshal(p.out.Bytes(), &m) != nil {
			continue
		}
		if m.ID == nil || m.Method != "" || *m.ID != p.id {
			p.seen = append(p.seen, p.out.Text())
			continue
		}
		if m.Error != nil {
			p.t.Fatalf("%s: %v\nstderr:\n%s", method, m.Error, p.stderr.String())
		}
		return m.Result
	}
	p.t.Fatalf("%s: serve ended without answering (%v)\nstderr:\n%s", method, p.out.Err(), p.stderr.String())
	return nil
}

// kill ends serve with SIGKILL: nothing it has not written yet survives.
func (p *killProc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// prompt runs one turn and waits for its answer.
func (p *killProc) prompt(sid, text string) {
	p.t.Helper()
	res := p.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	if res["stopReason"] != "end_turn" {
		p.t.Fatalf("prompt %q: %v", text, res)
	}
}

// checkTurns checks that the package on disk holds the turns of texts, in
// order: each user item followed by its reply.
func checkTurns(t *testing.T, pkg string, texts []string) {
	t.Helper()
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Unreadable != "" {
		t.Fatalf("the package's conversation cannot be read: %s", p.Unreadable)
	}
	var got, want []string
	for _, it := range p.Conv.Items {
		got = append(got, it.Type()+": "+it.String("text"))
	}
	for _, text := range texts {
		want = append(want, archive.TypeUser+": "+text, archive.TypeAssistant+": reply to "+text)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after a kill -9 the package holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestServeKillKeepsFinishedTurns: a kill -9 of serve after N finished
// turns leaves all N in the package, where no host saves it: a thread of
// a plain ACP client (its package in the state folder's sessions/), and a
// package named by a client that did not opt in to the host-save
// contract. Each cycle reopens the package, runs N more turns (N varies)
// and kills serve once the last prompt is answered.
func TestServeKillKeepsFinishedTurns(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "state folder", true: "named package"}[named], func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			state := filepath.Join(root, "state")
			env := append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, fakeTurnsEnv+"=1", "SPBRIDGE_STATE_DIR="+state)
			pkg := ""
			if named {
				pkg = newPackage(t)
			}
			var texts []string
			cycles := 0
			for cycle, n := range []int{1, 3, 2, 4} {
				p := startKillServe(t, env)
				p.call("initialize", map[string]any{"protocolVersion": 1})
				params := map[string]any{"cwd": root, "mcpServers": []any{}}
				switch {
				case named:
					params["_meta"] = map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}
					p.call("session/new", params)
				case pkg == "":
					res := p.call("session/new", params)
					pkg, _ = res["sessionId"].(string)
					if !strings.HasPrefix(pkg, filepath.Join(state, "sessions")+string(filepath.Separator)) {
						t.Fatalf("the session's package %q is not in the state folder", pkg)
					}
				default:
					params["sessionId"] = pkg
					p.call("session/load", params)
				}
				for i := range n {
					text := fmt.Sprintf("message %d.%d", cycle, i)
					p.prompt(pkg, text)
					texts = append(texts, text)
				}
				p.kill()
				checkTurns(t, pkg, texts)
				cycles++
			}
			if cycles != 4 || len(texts) != 10 {
				t.Fatalf("%d cycles, %d turns", cycles, len(texts))
			}
			if r, _ := session.ReadRecovery(filepath.Join(state, "recovery"), pkg); r != nil {
				t.Errorf("a package spbridge saves got a recovery copy: %+v", r)
			}
		})
	}
}

// TestServeKillOffersRecovery: a client that opted in to the host-save
// contract names its package and runs turns without saving; serve is
// killed. The package holds nothing of them (the host's saves decide), but
// the next open offers the recovery copy, taking it brings the turns back
// (replayed), and the host's save then writes them and removes the copy.
func TestServeKillOffersRecovery(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	state := filepath.Join(root, "state")
	env := append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, fakeTurnsEnv+"=1", "SPBRIDGE_STATE_DIR="+state)
	pkg := newPackage(t)
	initialize := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}}
	open := map[string]any{"cwd": root, "mcpServers": []any{}, "_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}}
	var texts []string
	for cycle, n := range []int{2, 3} {
		p := startKillServe(t, env)
		p.call("initialize", initialize)
		res := p.call("session/new", open)
		meta, _ := res["_meta"].(map[string]any)
		if cycle == 0 && meta != nil {
			t.Fatalf("a recovery offered at the first open: %v", meta)
		}
		if cycle > 0 {
			sp, _ := meta["spbridge"].(map[string]any)
			rec, _ := sp["recovery"].(map[string]any)
			if rec == nil || rec["items"] != float64(2*len(texts)) || rec["savedItems"] != float64(0) {
				t.Fatalf("open after the kill: no recovery offered for %d items: %v", 2*len(texts), res)
			}
			got := p.call("_spbridge/recover", map[string]any{"sessionId": pkg})
			if got["items"] != float64(2*len(texts)) {
				t.Fatalf("recover: %v", got)
			}
			if replayed := strings.Join(p.seen, "\n"); !strings.Contains(replayed, "reply to "+texts[len(texts)-1]) || !strings.Contains(replayed, "_spbridge/edited") {
				t.Fatalf("recover replayed no conversation, or no edit:\n%s", replayed)
			}
		}
		for i := range n {
			text := fmt.Sprintf("message %d.%d", cycle, i)
			p.prompt(pkg, text)
			texts = append(texts, text)
		}
		if cycle == 0 {
			p.kill()
			if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !os.IsNotExist(err) {
				t.Fatalf("a turn's end wrote into the host-saved package (%v)", err)
			}
			continue
		}
		p.call("_spbridge/save", map[string]any{"sessionId": pkg})
		p.kill()
		checkTurns(t, pkg, texts)
		if r, err := session.ReadRecovery(filepath.Join(state, "recovery"), pkg); r != nil || err != nil {
			t.Fatalf("the host's save left the recovery copy: %+v, %v", r, err)
		}
	}
}
