//go:build linux

package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// revertRequest is the thread/revert request of a log of lines written to
// an app-server, and the thread/revert answer when the log holds the
// server's lines too (testdata/codex/app-server/*.jsonl: {"dir","msg"}).
func revertRequest(t *testing.T, log []byte, recorded bool) (req, answer map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if recorded {
			var l struct {
				Dir string
				Msg map[string]any
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil || (l.Dir == "out" && req == nil) {
				continue
			}
			m = l.Msg
		} else if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m["method"] == "thread/revert":
			req = m
		case req != nil && m["method"] == nil && m["id"] == req["id"]:
			return req, m
		}
	}
	if req == nil {
		t.Fatalf("no thread/revert in:\n%.3000s", log)
	}
	return req, nil
}

// TestRewindRequest: the request Rewind writes to the real codex
// app-server is the thread/revert recorded from codex 0.169.0
// (testdata/codex/app-server/revert.jsonl, made by the fakeapi package's
// TestAppServerRevert): the same members, the thread's id and the id of
// the first turn to drop; the recording's answer is the thread (and a
// thread/reverted notification follows).
func TestRewindRequest(t *testing.T) {
	rec, err := os.ReadFile("../../testdata/codex/app-server/revert.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want, answer := revertRequest(t, rec, true)
	if th, _ := answer["result"].(map[string]any)["thread"].(map[string]any); th == nil || th["id"] != want["params"].(map[string]any)["threadId"] {
		t.Fatalf("the recorded answer %v", answer)
	}
	if !bytes.Contains(rec, []byte(`"method":"thread/reverted"`)) {
		t.Error("the recording has no thread/reverted")
	}

	// The real codex, through a shell that keeps a copy of what spbridge
	// writes to it.
	say := func(text string) fakeapi.ResponsesReply {
		return fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(text)}}
	}
	srv, err := fakeapi.NewOpenAI(say("ANSWER-one"), say("ANSWER-two"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	work, log, wrapper := filepath.Join(root, "work"), filepath.Join(root, "stdin.jsonl"), filepath.Join(root, "codex")
	os.MkdirAll(work, 0o755)
	script := "#!/bin/sh\ntee -a '" + log + "' | '" + fakeapi.CodexPath(t) + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := New(Options{Options: backend.Options{Program: wrapper, Dir: work, Env: srv.CodexEnv(t, root), Grace: 2 * time.Second, IdleTimeout: time.Minute, NewID: itemmap.SequentialIDs()}, Transport: TransportAppServer})
	t.Cleanup(func() { b.Close() })
	for _, m := range []string{"MARK-one", "MARK-two"} {
		a := &approver{streaming: make(chan struct{})}
		if end := b.Turn(context.Background(), backend.Message{Text: m}, a); end.Status != itemmap.TurnCompleted {
			t.Fatalf("turn %q = %v", m, end.Status)
		}
	}
	b.mu.Lock()
	thread, second := b.thread, b.turnIDs[1]
	b.mu.Unlock()
	if err := b.Rewind(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := revertRequest(t, data, false)
	params, _ := got["params"].(map[string]any)
	if params["threadId"] != thread || params["beforeTurnId"] != second {
		t.Errorf("thread/revert %v, want thread %s before turn %s", params, thread, second)
	}
	// The same shape as recorded, ids aside.
	norm := func(m map[string]any) map[string]any {
		p := map[string]any{}
		for k, v := range m["params"].(map[string]any) {
			p[k] = v
		}
		p["threadId"], p["beforeTurnId"] = "THREAD", "TURN"
		return map[string]any{"jsonrpc": m["jsonrpc"], "method": m["method"], "params": p}
	}
	if !reflect.DeepEqual(norm(got), norm(want)) {
		t.Errorf("spbridge's thread/revert\n %v\nthe recorded one\n %v", got, want)
	}
}
