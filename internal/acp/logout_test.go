package acp

import (
	"context"
	"errors"
	"testing"

	"spbridge/internal/jsonrpc"
)

// TestLogout: with a Logout, initialize advertises auth.logout and logout
// runs it ({} or -32603 naming its error); without one, neither.
func TestLogout(t *testing.T) {
	calls := 0
	var fail error
	cfg := Config{Logout: func(context.Context) error { calls++; return fail }}
	c, _ := startControls(t, cfg, nil)
	c.mu.Lock()
	init := c.all[len(c.all)-1]
	c.mu.Unlock()
	caps := init["result"].(map[string]any)["agentCapabilities"].(map[string]any)
	if auth, _ := caps["auth"].(map[string]any); auth == nil || auth["logout"] == nil {
		t.Errorf("agentCapabilities %v: no auth.logout", caps)
	}
	if m, _ := c.response(c.call("logout", map[string]any{})); m["error"] != nil || calls != 1 {
		t.Errorf("logout: %v after %d calls", m, calls)
	}
	fail = errors.New("codex logout: exit status 1: cannot remove auth.json")
	if m, _ := c.response(c.call("logout", map[string]any{})); errCode(m) != jsonrpc.CodeInternalError {
		t.Errorf("a failed logout: %v", m)
	}

	plain, _ := startControls(t, Config{}, nil)
	plain.mu.Lock()
	init = plain.all[len(plain.all)-1]
	plain.mu.Unlock()
	if caps := init["result"].(map[string]any)["agentCapabilities"].(map[string]any); caps["auth"] != nil {
		t.Errorf("auth.logout advertised without a Logout: %v", caps)
	}
	if m, _ := plain.response(plain.call("logout", map[string]any{})); errCode(m) != jsonrpc.CodeMethodNotFound {
		t.Errorf("logout without a Logout: %v", m)
	}
}
