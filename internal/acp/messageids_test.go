package acp

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/history"
	"spbridge/internal/sessionindex"
)

// chunkIDs are the messageIds of the chunks of kind, each once, in order,
// and the text of each message.
func chunkIDs(t *testing.T, msgs []map[string]any, kind string) ([]string, map[string]string) {
	t.Helper()
	var ids []string
	texts := map[string]string{}
	for _, u := range updates(msgs, kind) {
		id, _ := u["messageId"].(string)
		text, _ := u["content"].(map[string]any)["text"].(string)
		if id == "" {
			t.Errorf("a %s without a messageId (%d bytes of text)", kind, len(text))
			continue
		}
		if n := len(text); n > wire.MaxText {
			t.Errorf("a %s of %d bytes of text", kind, n)
		}
		if len(ids) == 0 || ids[len(ids)-1] != id {
			if slices.Contains(ids, id) {
				t.Errorf("%s %s came back after another message", kind, id)
			}
			ids = append(ids, id)
		}
		texts[id] += text
	}
	return ids, texts
}

// TestMessageIDs: every message chunk carries the messageId of its
// message, the same on each of its chunks, the id of the item that holds
// it: the same live and when the session is loaded again, where the
// user's messages carry theirs too; a long reply goes out in chunks of at
// most wire.MaxText, live and replayed; session/fork takes the ids.
func TestMessageIDs(t *testing.T) {
	pkg := newPackage(t)
	c := startServer(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	_, first := c.request("session/prompt", promptParams(sid, "MARK first"))
	_, long := c.request("session/prompt", promptParams(sid, "long 1 80000"))
	live, liveTexts := chunkIDs(t, append(first, long...), wire.AgentMessageChunk)
	if len(live) != 2 || liveTexts[live[0]] != "Hello" || len(liveTexts[live[1]]) != 80000 {
		t.Fatalf("live messages %q", live)
	}
	if n := len(updates(long, wire.AgentMessageChunk)); n < 80000/wire.MaxText+1 {
		t.Errorf("the long reply went out in %d chunks", n)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var users, replies []string
	for _, it := range p.Conv.Items {
		switch it.Type() {
		case archive.TypeUser:
			users = append(users, it.ID())
		case archive.TypeAssistant:
			replies = append(replies, it.ID())
		}
	}
	if !slices.Equal(live, replies) {
		t.Errorf("live messageIds %q, the replies' items %q", live, replies)
	}

	c2 := startServer(t)
	_, seen := c2.request("session/load", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}})
	replayed, replayedTexts := chunkIDs(t, seen, wire.AgentMessageChunk)
	if !slices.Equal(replayed, live) || replayedTexts[live[1]] != liveTexts[live[1]] {
		t.Errorf("replayed messageIds %q, live %q", replayed, live)
	}
	if n := len(updates(seen, wire.AgentMessageChunk)); n < 80000/wire.MaxText+2 {
		t.Errorf("the replay sent the long reply in %d chunks", n)
	}
	userIDs, userTexts := chunkIDs(t, seen, wire.UserMessageChunk)
	if !slices.Equal(userIDs, users) || userTexts[users[0]] != "MARK first" {
		t.Errorf("replayed user messages %q (%q), the items %q", userIDs, userTexts, users)
	}

	// A fork at the first reply, by the id its chunks carried.
	forkPkg := newPackage(t)
	params := newSessionParams(forkPkg)
	params["sessionId"], params["messageId"] = pkg, live[0]
	c2.request("session/fork", params)
	c2.request("_spbridge/save", map[string]any{"sessionId": forkPkg})
	f, err := archive.Open(forkPkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Conv.Items); n == 0 || f.Conv.Items[n-1].ID() != live[0] || strings.Contains(f.Conv.Items[n-1].String("text"), "xxx") {
		t.Errorf("the fork at %s: %d items", live[0], n)
	}
}

// TestMessageIDsSurviveImport: a CLI's own session loaded (imported into
// a package) replays its messages with ids that a later serve's load of
// the same id (the package, imported once) replays again, and that a
// fork of the id takes.
func TestMessageIDsSurviveImport(t *testing.T) {
	store, cwd, _, _ := cliStore(t)
	state := t.TempDir()
	cfg := Config{History: &history.Options{Stores: clis.Stores(), Dirs: map[string]string{"claude": store, "codex": t.TempDir()}},
		SessionsDir: filepath.Join(state, "sessions"), Index: sessionindex.New(state), DefaultBackend: "claude"}
	const id = "claude:06c063d3-5368-41f8-87b9-778f42872b06"
	load := map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}
	ids := func(seen []map[string]any) []string {
		var all []string
		for _, kind := range []string{wire.UserMessageChunk, wire.AgentMessageChunk, wire.AgentThoughtChunk} {
			got, _ := chunkIDs(t, seen, kind)
			all = append(all, got...)
		}
		return all
	}
	c := startServerWith(t, cfg)
	_, seen := c.request("session/load", load)
	first := ids(seen)
	if len(first) < 2 {
		t.Fatalf("the import replayed messages %q", first)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	c2 := startServerWith(t, cfg)
	_, seen = c2.request("session/load", load)
	if again := ids(seen); !slices.Equal(again, first) {
		t.Errorf("the second load's messageIds %q, the first's %q", again, first)
	}
	params := map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}, "messageId": first[0]}
	res, _ := c2.request("session/fork", params)
	f, err := archive.Open(res["sessionId"].(string), archive.KindDocument, true)
	if err != nil || len(f.Conv.Items) == 0 || f.Conv.Items[len(f.Conv.Items)-1].ID() != first[0] {
		t.Errorf("the fork of %s at %s: %v", id, first[0], err)
	}
}
