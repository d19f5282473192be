package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2ESearch: a session begun with the real claude in a terminal and a
// conversation held in a package through serve (the real claude against
// the fake model API) are found by spbridge conversation search (the
// package by default, the CLI's own sessions with --cli), ranked, their
// matching lines marked; and by session/list with _meta.spbridge.query
// under the official client, the package and the terminal's session each
// found by its own words, best first, with snippets.
func TestE2ESearch(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "The wombat migration is planned for Tuesday."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "The quokka report lists three wombat sightings."}}},
	)
	work := filepath.Dir(e.pkg)
	cmd := exec.Command(fakeapi.ClaudePath(t), "-p", "plan the wombat migration")
	cmd.Env, cmd.Dir = e.env, work
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "wombat migration is planned") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	bin := spbridgeBin(t)
	events := runACPClient(t, map[string]any{
		"command": []string{bin, "serve"}, "env": acpEnv(e.env), "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},                                                 // 0
			map[string]any{"op": "newSession", "cwd": work, "saveAs": "s1"},                    // 1
			map[string]any{"op": "prompt", "session": "s1", "text": "write the quokka report"}, // 2
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work, "_meta": map[string]any{"spbridge": map[string]any{"query": "quokka"}}}},   // 3
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work, "_meta": map[string]any{"spbridge": map[string]any{"query": "wombat"}}}},   // 4
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"query": "migration"}}}},             // 5
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"cwd": work, "_meta": map[string]any{"spbridge": map[string]any{"query": "platypus"}}}}, // 6
			map[string]any{"op": "ext", "method": "session/list", "params": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"query": "*** ()"}}}},                // 7
			map[string]any{"op": "closeStdin"},
		},
	})
	if r := response(t, events, 2); r["stopReason"] != "end_turn" {
		t.Fatalf("the prompt: %v", r)
	}
	type found struct{ id, snippets string }
	list := func(step int) []found {
		var out []found
		l, _ := response(t, events, step)["sessions"].([]any)
		for _, s := range l {
			m := s.(map[string]any)
			meta, _ := m["_meta"].(map[string]any)
			sp, _ := meta["spbridge"].(map[string]any)
			var lines []string
			snips, _ := sp["snippets"].([]any)
			for _, sn := range snips {
				v := sn.(map[string]any)
				lines = append(lines, v["where"].(string)+": "+v["text"].(string))
			}
			out = append(out, found{m["sessionId"].(string), strings.Join(lines, " | ")})
		}
		return out
	}
	quokka := list(3)
	if len(quokka) != 1 || !strings.HasPrefix(quokka[0].id, "/") || quokka[0].snippets != "User: write the quokka report | Assistant: The quokka report lists three wombat sightings." {
		t.Errorf("quokka: %+v", quokka)
	}
	pkgID := ""
	if len(quokka) == 1 {
		pkgID = quokka[0].id
	}
	// wombat: the terminal's session says it twice (the title's words
	// weigh more), the package once.
	wombat := list(4)
	if len(wombat) != 2 || !strings.HasPrefix(wombat[0].id, "claude:") || wombat[1].id != pkgID ||
		wombat[0].snippets != "User: plan the wombat migration | Assistant: The wombat migration is planned for Tuesday." {
		t.Errorf("wombat: %+v", wombat)
	}
	if m := list(5); len(m) != 1 || !strings.HasPrefix(m[0].id, "claude:") {
		t.Errorf("migration, every folder: %+v", m)
	}
	if l := list(6); len(l) != 0 {
		t.Errorf("platypus: %+v", l)
	}
	var refused string
	for _, ev := range events {
		if ev.Step != nil && *ev.Step == 7 && ev.Event == "error" {
			refused = string(ev.Error)
		}
	}
	if !strings.Contains(refused, "-32602") || !strings.Contains(refused, "no word to search for") {
		t.Errorf("a query of no word: %s", refused)
	}

	// The shell: the package by default, the CLI's own sessions with --cli
	// (both claude's: the terminal's and the one the package's turn ran
	// on).
	search := func(args ...string) string {
		c := exec.Command(bin, append([]string{"conversation", "search"}, args...)...)
		c.Env = e.env
		out, err := c.Output()
		if err != nil {
			t.Fatalf("search %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := search("wombat")
	if !strings.HasPrefix(out, pkgID+"\t") || !strings.Contains(out, "  Assistant: The quokka report lists three »wombat« sightings.\n  spbridge conversation show "+pkgID+"\n") {
		t.Errorf("search wombat:\n%s", out)
	}
	out = search("--cli", "--cwd", work, "wombat")
	blocks := strings.Split(out, "\n\n")
	if len(blocks) != 2 || !strings.HasPrefix(blocks[0], "claude:") || !strings.Contains(blocks[0], "  User: plan the »wombat« migration\n") ||
		!strings.Contains(blocks[1], "  Assistant: The quokka report lists three »wombat« sightings.\n") || !strings.Contains(blocks[0], "  spbridge import --backend claude ") {
		t.Errorf("search --cli wombat:\n%s", out)
	}
}

// TestE2ESearchRunPackage: a package used only through spbridge run (the
// real claude against the fake model API) is in the sessions index, so
// conversation search finds it by the words of its turns, titled by its
// first message, with the command that shows it; a second run's words
// are found too.
func TestE2ESearchRunPackage(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "The pangolin poster needs a bolder headline."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Added an armadillo to the corner."}}})
	search := func(word string) string {
		t.Helper()
		cmd := exec.Command(spbridgeBin(t), "conversation", "search", word)
		cmd.Env = e.env
		out, err := cmd.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "no conversation matches") {
			t.Fatalf("conversation search %s: %v\n%s", word, err, out)
		}
		return string(out)
	}
	if out := search("pangolin"); !strings.Contains(out, "no conversation matches") {
		t.Fatalf("found before any run:\n%s", out)
	}
	e.run(nil, "review the pangolin poster")
	if e.code != 0 {
		e.fail("run: exit %d", e.code)
	}
	out := search("pangolin")
	if !strings.HasPrefix(out, e.pkg+"\t") || !strings.Contains(out, "\treview the pangolin poster\n") ||
		!strings.Contains(out, "Assistant: The »pangolin« poster needs a bolder headline.") ||
		!strings.Contains(out, "spbridge conversation show "+shellQuote(e.pkg)) {
		t.Errorf("conversation search pangolin after the run:\n%s", out)
	}
	e.run(nil, "add an armadillo")
	if e.code != 0 {
		e.fail("second run: exit %d", e.code)
	}
	if out := search("armadillo"); !strings.HasPrefix(out, e.pkg+"\t") || !strings.Contains(out, "\treview the pangolin poster\n") {
		t.Errorf("conversation search armadillo after the second run:\n%s", out)
	}
}
