package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// cardUpdates lists the compaction and notice updates among events, each
// as its kind and what it carries (the compaction's status and summary
// text, the notice's title).
func cardUpdates(events []acpEvent) []string {
	var out []string
	for _, e := range events {
		if e.Event != "notification" || e.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct {
				SessionUpdate, Status, Title, CompactionID string
				Summary                                    []struct{ Text string }
				Content                                    struct{ Text string }
			}
		}
		json.Unmarshal(e.Params, &p)
		u := p.Update
		switch u.SessionUpdate {
		case "compaction_update":
			s := u.SessionUpdate + " " + u.Status
			for _, b := range u.Summary {
				s += " " + b.Text
			}
			out = append(out, s)
		case "compaction_summary_chunk":
			out = append(out, u.SessionUpdate+" "+u.Content.Text)
		case "notice":
			out = append(out, u.SessionUpdate+" "+u.Title)
		}
	}
	return out
}

// compactScenario runs serve on backend for a client whose
// clientCapabilities.session is caps: a prompt, then /compact. It returns
// the events and the two prompts' steps.
func compactScenario(t *testing.T, env []string, pkg, backend string, caps map[string]any) []acpEvent {
	t.Helper()
	work := filepath.Dir(pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": pkg, "backend": backend}}
	return runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize", "clientCapabilities": map[string]any{"session": caps}},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "hi"},
			map[string]any{"op": "prompt", "session": "s1", "text": "/compact"},
			map[string]any{"op": "closeStdin"},
		},
	})
}

// TestE2EServeCompaction drives the real claude and the real codex
// (app-server) through serve with the official ACP client, which checks
// every message against the schema: the CLI's /compact shows as one
// compaction_update entity (in progress, then completed; Claude's summary
// as a compaction_summary_chunk, without Claude Code's framing) to a
// client that advertises clientCapabilities.session.compaction, and as the
// notice it was before to one that presents notices only. The first
// prompt's answer carries its tokens (PromptResponse.usage).
func TestE2EServeCompaction(t *testing.T) {
	t.Parallel()
	summary := "The user said hi; the assistant greeted them."
	notices := map[string]any{"notices": map[string]any{}}
	both := map[string]any{"notices": map[string]any{}, "compaction": map[string]any{}}
	for _, backend := range []string{"claude", "codex"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			for _, tt := range []struct {
				name string
				caps map[string]any
			}{{"compaction", both}, {"notices", notices}} {
				var e *e2e
				if backend == "claude" {
					e = newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Hello there."}}},
						fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "<analysis>a</analysis>\n<summary>" + summary + "</summary>"}}})
				} else {
					e, _ = newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Hello there.")}},
						fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Summary: " + summary)}})
				}
				events := compactScenario(t, e.env, e.pkg, backend, tt.caps)
				got := cardUpdates(events)
				var want []string
				switch {
				case tt.name == "notices":
					if len(got) != 1 || !strings.HasPrefix(got[0], "notice ") || !strings.Contains(got[0], "compacted the conversation") {
						t.Errorf("%s, notices only: %q, want the compaction's notice alone", backend, got)
					}
				case backend == "claude":
					want = []string{"compaction_update in_progress", "compaction_summary_chunk " + summary, "compaction_update completed"}
				default:
					want = []string{"compaction_update in_progress", "compaction_update completed"}
				}
				if want != nil && !slices.Equal(got, want) {
					t.Errorf("%s, compaction: %q, want %q", backend, got, want)
				}
				usage, _ := response(t, events, 2)["usage"].(map[string]any)
				if n, _ := usage["outputTokens"].(float64); n <= 0 || usage["totalTokens"].(float64) < n {
					t.Errorf("%s: the prompt's usage %v, want its tokens", backend, usage)
				}
			}
		})
	}
}

// toolCards are the tool_call and tool_call_update updates of events,
// and the toolCall of each permission request.
func toolCards(events []acpEvent) (updates, asked []map[string]any) {
	for _, e := range events {
		var p struct {
			Update   map[string]any `json:"update"`
			ToolCall map[string]any `json:"toolCall"`
		}
		json.Unmarshal(e.Params, &p)
		switch {
		case e.Event == "notification" && e.Method == "session/update":
			if k := p.Update["sessionUpdate"]; (k == "tool_call" || k == "tool_call_update") && !changesCall(p.Update) {
				updates = append(updates, p.Update)
			}
		case e.Event == "request" && e.Method == "session/request_permission":
			asked = append(asked, p.ToolCall)
		}
	}
	return updates, asked
}

