package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
	"spbridge/internal/restore"
)

// TestE2EServeRewindSwitchCLI: over spbridge serve with the official ACP
// client, the real claude edits a file in one turn and edits it again and
// writes another into a new folder in a second; _session/rewind (the
// message named by its fingerprint, as codex-acp's clients do) to before
// the second puts the files back as the first turn left them, and after a
// switch to the real codex through the "cli" option, codex's request
// carries "# Conversation so far" with the first turn and nothing of the
// second.
func TestE2EServeRewindSwitchCLI(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	notes := filepath.Join(work, "notes.txt")
	writeFiles(t, work, map[string]string{"notes.txt": "alpha\nbeta\ngamma\n"})
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": notes}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "BETA"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "ANSWER-one"}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "gamma", "new_string": "GAMMA"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": filepath.Join(work, "made", "new.txt"), "content": "new\n"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "ANSWER-two"}}})
	oai, err := fakeapi.NewOpenAI(fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("ANSWER-codex")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oai.Close)
	root := filepath.Dir(work)
	env := append(e.env, oai.CodexEnv(t, root)...)
	env = append(env, "SPBRIDGE_CODEX="+fakeapi.CodexPath(t), "CLAUDE_CONFIG_DIR="+filepath.Join(root, "home", ".claude"))
	second := "MARK-two: edit again"
	sum := sha256.Sum256([]byte(second))
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": acpEnv(env), "cwd": work,
		"permissions": []string{"allow_once", "allow_once", "allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},                                            // 0
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"}, // 1
			map[string]any{"op": "prompt", "session": "s1", "text": "MARK-one: edit"},     // 2
			map[string]any{"op": "prompt", "session": "s1", "text": second},               // 3
			map[string]any{"op": "ext", "method": "_session/rewind", "params": map[string]any{"sessionId": "$s1", // 4
				"beforeMessage": map[string]any{"messageId": "not-a-message-id", "messageFingerprint": "sha256:" + hex.EncodeToString(sum[:])}}},
			map[string]any{"op": "ext", "method": "session/set_config_option",
				"params": map[string]any{"sessionId": "$s1", "configId": "cli", "value": "codex"}}, // 5
			map[string]any{"op": "prompt", "session": "s1", "text": "MARK-three"}, // 6
			map[string]any{"op": "closeStdin"},
		},
	})
	for _, n := range []int{2, 3, 6} {
		if r := response(t, events, n); r["stopReason"] != "end_turn" {
			t.Fatalf("prompt %d: %v", n, r)
		}
	}
	res := response(t, events, 4)
	files, _ := res["files"].(map[string]any)
	conv, _ := res["conversation"].(map[string]any)
	if files["rewound"] != true || conv["rewound"] != true || conv["turn"] != float64(2) {
		t.Fatalf("_session/rewind: %v", res)
	}
	if got := readFile(notes); got != "alpha\nBETA\ngamma\n" {
		t.Errorf("notes.txt = %q after the rewind, want it as the first turn left it", got)
	}
	if _, err := os.Lstat(filepath.Join(work, "made")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the folder the second turn made is still there: %v", err)
	}
	reqs := oai.Requests()
	if len(reqs) != 1 {
		t.Fatalf("codex made %d model requests, want 1", len(reqs))
	}
	texts := strings.Join(inputTexts(reqs[0].Body), "\n")
	i, j := strings.Index(texts, restore.Heading), strings.Index(texts, "MARK-three")
	if i < 0 || j < i || !strings.Contains(texts[i:j], "MARK-one: edit") || !strings.Contains(texts[i:j], "ANSWER-one") {
		t.Errorf("codex's request does not carry the kept turn as the conversation so far: %.3000s", texts)
	}
	for _, gone := range []string{"MARK-two", "ANSWER-two", "GAMMA", "new.txt"} {
		if strings.Contains(string(reqs[0].Body), gone) {
			t.Errorf("codex was told %s, which the rewind removed", gone)
		}
	}
	var users []string
	for _, it := range e.items() {
		if strings.HasPrefix(it, "user: ") || strings.HasPrefix(it, "assistant: ") {
			users = append(users, it)
		}
	}
	if got, want := strings.Join(users, "|"), "user: MARK-one: edit|assistant: ANSWER-one|user: MARK-three|assistant: ANSWER-codex"; got != want {
		t.Errorf("items %q, want %q", got, want)
	}
}
