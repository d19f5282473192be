package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
)

// TestE2EServeKillKeepsFinishedTurns: with the real claude, a kill -9 of
// serve after N finished turns of a plain client's thread (its package in
// the state folder) leaves all N in the package, cycle after cycle.
func TestE2EServeKillKeepsFinishedTurns(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	var pkg string
	var texts []string
	for cycle, n := range []int{2, 1} {
		p := startKillServe(t, e.env)
		p.call("initialize", map[string]any{"protocolVersion": 1})
		params := map[string]any{"cwd": filepath.Dir(e.pkg), "mcpServers": []any{}}
		if pkg == "" {
			res := p.call("session/new", params)
			pkg, _ = res["sessionId"].(string)
		} else {
			params["sessionId"] = pkg
			p.call("session/load", params)
		}
		for i := range n {
			text := fmt.Sprintf("message %d.%d", cycle, i)
			p.prompt(pkg, text)
			texts = append(texts, text)
		}
		p.kill()
		a, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil || a.Unreadable != "" {
			t.Fatalf("open %s: %v %s", pkg, err, a.Unreadable)
		}
		var got, want []string
		for _, it := range a.Conv.Items {
			if it.Type() == archive.TypeUser || it.Type() == archive.TypeAssistant {
				got = append(got, it.Type()+": "+it.String("text"))
			}
		}
		for _, text := range texts {
			want = append(want, "user: "+text, "assistant: ok")
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("cycle %d: after a kill -9 the package holds\n%s\nwant\n%s", cycle, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