// cardTexts are the text blocks of a tool call's content.
func cardTexts(u map[string]any) []string {
	var out []string
	content, _ := u["content"].([]any)
	for _, c := range content {
		if m, _ := c.(map[string]any)["content"].(map[string]any); m["type"] == "text" {
			out = append(out, m["text"].(string))
		}
	}
	return out
}

// TestE2EServeToolCards drives the real claude and the real codex
// (app-server) through serve with the official ACP client: every tool
// call names the CLI's tool (name); Claude's Bash shows its description
// and its Read the file's text, never its raw arguments, and session/load
// replays each of its calls (Read, Write, Bash) with a title and what it
// returned (the Bash call's description first), never the raw arguments
// either; a Codex approval
// of a command outside the sandbox says the model's justification and
// that it runs outside the sandbox.
func TestE2EServeToolCards(t *testing.T) {
	t.Parallel()
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		e := newE2E(t)
		work := filepath.Dir(e.pkg)
		file := filepath.Join(work, "notes.txt")
		if err := os.WriteFile(file, []byte("alpha\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.srv.Push(
			fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_read", Name: "Read", Input: map[string]any{"file_path": file}}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_write", Name: "Write", Input: map[string]any{"file_path": filepath.Join(work, "new.txt"), "content": "beta\n"}}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: "toolu_bash", Name: "Bash", Input: map[string]any{"command": "echo hi", "description": "Say hi"}}}},
			fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Done."}}})
		meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
		events := runACPClient(t, map[string]any{
			"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
			"permissions": []string{"allow_once", "allow_once", "allow_once"},
			"steps": []any{
				map[string]any{"op": "initialize"},
				map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
				map[string]any{"op": "prompt", "session": "s1", "text": "read and greet"},
				map[string]any{"op": "closeStdin"},
			},
		})
		updates, asked := toolCards(events)
		names := map[string]bool{}
		var readText, bashText string
		for _, u := range updates {
			if u["sessionUpdate"] == "tool_call" {
				names[u["name"].(string)] = true
			}
			if u["status"] != "completed" {
				continue
			}
			switch u["name"] {
			case "Read":
				readText = strings.Join(cardTexts(u), "|")
			case "Bash":
				bashText = strings.Join(cardTexts(u), "|")
			}
		}
		if !names["Read"] || !names["Bash"] {
			t.Errorf("tool call names %v, want Read and Bash", names)
		}
		if !strings.Contains(readText, "alpha") || strings.Contains(readText, "arguments") {
			t.Errorf("the Read card's text %q, want the file's text and not the arguments", readText)
		}
		if !strings.HasPrefix(bashText, "Say hi|") || !strings.Contains(bashText, "hi") {
			t.Errorf("the Bash card's text %q, want its description, then its output", bashText)
		}
		for _, tc := range asked {
			if tc["name"] == "Bash" && !slices.Equal(cardTexts(tc), []string{"Say hi"}) {
				t.Errorf("the Bash permission request's text %q, want its description", cardTexts(tc))
			}
		}

		// Loaded again: each call replayed with its title and what it
		// returned.
		events = runACPClient(t, map[string]any{
			"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
			"steps": []any{
				map[string]any{"op": "initialize"},
				map[string]any{"op": "loadSession", "sessionId": e.pkg, "cwd": work, "meta": meta, "saveAs": "s1"},
				map[string]any{"op": "closeStdin"},
			},
		})
		replayed, _ := toolCards(events)
		var got []string
		for _, u := range replayed {
			text := strings.Join(cardTexts(u), "|")
			got = append(got, fmt.Sprint(u["name"]))
			if u["title"] == nil || u["title"] == "" || text == "" || strings.Contains(text, "arguments") || strings.Contains(text, `"file_path"`) {
				t.Errorf("the replayed %v card: title %q, text %q; want a title and what it returned", u["name"], u["title"], text)
			}
		}
		if !slices.Equal(got, []string{"Read", "Write", "Bash"}) {
			t.Errorf("replayed tool calls %q, want Read, Write and Bash", got)
		} else if text := cardTexts(replayed[2]); len(text) != 2 || text[0] != "Say hi" || !strings.Contains(text[1], "hi") {
			t.Errorf("the replayed Bash card's text %q, want its description, then its output", text)
		}
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		args := map[string]any{"cmd": "echo hi", "sandbox_permissions": "require_escalated", "justification": "Say hi outside the sandbox?"}
		e, _ := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", CallID: "call_hi", Arguments: args}}},
			fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
		work := filepath.Dir(e.pkg)
		meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
		events := runACPClient(t, map[string]any{
			"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work,
			"permissions": []string{"reject_once"},
			"steps": []any{
				map[string]any{"op": "initialize"},
				map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
				map[string]any{"op": "prompt", "session": "s1", "text": "say hi"},
				map[string]any{"op": "closeStdin"},
			},
		})
		updates, asked := toolCards(events)
		if len(asked) != 1 {
			t.Fatalf("permission requests %v, want the command's", asked)
		}
		want := []string{"Reason: Say hi outside the sandbox?\n\nRuns outside the sandbox."}
		if got := cardTexts(asked[0]); !slices.Equal(got, want) || asked[0]["name"] == nil {
			t.Errorf("the approval's card: name %v, text %q; want a name and %q", asked[0]["name"], got, want)
		}
		for _, u := range updates {
			if u["sessionUpdate"] == "tool_call" && u["name"] == nil {
				t.Errorf("a tool call without its name: %v", u)
			}
		}
		if len(updates) == 0 {
			t.Error("no tool call")
		}
	})
}

