package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// scriptBackend is a fake backend whose turns run script.
type scriptBackend struct {
	*fakeBackend
	script func(ctx context.Context, h backend.Host) *itemmap.TurnEnd
}

func (s *scriptBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	return s.script(ctx, h)
}

// startScript starts a server whose claude sessions run script for each
// turn, initialized with caps as the clientCapabilities, and opens a
// session; it returns the client and the session's id.
func startScript(t *testing.T, caps map[string]any, script func(context.Context, backend.Host) *itemmap.TurnEnd) (*client, string) {
	t.Helper()
	c := startPlain(t, Config{CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		return &scriptBackend{fakeBackend: newFake(), script: script}, nil
	})}, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	return c, res["sessionId"].(string)
}

// compactingTurn is a turn whose CLI compacts its context as Claude Code
// does: in progress, the notice of its end, the summary, completed; then a
// second compaction that the turn's end leaves in progress.
func compactingTurn(_ context.Context, h backend.Host) *itemmap.TurnEnd {
	backend.Compacted(h, itemmap.Compaction{ID: "c1", Status: itemmap.CompactionInProgress})
	n := archive.NewItem(archive.TypeNotice)
	n.Set("id", "n1")
	n.Set("text", "Claude Code compacted the conversation.")
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: n, Compaction: &itemmap.Compaction{ID: "c1"}})
	backend.Compacted(h, itemmap.Compaction{ID: "c1", Status: itemmap.CompactionCompleted, Summary: "The user said hi."})
	backend.Compacted(h, itemmap.Compaction{ID: "c1", Status: itemmap.CompactionCompleted}) // ends once
	backend.Compacted(h, itemmap.Compaction{ID: "c2", Status: itemmap.CompactionInProgress})
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
}

// kinds lists the session/update kinds among msgs, with the compaction's
// id and status or the notice's title.
func kinds(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		if m["method"] != "session/update" {
			continue
		}
		u := m["params"].(map[string]any)["update"].(map[string]any)
		s := u["sessionUpdate"].(string)
		switch s {
		case "compaction_update":
			s += " " + u["compactionId"].(string) + " " + u["status"].(string)
			if sum, ok := u["summary"]; ok {
				b, _ := json.Marshal(sum)
				s += " " + string(b)
			}
		case "compaction_summary_chunk":
			s += " " + u["compactionId"].(string) + " " + u["content"].(map[string]any)["text"].(string)
		case "notice":
			s += " " + u["title"].(string)
		case "usage_update", "available_commands_update", "config_option_update":
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestCompactionUpdates: a client that shows compactions
// (clientCapabilities.session.compaction) sees the CLI's compaction as one
// entity, in progress, its summary as a chunk, completed, and not its
// notice; one left in progress ends cancelled with the turn. A client that
// does not sees the notice alone, as before, and one that advertises
// neither sees nothing of it, as before.
func TestCompactionUpdates(t *testing.T) {
	notices := map[string]any{"notices": map[string]any{}}
	both := map[string]any{"notices": map[string]any{}, "compaction": map[string]any{}}
	for _, tt := range []struct {
		name    string
		session map[string]any
		want    []string
	}{
		{"compaction", both, []string{
			"compaction_update c1 in_progress",
			"compaction_summary_chunk c1 The user said hi.",
			"compaction_update c1 completed",
			"compaction_update c2 in_progress",
			"compaction_update c2 cancelled",
		}},
		{"notices", notices, []string{"notice Claude Code compacted the conversation."}},
		{"plain", map[string]any{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, sid := startScript(t, map[string]any{"session": tt.session}, compactingTurn)
			_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("/compact")}})
			if got := kinds(seen); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("updates %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCompactionNoticeOnly: the notice of a compaction whose steps the
// client never heard of (one told between turns) shows as a compaction
// that completed, to a client that shows compactions.
func TestCompactionNoticeOnly(t *testing.T) {
	c, sid := startScript(t, map[string]any{"session": map[string]any{"compaction": map[string]any{}}},
		func(_ context.Context, h backend.Host) *itemmap.TurnEnd {
			backend.CompactionNotice(itemmap.SequentialIDs(), h, "Codex compacted the conversation.", "k1")
			return &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
		})
	_, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	if got, want := kinds(seen), []string{"compaction_update k1 completed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("updates %q, want %q", got, want)
	}
}

// TestPromptUsage: the answer to a prompt carries the turn's tokens
// (PromptResponse.usage): input, output, cache reads and writes and their
// sum; a turn that reported none has no usage.
func TestPromptUsage(t *testing.T) {
	usage := archive.Usage{Input: "12", Output: "30", CacheRead: "1000", CacheWrite: "200"}
	c, sid := startScript(t, nil, func(_ context.Context, h backend.Host) *itemmap.TurnEnd {
		u := usage
		usage = archive.Usage{}
		return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, Usage: u}
	})
	res, _ := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	want := map[string]any{"totalTokens": 1242.0, "inputTokens": 12.0, "outputTokens": 30.0, "cachedReadTokens": 1000.0, "cachedWriteTokens": 200.0}
	if !reflect.DeepEqual(res["usage"], want) {
		t.Errorf("usage %v, want %v", res["usage"], want)
	}
	res, _ = c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}})
	if _, ok := res["usage"]; ok || res["stopReason"] != "end_turn" {
		t.Errorf("answer %v, want no usage", res)
	}
}

