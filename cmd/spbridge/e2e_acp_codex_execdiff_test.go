package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeCodexPatchDiffs drives the real codex through spbridge serve
// with the official ACP client, on both transports, with a patch that
// updates a file in two hunks, adds one, deletes one and moves one: the
// completed tool_call_update carries a diff per hunk whose old and new
// texts are in the file before and after, the added file's text (no old
// text), the deleted file's old text, the moved file at its new path, and
// the first changed line of the updated file. On exec, whose JSON carries
// no diff, they come from codex's log of the thread, and the saved
// conversation has none of them (its history has the model's patch).
func TestE2EServeCodexPatchDiffs(t *testing.T) {
	t.Parallel()
	const (
		before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
		after  = "one\nTWO\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nELEVEN\ntwelve\n"
		patch  = "*** Begin Patch\n" +
			"*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n three\n@@\n ten\n-eleven\n+ELEVEN\n twelve\n" +
			"*** Add File: added.txt\n+first\n+second\n" +
			"*** Delete File: gone.txt\n" +
			"*** Update File: old/name.txt\n*** Move to: new/name.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n"
	)
	for _, transport := range []string{"exec", "app-server"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			e, _ := newCodexE2E(t,
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch_1", Input: patch}}},
				fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
			work := filepath.Dir(e.pkg)
			j := func(p string) string { return filepath.Join(work, p) }
			for name, text := range map[string]string{"numbers.txt": before, "gone.txt": "bye\n", "old/name.txt": "alpha\nbeta\n"} {
				os.MkdirAll(filepath.Dir(j(name)), 0o755)
				if err := os.WriteFile(j(name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			envMap := acpEnv(e.env)
			meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "codex"}}
			events := runACPClient(t, map[string]any{
				"command": []string{spbridgeBin(t), "serve", "--codex-transport", transport}, "env": envMap, "cwd": work,
				"steps": []any{
					map[string]any{"op": "initialize"},
					map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
					map[string]any{"op": "prompt", "session": "s1", "text": "change the files"},
					map[string]any{"op": "closeStdin"},
				},
			})
			if r := response(t, events, 2); r["stopReason"] != "end_turn" {
				t.Fatalf("prompt: %v", r)
			}
			if got, _ := os.ReadFile(j("numbers.txt")); string(got) != after {
				t.Fatalf("numbers.txt after the turn = %q", got)
			}
			var patchID string
			var diffs []map[string]any
			var locations []any
			for _, ev := range events {
				if ev.Event != "notification" || ev.Method != "session/update" {
					continue
				}
				var p struct{ Update map[string]any }
				json.Unmarshal(ev.Params, &p)
				u := p.Update
				if changesCall(u) {
					continue // the turn's change set, not the patch
				}
				id, _ := u["toolCallId"].(string)
				if u["sessionUpdate"] == "tool_call" && u["kind"] == "edit" {
					patchID = id
				}
				if id == "" || id != patchID || u["status"] != "completed" {
					continue
				}
				if content, ok := u["content"].([]any); ok {
					diffs = nil
					for _, c := range content {
						if c := c.(map[string]any); c["type"] == "diff" {
							diffs = append(diffs, c)
						}
					}
				}
				if l, ok := u["locations"].([]any); ok {
					locations = l
				}
			}
			if patchID == "" {
				t.Fatalf("no edit call")
			}
			byPath := map[string][]map[string]any{}
			for _, d := range diffs {
				p, _ := d["path"].(string)
				byPath[p] = append(byPath[p], d)
			}
			// On exec the deleted file's old text is in codex's FileChange
			// event, which codex may not have written to its log yet when
			// it prints the item: then the patch gives the rest.
			want := 5
			if transport == "exec" && byPath[j("gone.txt")] == nil {
				want = 4
			} else if g := byPath[j("gone.txt")]; len(g) != 1 || g[0]["oldText"] != "bye\n" || g[0]["newText"] != "" {
				t.Errorf("deleted file: %v", g)
			}
			if len(diffs) != want || len(byPath[j("numbers.txt")]) != 2 {
				t.Fatalf("diffs at the patch's end: %v", diffs)
			}
			for _, d := range byPath[j("numbers.txt")] {
				old, _ := d["oldText"].(string)
				if !strings.Contains(before, old) || !strings.Contains(after, d["newText"].(string)) || old == d["newText"] {
					t.Errorf("diff %v is not a hunk of the change", d)
				}
			}
			if a := byPath[j("added.txt")]; len(a) != 1 || a[0]["oldText"] != nil || a[0]["newText"] != "first\nsecond\n" {
				t.Errorf("added file: %v", a)
			}
			if m := byPath[j("new/name.txt")]; len(m) != 1 || m[0]["oldText"] != "alpha\nbeta" || m[0]["newText"] != "alpha\nBETA" {
				t.Errorf("moved file: %v", m)
			}
			found := false
			for _, l := range locations {
				l := l.(map[string]any)
				if l["path"] == j("numbers.txt") {
					found = l["line"] == 2.0
				}
			}
			if !found {
				t.Errorf("locations %v: numbers.txt not at line 2", locations)
			}
			if transport == "exec" {
				// The history holds the model's patch (bare "@@" hunks),
				// not the diffs of the log ("@@ -1,3 +1,3 @@").
				saved, err := os.ReadFile(filepath.Join(e.pkg, "agent", "conversation.json"))
				if err != nil || !strings.Contains(string(saved), "numbers.txt") || strings.Contains(string(saved), "@@ -") {
					t.Errorf("the saved conversation (%v) has the diff, or not the change:\n%s", err, saved)
				}
			}
		})
	}
}

// TestE2ERunCodexExecPatchDiff: spbridge run on codex exec prints a
// patch's diff under its call, from codex's log of the thread.
func TestE2ERunCodexExecPatchDiff(t *testing.T) {
	t.Parallel()
	const patch = "*** Begin Patch\n*** Update File: numbers.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch\n"
	e, _ := newCodexE2E(t,
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{{Type: "custom_tool_call", Name: "apply_patch", CallID: "call_patch_1", Input: patch}}},
		fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
	numbers := filepath.Join(filepath.Dir(e.pkg), "numbers.txt")
	if err := os.WriteFile(numbers, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "--backend", "codex", "--codex-transport", "exec", "capitalize two")
	out := e.stdout.String()
	if e.code != 0 || !strings.Contains(out, "-two\n") || !strings.Contains(out, "+TWO\n") {
		e.fail("exit %d, no diff of numbers.txt in the output", e.code)
	}
}
