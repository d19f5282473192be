package main

import (
	"encoding/json"
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
