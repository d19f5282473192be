package acp

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/sessionindex"
)

// cliStore is a Claude Code store holding the recorded interrupted session
// as the CLI keeps it for a folder of the test: the store, the folder, the
// session's id and its file.
func cliStore(t *testing.T) (store, cwd, sid, file string) {
	t.Helper()
	cwd = t.TempDir()
	sid = "06c063d3-5368-41f8-87b9-778f42872b06"
	data, err := os.ReadFile(filepath.Join("../claude/testdata/history/claude-interrupt/projects/-work-project", sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	store = t.TempDir()
	dir := filepath.Join(store, "projects", regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cwd, "-"))
	os.MkdirAll(dir, 0o755)
	data = []byte(strings.ReplaceAll(string(data), `"cwd":"/work/project"`, `"cwd":"`+cwd+`"`))
	file = filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return store, cwd, sid, file
}

// TestCLISessions: session/list offers a CLI's own session of the folder
// (its id "claude:ID", how to continue it in a terminal); session/load of
// that id imports it into a package of the state folder and replays it;
// the list then shows it once, under the same id, as that package; and a
// load of the id in a later serve opens the package again, importing
// nothing more. The CLI's file is not changed.
func TestCLISessions(t *testing.T) {
	store, cwd, _, file := cliStore(t)
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var mu sync.Mutex
	var made []*fakeBackend
	var resumed []string
	cfg := func() Config {
		return Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}},
			SessionsDir: filepath.Join(state, "sessions"), Index: sessionindex.New(state),
			CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
				b := newFake()
				mu.Lock()
				made, resumed = append(made, b), append(resumed, o.Resume)
				mu.Unlock()
				return b, nil
			})}
	}
	lastSent := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		texts := made[len(made)-1].texts()
		return texts[len(texts)-1], resumed[len(resumed)-1]
	}
	const id = "claude:06c063d3-5368-41f8-87b9-778f42872b06"
	listed := func(c *client) []map[string]any {
		res, _ := c.request("session/list", map[string]any{"cwd": cwd})
		var out []map[string]any
		for _, s := range res["sessions"].([]any) {
			out = append(out, s.(map[string]any))
		}
		return out
	}

	c := startServerWith(t, cfg())
	list := listed(c)
	if len(list) != 1 || list[0]["sessionId"] != id || list[0]["title"] == nil {
		t.Fatalf("listed %v", list)
	}
	meta := list[0]["_meta"].(map[string]any)["spbridge"].(map[string]any)
	if meta["continueCommand"] != "claude --resume 06c063d3-5368-41f8-87b9-778f42872b06" {
		t.Errorf("_meta %v", meta)
	}
	if res, _ := c.request("session/list", map[string]any{"cwd": "/elsewhere"}); len(res["sessions"].([]any)) != 0 {
		t.Errorf("another folder lists %v", res)
	}
	load := map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}
	_, seen := c.request("session/load", load)
	if len(updates(seen, "user_message_chunk")) == 0 || len(updates(seen, "agent_message_chunk")) == 0 {
		t.Errorf("the load replayed %d messages", len(seen))
	}
	list = listed(c)
	if len(list) != 1 || list[0]["sessionId"] != id {
		t.Fatalf("after the import, listed %v", list)
	}
	// The CLI still holds the session: the next turn continues it, told
	// nothing again.
	c.request("session/prompt", promptParams(id, "go on"))
	if sent, resume := lastSent(); sent != "go on" || resume != "06c063d3-5368-41f8-87b9-778f42872b06" {
		t.Errorf("the turn after the import sent %q, resuming %q", sent, resume)
	}
	pkg, _ := list[0]["_meta"].(map[string]any)["spbridge"].(map[string]any)["package"].(string)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil || len(p.Conv.Items) == 0 || len(p.Conv.History) == 0 {
		t.Fatalf("the package %q: %v", pkg, err)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}

	c2 := startServerWith(t, cfg())
	c2.request("session/load", load)
	// A later open is a reopened conversation: a new CLI session told it.
	c2.request("session/prompt", promptParams(id, "later"))
	if sent, resume := lastSent(); !strings.HasPrefix(sent, "# Conversation so far") || resume != "" {
		t.Errorf("the turn of a later open sent %q, resuming %q", sent, resume)
	}
	pkgs, _ := os.ReadDir(filepath.Join(state, "sessions"))
	if len(pkgs) != 1 {
		t.Errorf("%d packages in sessions/, want the one", len(pkgs))
	}
	after, _ := os.ReadFile(file)
	if string(after) != string(before) {
		t.Error("the CLI's session file changed")
	}
}

// TestCLISessionOfAPackage: a CLI session a package's turn ran on is
// listed once, as that package, whose _meta says how a terminal continues
// it.
func TestCLISessionOfAPackage(t *testing.T) {
	store, cwd, sid, _ := cliStore(t)
	state := t.TempDir()
	c := startServerWith(t, Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}},
		SessionsDir: filepath.Join(state, "sessions"), Index: sessionindex.New(state)})
	if res, _ := c.request("session/list", map[string]any{"cwd": cwd}); len(res["sessions"].([]any)) != 1 {
		t.Fatalf("the CLI's session is not listed: %v", res)
	}
	pkg := newPackage(t)
	params := newSessionParams(pkg)
	params["cwd"] = cwd
	c.request("session/new", params)
	c.request("session/prompt", promptParams(pkg, "sid "+sid))
	res, _ := c.request("session/list", map[string]any{"cwd": cwd})
	list := res["sessions"].([]any)
	if len(list) != 1 {
		t.Fatalf("listed %v", list)
	}
	e := list[0].(map[string]any)
	meta := e["_meta"].(map[string]any)["spbridge"].(map[string]any)
	last, _ := meta["lastCLISession"].(map[string]any)
	if e["sessionId"] != pkg || last["continueCommand"] != "claude --resume "+sid {
		t.Errorf("listed %v", e)
	}
}

