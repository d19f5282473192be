package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/fakeapi"
	"spbridge/internal/history"
)

// forkE2E is what the fork and delete tests of either CLI share: the
// folder, the state folder, the ACP client's scenario environment and the
// command that serves.
type forkE2E struct {
	work, state, backend string
	env                  map[string]any
	serve                []string
}

// run runs the ACP client with steps against serve.
func (f *forkE2E) run(t *testing.T, steps ...any) []acpEvent {
	t.Helper()
	return runACPClient(t, map[string]any{"command": f.serve, "env": f.env, "cwd": f.work, "steps": steps})
}

// itemWithText is the id of the first item of the package's conversation
// of type typ whose text is text.
func itemWithText(t *testing.T, pkg, typ, text string) string {
	t.Helper()
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatalf("open %s: %v", pkg, err)
	}
	i := slices.IndexFunc(p.Conv.Items, func(it archive.Item) bool { return it.Type() == typ && it.String("text") == text })
	if i < 0 {
		var have []string
		for _, it := range p.Conv.Items {
			have = append(have, it.Type()+" "+it.String("text"))
		}
		t.Fatalf("%s holds no %s item %q: %q", pkg, typ, text, have)
	}
	return p.Conv.Items[i].ID()
}

// listedIDs are the session ids of a session/list answer.
func listedIDs(res map[string]any) []string {
	var ids []string
	l, _ := res["sessions"].([]any)
	for _, e := range l {
		m, _ := e.(map[string]any)
		id, _ := m["sessionId"].(string)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// listedMeta is _meta.spbridge of the entry id of a session/list answer.
func listedMeta(t *testing.T, res map[string]any, id string) map[string]any {
	t.Helper()
	l, _ := res["sessions"].([]any)
	for _, e := range l {
		m, _ := e.(map[string]any)
		if m["sessionId"] == id {
			meta, _ := m["_meta"].(map[string]any)
			sp, _ := meta["spbridge"].(map[string]any)
			return sp
		}
	}
	t.Fatalf("%s is not listed: %v", id, l)
	return nil
}

// deleted is _meta.spbridge of a session/delete answer.
func deleted(t *testing.T, events []acpEvent, step int) map[string]any {
	t.Helper()
	meta, _ := response(t, events, step)["_meta"].(map[string]any)
	sp, _ := meta["spbridge"].(map[string]any)
	if sp == nil {
		t.Fatalf("step %d: session/delete answered no _meta.spbridge", step)
	}
	return sp
}

// sentWith is the user texts of the model request whose last user text
// is last; it fails the test when no request ends so.
func sentWith(t *testing.T, bodies [][]byte, texts func([]byte) []string, last string) []string {
	t.Helper()
	for i := len(bodies) - 1; i >= 0; i-- {
		if s := texts(bodies[i]); len(s) > 0 && strings.HasSuffix(s[len(s)-1], last) {
			return s
		}
	}
	t.Fatalf("no model request ends with %q", last)
	return nil
}

// checkForkDelete runs the fork and delete scenario on a CLI session of
// the folder (two turns: first, then second words, the model's replies
// "Hello from the terminal." and "Second terminal reply.") and another
// (hidden): sid and hidden are their ids as session/list gives them,
// file the CLI's file of hidden, bodies the model requests so far and
// texts the user texts of one. The model's replies in the forks are
// "Fork reply one."…"three." and "In the document.".
func checkForkDelete(t *testing.T, f *forkE2E, pkg, sid, hidden, file string, bodies func() [][]byte, texts func([]byte) []string) {
	t.Helper()
	sessions := filepath.Join(f.state, "sessions")
	// A fork of the CLI's session, imported for the copy: a package of
	// its own, open, whose first turn tells a new CLI session the whole
	// conversation so far. Then the CLI's session is opened (imported
	// into a package of its own).
	events := f.run(t,
		map[string]any{"op": "initialize"},                                                             // 0
		map[string]any{"op": "forkSession", "sessionId": sid, "saveAs": "f1"},                          // 1
		map[string]any{"op": "prompt", "session": "f1", "text": "go on in the fork"},                   // 2
		map[string]any{"op": "loadSession", "sessionId": sid, "saveAs": "s0"},                          // 3
		map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": f.work}}, // 4
		map[string]any{"op": "closeStdin"},
	)
	caps, _ := response(t, events, 0)["agentCapabilities"].(map[string]any)
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	meta, _ := caps["_meta"].(map[string]any)
	if sp, _ := meta["spbridge"].(map[string]any); sc["delete"] == nil || sc["fork"] == nil || sp["sessionFork"] == nil {
		t.Errorf("capabilities: %v", caps)
	}
	f1, _ := response(t, events, 1)["sessionId"].(string)
	if filepath.Dir(f1) != sessions {
		t.Fatalf("the fork of %s is %q, not a package in %s", sid, f1, sessions)
	}
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Errorf("the fork's prompt: %v", r)
	}
	sent := sentWith(t, bodies(), texts, "go on in the fork")
	all := strings.Join(sent, "\n")
	for _, s := range []string{"# Conversation so far", "first words in the terminal", "Hello from the terminal.", "second words", "Second terminal reply."} {
		if !strings.Contains(all, s) {
			t.Errorf("the fork's first prompt lacks %q: %q", s, sent)
		}
	}
	p0, _ := listedMeta(t, response(t, events, 4), sid)["package"].(string)
	if filepath.Dir(p0) != sessions {
		t.Fatalf("the opened CLI session's package is %q", p0)
	}
	first := itemWithText(t, p0, archive.TypeAssistant, "Hello from the terminal.")
	second := itemWithText(t, f1, archive.TypeAssistant, "Second terminal reply.")

	// Forks at an item: of the imported CLI session (from its package)
	// and of the first fork (a package not open in this serve), each
	// prompted; then deletes: the first fork (a package spbridge made:
	// removed), the other CLI session (hidden, its file kept), and the
	// user's document (forgotten, never removed).
	at := func(id string) map[string]any { return map[string]any{"spbridge": map[string]any{"atItem": id}} }
	events = f.run(t,
		map[string]any{"op": "initialize"}, // 0
		map[string]any{"op": "forkSession", "sessionId": sid, "meta": at(first), "saveAs": "f2"},                                                      // 1
		map[string]any{"op": "prompt", "session": "f2", "text": "once more from the greeting"},                                                        // 2
		map[string]any{"op": "forkSession", "sessionId": f1, "meta": at(second), "saveAs": "f3"},                                                      // 3
		map[string]any{"op": "prompt", "session": "f3", "text": "once more from the second"},                                                          // 4
		map[string]any{"op": "ext", "method": "session/delete", "params": map[string]any{"sessionId": f1}},                                            // 5
		map[string]any{"op": "ext", "method": "session/delete", "params": map[string]any{"sessionId": hidden}},                                        // 6
		map[string]any{"op": "newSession", "meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": f.backend}}, "saveAs": "doc"}, // 7
		map[string]any{"op": "prompt", "session": "doc", "text": "in the document"},                                                                   // 8
		map[string]any{"op": "ext", "method": "session/delete", "params": map[string]any{"sessionId": pkg}},                                           // 9
		map[string]any{"op": "ext", "method": "session/close", "params": map[string]any{"sessionId": pkg}},                                            // 10
		map[string]any{"op": "ext", "method": "session/delete", "params": map[string]any{"sessionId": pkg}},                                           // 11
		map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": f.work}},                                                // 12
		map[string]any{"op": "newSession", "meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": f.backend}}},                  // 13
		map[string]any{"op": "closeStdin"},
	)
	f2, _ := response(t, events, 1)["sessionId"].(string)
	f3, _ := response(t, events, 3)["sessionId"].(string)
	if filepath.Dir(f2) != sessions || filepath.Dir(f3) != sessions || f2 == f3 || f2 == p0 || f3 == f1 {
		t.Fatalf("the forks at an item: %q and %q", f2, f3)
	}
	if doc, _ := response(t, events, 7)["sessionId"].(string); doc != pkg {
		t.Errorf("the user's document opened as %q", doc)
	}
	for _, n := range []int{2, 4, 8} {
		if r := response(t, events, n); r["stopReason"] != "end_turn" {
			t.Errorf("step %d: %v", n, r)
		}
	}
	sent = sentWith(t, bodies(), texts, "once more from the greeting")
	all = strings.Join(sent, "\n")
	if !strings.Contains(all, "# Conversation so far") || !strings.Contains(all, "first words in the terminal") || !strings.Contains(all, "Hello from the terminal.") ||
		strings.Contains(all, "second words") || strings.Contains(all, "Second terminal reply.") {
		t.Errorf("the fork of the CLI session at its first reply sent %q", sent)
	}
	sent = sentWith(t, bodies(), texts, "once more from the second")
	all = strings.Join(sent, "\n")
	if !strings.Contains(all, "# Conversation so far") || !strings.Contains(all, "second words") || !strings.Contains(all, "Second terminal reply.") ||
		strings.Contains(all, "go on in the fork") || strings.Contains(all, "Fork reply one.") {
		t.Errorf("the fork of the fork at the second reply sent %q", sent)
	}
	if m := deleted(t, events, 5); m["removed"] != true || m["package"] != f1 {
		t.Errorf("delete of the first fork: %v", m)
	}
	if _, err := os.Stat(f1); !os.IsNotExist(err) {
		t.Errorf("the first fork's package is still there: %v", err)
	}
	if m := deleted(t, events, 6); m["removed"] != false || !slices.Contains(asList(m["hidden"]), any(hidden)) {
		t.Errorf("delete of a CLI session: %v", m)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the CLI's file of the hidden session: %v", err)
	}
	// The document is open: its delete closes it first (so it opens
	// again, step 13), then forgets it; a second delete has nothing to do
	// and succeeds silently.
	if m := deleted(t, events, 9); m["removed"] != false || m["package"] != pkg {
		t.Errorf("delete of the user's open document: %v", m)
	}
	if r := response(t, events, 13); r["sessionId"] != pkg {
		t.Errorf("the deleted document opened again as %v (the delete did not close it?)", r)
	}
	if r := response(t, events, 11); len(r) != 0 {
		t.Errorf("the second delete of the user's document: %v", r)
	}
	if _, err := os.Stat(filepath.Join(pkg, "agent", "conversation.json")); err != nil {
		t.Errorf("the user's document lost its conversation: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "document.json")); err != nil {
		t.Errorf("the user's document: %v", err)
	}
	want := []string{f2, f3, sid}
	slices.Sort(want)
	if got := listedIDs(response(t, events, 12)); !slices.Equal(got, want) {
		t.Errorf("listed after the deletes %q, want %q (the forks at an item and the opened CLI session)", got, want)
	}
}

