package session

import (
	"encoding/json"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// TestGrants: an "always allow" covers the requests its grant covers and
// no other; an "always reject" wins over an allow of the same request.
func TestGrants(t *testing.T) {
	bash := func(cmd string) itemmap.Approval {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return itemmap.Approval{ToolName: "Bash", Input: in}
	}
	var s Session
	g := s.Grants()
	if a, r := g.Decided(bash("make test")); a || r {
		t.Fatalf("no grants: allowed %v, rejected %v", a, r)
	}
	gr, ok := backend.GrantFor(bash("make test"))
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
