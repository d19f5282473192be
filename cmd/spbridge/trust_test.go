package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/trust"
)

// TestTrustCommands: trust add keeps the answer, trust list shows it and
// the folders a CLI's own record trusts (read, never written), trust
// revoke forgets it and says when a CLI still trusts the folder.
func TestTrustCommands(t *testing.T) {
	state, home := t.TempDir(), t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	if code, out, _ := runCmd(t, "trust", "list"); code != 0 || out != "no folder is trusted\n" {
		t.Errorf("list of nothing: %d %q", code, out)
	}
	work, repo := t.TempDir(), t.TempDir()
	work, _ = trust.Key(work)
	repo, _ = trust.Key(repo)
	claudeJSON := filepath.Join(home, ".claude.json")
	data, _ := json.Marshal(map[string]any{"projects": map[string]any{repo: map[string]any{"hasTrustDialogAccepted": true}}})
	os.WriteFile(claudeJSON, data, 0o600)
	if code, out, errOut := runCmd(t, "trust", "add", work); code != 0 || out != "trusted "+work+"\n" {
		t.Errorf("add: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "trust", "add", "--never", repo); code != 0 || out != "never trusting "+repo+"\n" {
		t.Errorf("add --never: %d %q %q", code, out, errOut)
	}
	code, out, _ := runCmd(t, "trust", "list")
	if code != 0 || !strings.Contains(out, "trusted  "+work+"  (spbridge)\n") || !strings.Contains(out, "never    "+repo+"  (spbridge)\n") || strings.Count(out, "\n") != 2 {
		t.Errorf("list: %q", out)
	}
	if code, out, _ := runCmd(t, "trust", "revoke", repo); code != 0 || !strings.Contains(out, "forgot the answer for "+repo) ||
		!strings.Contains(out, "still trusted by Claude Code's own record, "+claudeJSON) {
		t.Errorf("revoke of a folder Claude Code trusts: %d %q", code, out)
	}
	code, out, _ = runCmd(t, "trust", "list")
	if code != 0 || !strings.Contains(out, "trusted  "+repo+"  (Claude Code's own record, "+claudeJSON+")\n") {
		t.Errorf("list after revoke: %d %q", code, out)
	}
	if got, _ := os.ReadFile(claudeJSON); string(got) != string(data) {
		t.Errorf("Claude Code's file was written: %q", got)
	}
	if code, out, _ := runCmd(t, "trust", "revoke", work); code != 0 || out != "forgot the answer for "+work+"\n" {
		t.Errorf("revoke: %d %q", code, out)
	}
	if code, out, _ := runCmd(t, "trust", "revoke", work); code != 0 || out != "spbridge had no answer for "+work+"\n" {
		t.Errorf("revoke twice: %d %q", code, out)
	}
	if code, _, errOut := runCmd(t, "trust", "add", filepath.Join(work, "missing")); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("add of a missing folder: %d %q", code, errOut)
	}
	if code, _, _ := runCmd(t, "trust", "add"); code != 2 {
		t.Errorf("add without a folder: exit %d", code)
	}
}

// stateOf is the state folder env names.
func stateOf(env []string) string {
	state := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SPBRIDGE_STATE_DIR="); ok {
			state = v
		}
	}
	return state
}