// TestToolCards: a tool call names the CLI's tool (name) and shows what
// it returned, never the raw arguments of its detail, live and when
// session/load replays it; a command shows what it is for (the view's
// description) before its output.
func TestToolCards(t *testing.T) {
	pkg := newPackage(t)
	turn := func(_ context.Context, h backend.Host) *itemmap.TurnEnd {
		read := archive.NewItem(archive.TypeTool)
		read.Set("name", "Read")
		read.Set("summary", "/tmp/a.txt")
		read.Set("status", archive.StatusSucceeded)
		read.Set("detail", "arguments:\n{\n  \"file_path\": \"/tmp/a.txt\"\n}\n\noutput:\n1\thello")
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: read, Tool: &itemmap.ToolView{Kind: itemmap.KindRead, Title: "Read /tmp/a.txt"}})
		cmd := archive.NewItem(archive.TypeTool)
		cmd.Set("name", "Bash")
		cmd.Set("summary", "ls")
		cmd.Set("status", archive.StatusSucceeded)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: cmd, Tool: &itemmap.ToolView{Kind: itemmap.KindExecute, Title: "`ls`",
			Description: "List the files", Output: "a.txt\n"}})
		return &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
	}
	c := startPlain(t, Config{CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		return &scriptBackend{fakeBackend: newFake(), script: turn}, nil
	})}, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1})
	res, _ := c.request("session/new", newSessionParams(pkg))
	_, seen := c.request("session/prompt", map[string]any{"sessionId": res["sessionId"], "prompt": []any{textBlock("hi")}})
	calls := updates(seen, "tool_call")
	if len(calls) != 2 {
		t.Fatalf("tool calls %v", calls)
	}
	card := func(u map[string]any) string {
		var parts []string
		parts = append(parts, fmt.Sprint(u["name"]), fmt.Sprint(u["title"]))
		content, _ := u["content"].([]any)
		for _, c := range content {
			parts = append(parts, c.(map[string]any)["content"].(map[string]any)["text"].(string))
		}
		return strings.Join(parts, " | ")
	}
	if got, want := card(calls[0]), "Read | Read /tmp/a.txt | ```\n1\thello\n```"; got != want {
		t.Errorf("the Read card %q, want %q", got, want)
	}
	if got, want := card(calls[1]), "Bash | `ls` | List the files | ```\na.txt\n```"; got != want {
		t.Errorf("the command's card %q, want %q", got, want)
	}
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}

	c2 := startServer(t)
	_, seen = c2.request("session/load", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"backend": "claude"}}})
	calls = updates(seen, "tool_call")
	if len(calls) != 2 {
		t.Fatalf("replayed tool calls %v", calls)
	}
	if got, want := card(calls[0]), "Read | Read: /tmp/a.txt | ```\n1\thello\n```"; got != want {
		t.Errorf("the replayed Read card %q, want %q", got, want)
	}
	if got := card(calls[1]); !strings.HasPrefix(got, "Bash | Bash: ls") || strings.Contains(got, "arguments") {
		t.Errorf("the replayed command's card %q", got)
	}
}
