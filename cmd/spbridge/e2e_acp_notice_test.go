package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EServeNotice drives the real claude through spbridge serve with
// the official ACP client, which presents notices
// (clientCapabilities.session.notices): a turn cancelled while claude
// streams ends cancelled and its "Interrupted." notice reaches the client
// as an ACP notice, valid by the SDK's schema.
func TestE2EServeNotice(t *testing.T) {
	t.Parallel()
	// The reply stops after its first chunk until claude hangs up: the
	// cancel always finds it streaming, however busy the machine.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newE2E(t, fakeapi.Reply{Blocks: []fakeapi.Block{{Text: strings.Repeat("slowly ", 200)}}, Hold: hold})
	work := filepath.Dir(e.pkg)
	envMap := acpEnv(e.env)
	meta := map[string]any{"spbridge": map[string]any{"package": e.pkg, "backend": "claude"}}
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": envMap, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize", "clientCapabilities": map[string]any{"session": map[string]any{"notices": map[string]any{}}}},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "count slowly", "async": true, "name": "slow"},
			map[string]any{"op": "waitFor", "method": "session/update", "sessionUpdate": "agent_message_chunk"},
			map[string]any{"op": "cancel", "session": "s1"},
			map[string]any{"op": "await", "name": "slow"},
			map[string]any{"op": "closeStdin"},
		},
	})
	var notices []string
	for _, ev := range events {
		if ev.Event != "notification" || ev.Method != "session/update" {
			continue
		}
		var p struct {
			Update struct{ SessionUpdate, Severity, Title string }
		}
		json.Unmarshal(ev.Params, &p)
		if p.Update.SessionUpdate == "notice" {
			notices = append(notices, p.Update.Severity+": "+p.Update.Title)
		}
	}
	if strings.Join(notices, "|") != "info: Interrupted." {
		t.Errorf("notices %q, want the interrupt's", notices)
	}
}
