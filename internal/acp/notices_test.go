package acp

import "testing"

// TestNotices: a notice item goes out as ACP's notice update to a client
// that presents notices (clientCapabilities.session.notices), and not to
// one that does not.
func TestNotices(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps map[string]any
		want int
	}{
		{"presents notices", map[string]any{"session": map[string]any{"notices": map[string]any{}}}, 1},
		{"plain", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, be := startControls(t, Config{}, tc.caps)
			res, _ := c.request("session/new", newSessionParams(newPackage(t)))
			sid := res["sessionId"].(string)
			id := c.call("session/prompt", promptParams(sid, "slow"))
			<-be(0).began
			c.write(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
			_, seen := c.response(id)
			var notices []map[string]any
			for _, m := range seen {
				if u, _ := m["params"].(map[string]any)["update"].(map[string]any); m["method"] == "session/update" && u["sessionUpdate"] == "notice" {
					notices = append(notices, u)
				}
			}
			if len(notices) != tc.want {
				t.Fatalf("%d notices, want %d: %v", len(notices), tc.want, notices)
			}
			if tc.want > 0 && (notices[0]["title"] != "Interrupted." || notices[0]["severity"] != "info") {
				t.Errorf("notice %v", notices[0])
			}
		})
	}
}
