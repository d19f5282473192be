package session

import (
	"encoding/json"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/codex"
	"spbridge/internal/itemmap"
)

// TestGrants: an "always allow" covers the requests its grant covers and
// no other; an "always reject" wins over an allow of the same request.
func TestGrants(t *testing.T) {
	bash := func(cmd string) itemmap.Approval {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return itemmap.Approval{ToolName: "Bash", Input: in, Cwd: "/p/work"}
	}
	var s Session
	g := &s.grants
	if a, r := g.Decided(bash("make test")); a || r {
		t.Fatalf("no grants: allowed %v, rejected %v", a, r)
	}
	gr, ok := backend.GrantFor(bash("make test"), claude.Plugin.Tools)
	if !ok {
		t.Fatal("make test has no grant")
	}
	g.Allow(gr)
	if a, r := g.Decided(bash("make test")); !a || r {
		t.Errorf("allowed: allowed %v, rejected %v", a, r)
	}
	if a, _ := g.Decided(bash("make test; rm -rf /")); a {
		t.Error("the grant of make test covers another command")
	}
	g.Reject(gr)
	if a, r := g.Decided(bash("make test")); a || !r {
		t.Errorf("rejected too: allowed %v, rejected %v", a, r)
	}
}

// TestGrantsFolder: an "always allow" of a command covers it in its
// folder only, and outside the sandbox only when given there; an "always
// reject" of it in the sandbox rejects it outside too.
func TestGrantsFolder(t *testing.T) {
	shell := func(dir, cmd string, escalated bool) itemmap.Approval {
		in, _ := json.Marshal(map[string]string{"command": cmd, "cwd": dir})
		return itemmap.Approval{ToolName: "shell", Input: in, Cwd: dir, Escalated: escalated}
	}
	var s Session
	g := &s.grants
	gr, ok := backend.GrantFor(shell("/p/work/build", "rm -f *", false), codex.Plugin.Tools)
	if !ok {
		t.Fatal("rm -f * has no grant")
	}
	g.Allow(gr)
	for _, tc := range []struct {
		a       itemmap.Approval
		allowed bool
	}{
		{shell("/p/work/build", "rm -f *", false), true},
		{shell("/p/work/build", "rm -f *", true), false},
		{shell("/p/elsewhere", "rm -f *", false), false},
		{shell("/p/elsewhere", "rm -f *", true), false},
		{shell("", "rm -f *", false), false},
	} {
		if a, r := g.Decided(tc.a); a != tc.allowed || r {
			t.Errorf("%s in %q (escalated %v): allowed %v, rejected %v; want allowed %v", tc.a.Input, tc.a.Cwd, tc.a.Escalated, a, r, tc.allowed)
		}
	}
	rej, _ := backend.GrantFor(shell("/p/other", "git clean -fdx", false), codex.Plugin.Tools)
	g.Reject(rej)
	if a, r := g.Decided(shell("/p/other", "git clean -fdx", true)); a || !r {
		t.Errorf("rejected in the sandbox, asked outside it: allowed %v, rejected %v", a, r)
	}
	if _, r := g.Decided(shell("/p/work/build", "git clean -fdx", false)); r {
		t.Error("a rejection in one folder rejects in another")
	}
}