// TestForkAndDelete: session/fork copies a conversation (up to an item)
// into a new session of its own, which continues it as a restored one;
// it forks a CLI's own session too. session/delete removes a package
// spbridge made, refuses an open session, and hides a CLI's session from
// the list without touching its file.
func TestForkAndDelete(t *testing.T) {
	store, _ := filepath.Abs("../claude/testdata/history/claude-interrupt")
	state := t.TempDir()
	sessions := filepath.Join(state, "sessions")
	c := startServerWith(t, Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}},
		SessionsDir: sessions, Index: sessionindex.New(state), DefaultBackend: "claude"})
	cwd := t.TempDir()
	res, _ := c.request("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	orig := res["sessionId"].(string)
	c.request("session/prompt", promptParams(orig, "one"))
	c.request("session/prompt", promptParams(orig, "two"))
	c.request("_spbridge/save", map[string]any{"sessionId": orig})
	p, err := archive.Open(orig, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	// The first reply: the fork ends with it.
	k := slices.IndexFunc(p.Conv.Items, func(it archive.Item) bool { return it.Type() == archive.TypeAssistant })
	if k < 0 || p.Conv.Items[k+1:][0].Type() == "" {
		t.Fatalf("the conversation: %d items", len(p.Conv.Items))
	}
	at := p.Conv.Items[k].ID()

	res, _ = c.request("session/fork", map[string]any{"sessionId": orig, "cwd": cwd, "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"atItem": at}}})
	fork, _ := res["sessionId"].(string)
	if fork == "" || fork == orig || filepath.Dir(fork) != sessions {
		t.Fatalf("fork answered %v", res)
	}
	f, err := archive.Open(fork, archive.KindDocument, true)
	if err != nil || len(f.Conv.Items) != k+1 || f.Conv.Items[k].ID() != at {
		t.Fatalf("the fork: %v, %d items", err, len(f.Conv.Items))
	}
	var users []string
	for _, m := range f.Conv.History {
		if m.Role == "user" {
			users = append(users, m.Content[0].String("text"))
		}
	}
	if len(f.Conv.History) >= len(p.Conv.History) || !slices.Equal(users, []string{"one"}) {
		t.Errorf("the fork's history: %d messages (of %d), the user's %q", len(f.Conv.History), len(p.Conv.History), users)
	}
	c.request("session/prompt", promptParams(fork, "three"))
	sent := c.backend(1).texts()
	if last := sent[len(sent)-1]; !strings.HasPrefix(last, "# Conversation so far") || !strings.Contains(last, "one") || strings.Contains(last, "two") {
		t.Errorf("the fork's first turn sent %q", last)
	}

	res, _ = c.request("session/fork", map[string]any{"sessionId": "claude:06c063d3-5368-41f8-87b9-778f42872b06", "cwd": cwd, "mcpServers": []any{}})
	cliFork, _ := res["sessionId"].(string)
	if g, err := archive.Open(cliFork, archive.KindDocument, true); err != nil || len(g.Conv.Items) == 0 {
		t.Fatalf("the fork of a CLI session %q: %v", cliFork, err)
	}

	// The fork is open: its delete closes it first, then removes it.
	res, _ = c.request("session/delete", map[string]any{"sessionId": fork})
	if meta := res["_meta"].(map[string]any)["spbridge"].(map[string]any); meta["removed"] != true {
		t.Errorf("delete answered %v", res)
	}
	if _, err := os.Stat(fork); !os.IsNotExist(err) {
		t.Errorf("the fork's package is still there: %v", err)
	}
	if m, _ := c.response(c.call("session/close", map[string]any{"sessionId": fork})); errCode(m) != CodeNotFound {
		t.Errorf("close after the delete: %v", m)
	}
	// Deleted already, or never known: a delete succeeds and does nothing.
	for _, id := range []string{fork, "never-known"} {
		if res, _ := c.request("session/delete", map[string]any{"sessionId": id}); res == nil || len(res) != 0 {
			t.Errorf("delete of %s: %v", id, res)
		}
	}
	const cli = "claude:06c063d3-5368-41f8-87b9-778f42872b06"
	res, _ = c.request("session/delete", map[string]any{"sessionId": cli})
	if meta := res["_meta"].(map[string]any)["spbridge"].(map[string]any); meta["removed"] != false {
		t.Errorf("delete of a CLI session answered %v", res)
	}
	res, _ = c.request("session/list", map[string]any{"cwd": "/work/project"})
	if l := res["sessions"].([]any); len(l) != 0 {
		t.Errorf("a deleted CLI session is listed: %v", l)
	}
	if _, err := os.Stat(filepath.Join(store, "projects", "-work-project", "06c063d3-5368-41f8-87b9-778f42872b06.jsonl")); err != nil {
		t.Errorf("the CLI's file: %v", err)
	}
}