// TestE2EServeForkDelete: with the real claude and the official client,
// session/fork of a CLI session begun in a terminal (imported for the
// copy), of the same session once imported and of a package spbridge made,
// the last two at an item (_meta.spbridge.atItem): each a new package,
// whose first prompt tells a new claude session the conversation so far
// (up to the item); session/delete removes a package spbridge made,
// refuses an open session, hides a CLI session (its file kept), and
// forgets the user's document without removing it.
func TestE2EServeForkDelete(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello from the terminal."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Second terminal reply."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "A session to forget."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Fork reply one."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Fork reply two."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Fork reply three."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "In the document."}}},
	)
	work := filepath.Dir(e.pkg)
	claude := func(args ...string) {
		t.Helper()
		cmd := exec.Command(fakeapi.ClaudePath(t), args...)
		cmd.Env, cmd.Dir = e.env, work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("claude %q: %v\n%s", args, err, out)
		}
	}
	var configDir string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			configDir = v
		}
	}
	opts := history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": configDir, "codex": t.TempDir()}, Cwd: work}
	claude("-p", "first words in the terminal")
	listed, err := history.List(opts)
	if err != nil || len(listed) != 1 {
		t.Fatalf("claude's sessions of the folder: %v %v", listed, err)
	}
	keep := listed[0]
	claude("-p", "--resume", keep.ID, "second words")
	claude("-p", "a session to forget")
	listed, err = history.List(opts)
	if err != nil || len(listed) != 2 {
		t.Fatalf("claude's sessions of the folder: %v %v", listed, err)
	}
	other := listed[slices.IndexFunc(listed, func(e history.Entry) bool { return e.ID != keep.ID })]
	f := &forkE2E{work: work, state: stateDir(e.env), backend: "claude", env: acpEnv(e.env), serve: []string{spbridgeBin(t), "serve"}}
	checkForkDelete(t, f, e.pkg, "claude:"+keep.ID, "claude:"+other.ID, other.Path, func() [][]byte {
		var bodies [][]byte
		for _, r := range e.srv.Requests() {
			bodies = append(bodies, r.Body)
		}
		return bodies
	}, userTexts)
}