// TestE2EServeCodexFast drives the real codex (app-server) through serve
// with the official ACP client: its fast service tier is a boolean config
// option for a client that advertises
// clientCapabilities.session.configOptions.boolean, and turning it on
// sends the turn's model requests at the fast tier (service_tier
// "priority", as the fake model API sees it); a client that does not
// advertise it is offered no such option.
func TestE2EServeCodexFast(t *testing.T) {
	t.Parallel()
	for _, booleans := range []bool{true, false} {
		e, srv := newCodexE2E(t, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Fast hello.")}})
		work := filepath.Dir(e.pkg)
		meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
		caps := map[string]any{}
		steps := []any{
			map[string]any{"op": "initialize", "clientCapabilities": caps},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "config_option_update"},
		}
		if booleans {
			// Once the app-server listed its models (whose tiers it takes).
			steps[2].(map[string]any)["contains"] = `"id":"fast"`
			caps["session"] = map[string]any{"configOptions": map[string]any{"boolean": map[string]any{}}}
			steps = append(steps, map[string]any{"op": "ext", "method": "session/set_config_option",
				"params": map[string]any{"sessionId": "$s1", "configId": "fast", "type": "boolean", "value": true}})
		}
		steps = append(steps, map[string]any{"op": "prompt", "session": "s1", "text": "hi"}, map[string]any{"op": "closeStdin"})
		events := runACPClient(t, map[string]any{"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(e.env), "cwd": work, "steps": steps})
		offered := false
		for _, ev := range events {
			if strings.Contains(string(ev.Params)+string(ev.Result), `"id":"fast"`) {
				offered = true
			}
		}
		var tiers []string
		for _, r := range srv.Requests() {
			var body struct {
				ServiceTier string `json:"service_tier"`
			}
			json.Unmarshal(r.Body, &body)
			tiers = append(tiers, body.ServiceTier)
		}
		if booleans {
			set := response(t, events, 3)
			var fast map[string]any
			for _, o := range set["configOptions"].([]any) {
				if m := o.(map[string]any); m["id"] == "fast" {
					fast = m
				}
			}
			if fast == nil || fast["type"] != "boolean" || fast["currentValue"] != true {
				t.Errorf("the fast option after turning it on: %v", fast)
			}
			if len(tiers) == 0 || tiers[len(tiers)-1] != "priority" {
				t.Errorf("the turn's requests went at tiers %q, want priority", tiers)
			}
		} else {
			if offered {
				t.Error("a client without boolean options was offered fast")
			}
			if slices.Contains(tiers, "priority") {
				t.Errorf("the turn's requests went at tiers %q unasked", tiers)
			}
		}
	}
}

// changesCall reports whether a tool call update is the one that tells a
// turn's change set at its end ("Files changed in this turn"), which no
// tool of the CLI made.
func changesCall(u map[string]any) bool {
	return u["title"] == "Files changed in this turn"
}
