package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeClaudeTools drives the real claude through spbridge serve with
// the official ACP client, which validates every message: an Edit shows as
// an edit titled by its file, its permission request carries the diff, the
// finished call's diffs are hunks of the file before and after; a Read of a
// picture comes back as image content and is stored in agent/images/ under
// its SHA-256 by _spbridge/save; and a usage_update follows the turn.
func TestE2EServeClaudeTools(t *testing.T) {
	t.Parallel()
	const (
		before = "alpha\nbeta\ngamma\n"
		after  = "alpha\nBETA\ngamma\n"
	)
	png, err := os.ReadFile(filepath.Join("..", "..", "testdata", "packages", "Poster.silverpoint", "agent", "images",
		"83caf76779373891ebfc9cd602157d32b82b34d926fa14856356a3219ed5fc94.png"))
	if err != nil {
		t.Fatal(err)
	}
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	notes := filepath.Join(work, "notes.txt")
	picture := filepath.Join(work, "picture.png")
	// Claude Code edits only a file it has read.
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": notes}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "BETA"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Read", Input: map[string]any{"file_path": picture}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Edited and looked."}}})
	if err := os.WriteFile(notes, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(picture, png, 0o644); err != nil {
		t.Fatal(err)
	}
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"permissions": []string{"allow_once"},
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "edit the notes and look at the picture"},
			map[string]any{"op": "ext", "method": "_spbridge/save", "params": map[string]any{"sessionId": "$s1"}},
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", r)
	}
	if got, _ := os.ReadFile(notes); string(got) != after {
		t.Fatalf("notes.txt after the turn = %q", got)
	}

	var editID, editTitle string
	var diffs []map[string]any
	var imageData string
	var usage map[string]any
	for _, ev := range events {
		if ev.Event == "request" && ev.Method == "session/request_permission" {
			var p struct{ ToolCall map[string]any }
			json.Unmarshal(ev.Params, &p)
			if !hasDiff(p.ToolCall, notes, "beta", "BETA") {
				t.Errorf("the Edit's permission request carries no diff of notes.txt: %v", p.ToolCall)
			}
			continue
		}
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct{ Update map[string]any }
		json.Unmarshal(ev.Params, &p)
		u := p.Update
		id, _ := u["toolCallId"].(string)
		switch u["sessionUpdate"] {
		case "tool_call":
			// The turn's change set shows as an edit call of its own at
			// the end (TestE2EServeCheckpoints).
			if u["kind"] == "edit" && u["title"] != "Files changed in this turn" {
				editID = id
			}
		case "usage_update":
			usage = u
		}
		// The call is announced as its input starts to stream; its title
		// names the file once the input is whole.
		if title, ok := u["title"].(string); ok && id != "" && id == editID {
			editTitle = title
		}
		content, _ := u["content"].([]any)
		for _, c := range content {
			c := c.(map[string]any)
			switch {
			case c["type"] == "diff" && id == editID && u["status"] == "completed":
				diffs = append(diffs, c)
			case c["type"] == "content":
				if b, _ := c["content"].(map[string]any); b["type"] == "image" {
					imageData, _ = b["data"].(string)
				}
			}
		}
	}
	if editID == "" || len(diffs) == 0 {
		t.Fatalf("no edit call (%q) or no diff at its end (%v)", editID, diffs)
	}
	if editTitle != "Edit notes.txt" {
		t.Errorf("the edit's title is %q, want %q", editTitle, "Edit notes.txt")
	}
	for _, d := range diffs {
		old, _ := d["oldText"].(string)
		if d["path"] != notes || !strings.Contains(before, old) || !strings.Contains(after, d["newText"].(string)) || old == d["newText"] {
			t.Errorf("diff %v is not a hunk of the change", d)
		}
	}
	if imageData == "" {
		t.Error("the picture the Read returned reached the editor as no image content")
	}
	if usage == nil || usage["used"] == nil || usage["size"] == nil {
		t.Errorf("usage_update %v", usage)
	}
	sum := sha256.Sum256(png)
	stored, err := os.ReadFile(filepath.Join(e.pkg, "agent", "images", hex.EncodeToString(sum[:])+".png"))
	if err != nil || string(stored) != string(png) {
		t.Errorf("the picture is not in agent/images under its SHA-256 after the save: %v", err)
	}
}

// hasDiff reports whether an ACP tool call carries a diff of path whose old
// text holds oldPart and whose new text holds newPart.
func hasDiff(call map[string]any, path, oldPart, newPart string) bool {
	content, _ := call["content"].([]any)
	for _, c := range content {
		c, _ := c.(map[string]any)
		old, _ := c["oldText"].(string)
		nw, _ := c["newText"].(string)
		if c["type"] == "diff" && c["path"] == path && strings.Contains(old, oldPart) && strings.Contains(nw, newPart) {
			return true
		}
	}
	return false
}