// asList is v as a JSON array (nil when it is not one).
func asList(v any) []any { l, _ := v.([]any); return l }

// stateDir is SPBRIDGE_STATE_DIR of an environment.
func stateDir(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SPBRIDGE_STATE_DIR="); ok {
			return v
		}
	}
	return ""
}

// TestE2EServeCodexForkDelete: the same with the real codex, on both
// transports: a thread begun with codex exec in a terminal (and resumed
// there once) is forked, opened, forked at an item, and a fork and the
// user's document are prompted; deletes remove a package spbridge made,
// hide another thread (its rollout kept) and forget the user's document.
func TestE2EServeCodexForkDelete(t *testing.T) { transports(t, testServeCodexForkDelete) }

func testServeCodexForkDelete(t *testing.T, transport string) {
	reply := func(text string) fakeapi.ResponsesReply {
		return fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(text)}}
	}
	e, srv := newCodexE2E(t, reply("Hello from the terminal."), reply("Second terminal reply."), reply("A session to forget."),
		reply("Fork reply one."), reply("Fork reply two."), reply("Fork reply three."), reply("In the document."))
	work := filepath.Dir(e.pkg)
	codex := func(args ...string) {
		t.Helper()
		cmd := exec.Command(fakeapi.CodexPath(t), args...)
		cmd.Env, cmd.Dir = e.env, work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("codex %q: %v\n%s", args, err, out)
		}
	}
	var codexHome string
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			codexHome = v
		}
	}
	opts := history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": t.TempDir(), "codex": codexHome}, Cwd: work}
	codex("exec", "--skip-git-repo-check", "first words in the terminal")
	listed, err := history.List(opts)
	if err != nil || len(listed) != 1 {
		t.Fatalf("codex's threads of the folder: %v %v", listed, err)
	}
	keep := listed[0]
	codex("exec", "--skip-git-repo-check", "resume", keep.ID, "second words")
	codex("exec", "--skip-git-repo-check", "a session to forget")
	listed, err = history.List(opts)
	if err != nil || len(listed) != 2 {
		t.Fatalf("codex's threads of the folder: %v %v", listed, err)
	}
	other := listed[slices.IndexFunc(listed, func(e history.Entry) bool { return e.ID != keep.ID })]
	f := &forkE2E{work: work, state: stateDir(e.env), backend: "codex", env: acpEnv(e.env),
		serve: []string{spbridgeBin(t), "serve", "--backend", "codex", "--codex-transport", transport}}
	checkForkDelete(t, f, e.pkg, "codex:"+keep.ID, "codex:"+other.ID, other.Path, func() [][]byte {
		var bodies [][]byte
		for _, r := range srv.Requests() {
			bodies = append(bodies, r.Body)
		}
		return bodies
	}, inputTexts)
}
