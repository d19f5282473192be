package main

import (
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
	"spbridge/internal/restore"
)

// TestE2EServeSwitchCLI drives serve with the official ACP client on the
// real claude, then switches the session to the real codex through the
// "cli" configuration option: codex's first request carries the
// conversation so far (what claude was told and said) before the user's
// words, and the saved conversation holds both turns without the prefix.
func TestE2EServeSwitchCLI(t *testing.T) {
	t.Parallel()
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Claude heard the heron."}}})
	oai, err := fakeapi.NewOpenAI(fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Codex heard it too.")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oai.Close)
	root := filepath.Dir(filepath.Dir(e.pkg))
	env := append(e.env, oai.CodexEnv(t, root)...)
	env = append(env, "SPBRIDGE_CODEX="+fakeapi.CodexPath(t), "CLAUDE_CONFIG_DIR="+filepath.Join(root, "home", ".claude"))
	work := filepath.Dir(e.pkg)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	steps := []any{
		map[string]any{"op": "initialize"},                                            // 0
		map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"}, // 1
		map[string]any{"op": "prompt", "session": "s1", "text": "remember heron"},     // 2
		map[string]any{"op": "ext", "method": "session/set_config_option",
			"params": map[string]any{"sessionId": "$s1", "configId": "cli", "value": "codex"}}, // 3
		map[string]any{"op": "prompt", "session": "s1", "text": "what did I say?"}, // 4
		map[string]any{"op": "closeStdin"},
	}
	events := runACPClient(t, map[string]any{"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(env), "cwd": work, "steps": steps})
	for _, n := range []int{2, 4} {
		if r := response(t, events, n); r["stopReason"] != "end_turn" {
			t.Fatalf("prompt %d: %v", n, r)
		}
	}
	var cli map[string]any
	for _, o := range response(t, events, 3)["configOptions"].([]any) {
		if o := o.(map[string]any); o["id"] == "cli" {
			cli = o
		}
	}
	if cli == nil || cli["currentValue"] != "codex" {
		t.Errorf("the cli option after the switch: %v", cli)
	}
	reqs := oai.Requests()
	if len(reqs) != 1 {
		t.Fatalf("codex made %d model requests, want 1", len(reqs))
	}
	texts := strings.Join(inputTexts(reqs[0].Body), "\n")
	i, j := strings.Index(texts, restore.Heading), strings.Index(texts, "what did I say?")
	if i < 0 || j < i || !strings.Contains(texts[i:j], "remember heron") || !strings.Contains(texts[i:j], "Claude heard the heron.") {
		t.Errorf("codex's first request does not carry the conversation so far before the words: %.2000s", texts)
	}
	got := strings.Join(e.items(), "|")
	want := "user: remember heron|assistant: Claude heard the heron.|user: what did I say?|assistant: Codex heard it too."
	if got != want {
		t.Errorf("items %q, want %q", got, want)
	}
	c := e.conv()
	for _, m := range c.History {
		for _, b := range m.Content {
			if strings.Contains(b.String("text"), restore.Heading) {
				t.Errorf("the prefix entered the history: %.200s", b.String("text"))
			}
		}
	}
	if c.Provider != "codex" {
		t.Errorf("provider %q after a turn on codex", c.Provider)
	}
}
