package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ELogout: ACP's logout, advertised in initialize, and `spbridge auth
// logout` run the real CLIs' own log-outs: codex's stored key is gone
// afterwards, and claude, with nothing stored, stays logged out without an
// error. Nothing leaves the machine: codex's key is a file, and claude has
// no log-in to revoke.
func TestE2ELogout(t *testing.T) {
	t.Parallel()
	e, _ := newCodexE2E(t)
	env := acpEnv(e.env)
	claudeEnv := newE2E(t).env
	for _, kv := range claudeEnv {
		if k, v, _ := strings.Cut(kv, "="); k == "SPBRIDGE_CLAUDE" || k == "CLAUDE_CONFIG_DIR" || k == "ANTHROPIC_BASE_URL" {
			env[k] = v
		}
	}
	env["ANTHROPIC_API_KEY"] = nil
	codexHome := env["CODEX_HOME"].(string)
	auth := filepath.Join(codexHome, "auth.json")
	store := func() {
		if err := os.WriteFile(auth, []byte(`{"OPENAI_API_KEY":"sk-stored-by-codex-login"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	store()
	work := filepath.Dir(e.pkg)
	events := runACPClient(t, map[string]any{
		"command": []string{spbridgeBin(t), "serve"}, "env": env, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "ext", "method": "logout", "params": map[string]any{}},
			map[string]any{"op": "closeStdin"},
		},
	})
	caps := response(t, events, 0)["agentCapabilities"].(map[string]any)
	if a, _ := caps["auth"].(map[string]any); a == nil || a["logout"] == nil {
		t.Errorf("initialize: no auth.logout in %v", caps)
	}
	response(t, events, 1)
	if _, err := os.Stat(auth); !os.IsNotExist(err) {
		t.Errorf("codex's auth.json after logout: %v", err)
	}

	store()
	cmd := exec.Command(spbridgeBin(t), "auth", "logout")
	for k, v := range env {
		if s, ok := v.(string); ok {
			cmd.Env = append(cmd.Env, k+"="+s)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "claude: logged out") || !strings.Contains(string(out), "codex: logged out") {
		t.Errorf("spbridge auth logout: %v\n%s", err, out)
	}
	if _, err := os.Stat(auth); !os.IsNotExist(err) {
		t.Errorf("codex's auth.json after spbridge auth logout: %v", err)
	}
}
