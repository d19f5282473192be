package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
	"spbridge/internal/session"
)

// sleepServe is spbridge serve driven line by line, its log read as it
// comes: a CLI put to sleep is an event the test waits for.
type sleepServe struct {
	*serveProc
	logs chan string
}

func startSleepServe(t *testing.T, env []string, args ...string) *sleepServe {
	t.Helper()
	p := &serveProc{t: t, cmd: exec.Command(spbridgeBin(t), append([]string{"serve"}, args...)...)}
	p.cmd.Env = env
	p.stdin, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.lines = bufio.NewScanner(stdout)
	p.lines.Buffer(nil, 64<<20)
	s := &sleepServe{serveProc: p, logs: make(chan string, 1000)}
	go func() {
		defer close(s.logs)
		r := bufio.NewScanner(io.TeeReader(stderr, &p.stderr))
		for r.Scan() {
			s.logs <- r.Text()
		}
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	return s
}

// slept waits for the log line of a CLI put to sleep, and returns it.
func (s *sleepServe) slept() string {
	s.t.Helper()
	for l := range s.logs {
		if strings.Contains(l, "its CLI was put to sleep") {
			return l
		}
	}
	s.t.Fatalf("serve ended with no CLI put to sleep; stderr:\n%s", s.stderr.String())
	return ""
}

// prompt sends a prompt and waits for its answer.
func (s *sleepServe) prompt(id int, sessionID, text string) {
	s.t.Helper()
	s.write(map[string]any{"id": id, "method": "session/prompt", "params": map[string]any{"sessionId": sessionID,
		"prompt": []any{map[string]any{"type": "text", "text": text}}}})
	if r := s.stopReason(float64(id)); r != "end_turn" {
		s.t.Fatalf("prompt %q: stop reason %q\nstderr:\n%s", text, r, s.stderr.String())
	}
}

// TestE2EServeSleepClaude: with --cli-idle 1s the real claude is put to
// sleep after each turn, and each prompt wakes it on its session
// (--resume): the model is asked with the messages before it, never with
// "# Conversation so far". A /clear goes through a sleep too: the
// session woken after it is the one claude went on with, and nothing said
// before it comes back.
func TestE2EServeSleepClaude(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Noted KIWI-5521."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "It was KIWI-5521."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hi after the clear."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Still here."}}})
	argvLog := filepath.Join(t.TempDir(), "argv.log")
	wrapper := filepath.Join(t.TempDir(), "claude")
	os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$@\" >> "+argvLog+"\nexec "+fakeapi.ClaudePath(t)+" \"$@\"\n"), 0o755)
	s := startSleepServe(t, append(e.env, "SPBRIDGE_CLAUDE="+wrapper), "--cli-idle", "1s")
	open := map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}}
	s.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}},
		map[string]any{"id": 1, "method": "session/new", "params": open})
	s.response(1)
	for i, text := range []string{"remember KIWI-5521", "what was it?", "/clear", "say hi", "and now?"} {
		if i > 0 {
			if l := s.slept(); !strings.Contains(l, "(idle)") {
				t.Errorf("slept: %q", l)
			}
		}
		s.prompt(10+i, e.pkg, text)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (/clear asks the model nothing)", len(reqs))
	}
	want := [][]string{{"remember KIWI-5521"}, {"remember KIWI-5521", "what was it?"}, {"say hi"}, {"say hi", "and now?"}}
	for i, r := range reqs {
		// Claude Code's own record of the /clear it ran (the session it
		// went on with holds it) is no text of the user's.
		var got []string
		for _, t := range userTexts(r.Body) {
			if !strings.HasPrefix(t, "<local-command-") && !strings.HasPrefix(t, "<command-name>") {
				got = append(got, t)
			}
		}
		if strings.Contains(string(r.Body), "KIWI") && i >= 2 {
			t.Errorf("request %d, after the /clear, carries what was said before it", i+1)
		}
		if strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("request %d asked with %q, want %q", i+1, got, want[i])
		}
		if strings.Contains(string(r.Body), "Conversation so far") {
			t.Errorf("request %d carries the restore prefix", i+1)
		}
	}
	sid := func(i int) string { return reqs[i].Header.Get("X-Claude-Code-Session-Id") }
	if sid(0) == "" || sid(1) != sid(0) || sid(2) == sid(0) || sid(3) != sid(2) {
		t.Errorf("sessions %q %q %q %q: want one before the /clear, another after, each kept through its sleeps", sid(0), sid(1), sid(2), sid(3))
	}
	argv, _ := os.ReadFile(argvLog)
	var starts []string // the turns' processes (not --version)
	for _, l := range strings.Split(strings.TrimSpace(string(argv)), "\n") {
		if strings.HasPrefix(l, "-p ") {
			starts = append(starts, l)
		}
	}
	if len(starts) != 5 {
		t.Fatalf("claude started %d times, want 5 (the open, then each prompt after a sleep):\n%s", len(starts), argv)
	}
	for i, a := range starts[1:] {
		if !strings.Contains(a, "--resume ") {
			t.Errorf("start %d after a sleep does not resume: %s", i+2, a)
		}
	}
	if !strings.Contains(starts[4], "--resume "+sid(2)) {
		t.Errorf("the start after the /clear's sleep resumes another session than %s: %s", sid(2), starts[4])
	}
	items := e.items()
	for _, it := range items {
		if strings.Contains(it, session.ResumeRefusedText) {
			t.Errorf("a resume was refused: %q", items)
		}
	}
}

// TestE2EServeSleepCodex: the same with the real codex app-server: the
// woken server resumes its thread (thread/resume), and the model is asked
// with the turn before.
func TestE2EServeSleepCodex(t *testing.T) {
	t.Parallel()
	e, srv := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Noted MANGO-8812.")}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("It was MANGO-8812.")}})
	s := startSleepServe(t, e.env, "--cli-idle", "1s", "--backend", "codex")
	open := map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}}
	s.write(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}},
		map[string]any{"id": 1, "method": "session/new", "params": open})
	s.response(1)
	s.prompt(10, e.pkg, "remember MANGO-8812")
	s.slept()
	s.prompt(11, e.pkg, "what was it?")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	got := inputTexts(reqs[1].Body)
	if len(got) < 2 || !strings.Contains(strings.Join(got, "|"), "remember MANGO-8812") || got[len(got)-1] != "what was it?" {
		t.Errorf("the woken codex asked with %q, want the turn before, then the message", got)
	}
	for i, r := range reqs {
		if strings.Contains(string(r.Body), "Conversation so far") {
			t.Errorf("request %d carries the restore prefix", i+1)
		}
	}
	if items := e.items(); strings.Contains(strings.Join(items, "\n"), session.ResumeRefusedText) {
		t.Errorf("a resume was refused: %q", items)
	}
}
