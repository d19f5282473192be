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
	pkg, texts := killWithCopy(t, exe)
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

// killWithCopy runs two turns of an opted-in client's package in serve
// (state folder $SPBRIDGE_STATE_DIR, set here) and kills it: the package
// holds none of them, the recovery copy both.
func killWithCopy(t *testing.T, exe string) (pkg string, texts []string) {
	t.Helper()
	root := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", filepath.Join(root, "state"))
	pkg = newPackage(t)
	p := startKillServe(t, append(os.Environ(), "SPBRIDGE_CLAUDE="+exe, fakeTurnsEnv+"=1"))
	p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{"spbridge": map[string]any{"items": true}}}})
	p.call("session/new", map[string]any{"cwd": root, "mcpServers": []any{}, "_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}})
	texts = []string{"one", "two"}
	for _, text := range texts {
		p.prompt(pkg, text)
	}
	p.kill()
	return pkg, texts
}

// TestRunNamesRecovery: spbridge run on a package with a newer recovery
// copy says so and goes on from the package; the copy is then older than
// the package, and conversation recover takes it only with --force.
func TestRunNamesRecovery(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pkg, texts := killWithCopy(t, exe)
	t.Setenv("SPBRIDGE_CLAUDE", exe)
	t.Setenv(fakeTurnsEnv, "1")
	code, _, errOut := runCmd(t, "run", pkg, "three")
	if code != 0 || !strings.Contains(errOut, "a recovery copy of this conversation") || !strings.Contains(errOut, "holds 4 items") {
		t.Fatalf("run: %d %q", code, errOut)
	}
	checkTurns(t, pkg, []string{"three"})
	code, out, _ := runCmd(t, "conversation", "recover", pkg)
	if code != 0 || !strings.Contains(out, "older than the package") {
		t.Fatalf("recover: %d %q", code, out)
	}
	if code, _, errOut := runCmd(t, "conversation", "recover", "--take", pkg); code != 1 || !strings.Contains(errOut, "--force") {
		t.Fatalf("recover --take of an older copy: %d %q", code, errOut)
	}
	checkTurns(t, pkg, []string{"three"})
	if code, out, errOut := runCmd(t, "conversation", "recover", "--take", "--force", pkg); code != 0 {
		t.Fatalf("recover --take --force: %d %q %q", code, out, errOut)
	}
	checkTurns(t, pkg, texts)
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
