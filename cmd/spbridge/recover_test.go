package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/pkglock"
	"spbridge/internal/session"
)

// TestConversationRecover: after a kill -9 of serve with an opted-in
// client's unsaved turns, conversation recover shows the copy as newer
// than the package, --take puts it into the package and removes it.
func TestConversationRecover(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	state := filepath.Join(root, "state")
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	pkg := newPackage(t)
	p := startKillServe(t, append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, fakeTurnsEnv+"=1"))
	p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}})
	p.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}, "_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}})
	texts := []string{"one", "two"}
	for _, text := range texts {
		p.prompt(pkg, text)
	}
	p.kill()

	code, out, errOut := runCmd(t, "conversation", "recover", pkg)
	if code != 0 || !strings.Contains(out, "4 items") || !strings.Contains(out, "the package holds 0") || !strings.Contains(out, "newer than the package") {
		t.Fatalf("recover: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "conversation", "recover", "--take", pkg)
	if code != 0 || !strings.Contains(out, "agent/conversation.json") {
		t.Fatalf("recover --take: %d %q %q", code, out, errOut)
	}
	checkTurns(t, pkg, texts)
	if code, out, _ := runCmd(t, "conversation", "recover", pkg); code != 0 || out != "no recovery copy\n" {
		t.Fatalf("after --take: %d %q", code, out)
	}
}

// TestStatePruneRecovery: state prune removes the recovery copies written
// before the cutoff, except one whose package a running spbridge holds.
func TestStatePruneRecovery(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	old := time.Now().Add(-40 * 24 * time.Hour)
	recovery := filepath.Join(state, "recovery")
	busyPkg, gonePkg, newPkg := newPackage(t), filepath.Join(t.TempDir(), "Gone.silverpoint"), newPackage(t)
	names := map[string]string{}
	for _, pkg := range []string{busyPkg, gonePkg, newPkg} {
		dir := session.RecoveryPath(recovery, pkg)
		names[pkg], _ = filepath.Rel(state, dir)
		os.MkdirAll(filepath.Join(dir, "agent"), 0o700)
		os.WriteFile(filepath.Join(dir, "agent", "conversation.json"), []byte("{}"), 0o600)
		data, _ := json.Marshal(session.Recovery{Package: pkg, Items: 2, Time: time.Now()})
		os.WriteFile(filepath.Join(dir, session.RecoveryFile), data, 0o600)
		if pkg != newPkg {
			for _, p := range []string{filepath.Join(dir, "agent", "conversation.json"), filepath.Join(dir, "agent"), filepath.Join(dir, session.RecoveryFile), dir} {
				os.Chtimes(p, old, old)
			}
		}
	}
	busy, err := pkglock.Acquire(busyPkg)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Unlock()
	code, out, errOut := runCmd(t, "state", "prune", "--older-than", "30d")
	if want := "removed " + names[gonePkg] + "\n"; code != 0 || out != want || !strings.Contains(errOut, "kept "+names[busyPkg]) {
		t.Fatalf("prune: %d %q %q, want %q", code, out, errOut, want)
	}
	for _, pkg := range []string{busyPkg, newPkg} {
		if r, err := session.ReadRecovery(recovery, pkg); r == nil || err != nil {
			t.Errorf("the copy of %s went: %v", pkg, err)
		}
	}
}
