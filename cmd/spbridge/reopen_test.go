package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/codex"
)

// lastRanOnCodex makes a package whose conversation last ran on codex,
// with claude a fake that answers every turn and codex a program that
// cannot be run: a turn on codex fails before it starts, naming
// SPBRIDGE_CODEX.
func lastRanOnCodex(t *testing.T) (pkg string, env []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pkg = newPackage(t)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	u := archive.NewItem(archive.TypeUser)
	u.Set("text", "earlier words")
	p.Conv.Items = append(p.Conv.Items, u)
	p.Conv.Provider = codex.Provider
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	return pkg, []string{"SPBRIDGE_STATE_DIR=" + state, "SPBRIDGE_CLAUDE=" + exe, fakeTurnsEnv + "=1",
		"SPBRIDGE_CODEX=" + filepath.Join(state, "no-codex")}
}

// TestRunReopenRule: spbridge run without --backend goes on with the CLI
// the conversation last ran on (codex here), as serve does; --backend
// names another.
func TestRunReopenRule(t *testing.T) {
	pkg, env := lastRanOnCodex(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	if code, _, errOut := runCmd(t, "run", "--no-audit", pkg, "more"); code != 1 || !strings.Contains(errOut, "SPBRIDGE_CODEX") {
		t.Errorf("run without --backend: %d %q, want codex's turn (SPBRIDGE_CODEX cannot be run)", code, errOut)
	}
	if code, _, errOut := runCmd(t, "run", "--no-audit", "--backend", "claude", pkg, "more"); code != 0 {
		t.Errorf("run --backend claude: %d %q", code, errOut)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Conv.Items); n != 3 || p.Conv.Provider != "claude-code" || p.Conv.Items[2].String("text") != "reply to more" {
		t.Errorf("after the turn on claude: %d items, provider %q", n, p.Conv.Provider)
	}
}

// TestServeReopenRule: serve (its default claude) resumes a package
// whose request names no backend on the CLI its conversation last ran on
// (codex here), as run does.
func TestServeReopenRule(t *testing.T) {
	pkg, env := lastRanOnCodex(t)
	p := startKillServe(t, append(os.Environ(), env...))
	p.call("initialize", map[string]any{"protocolVersion": 1})
	p.call("session/resume", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{}})
	p.id++
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": "session/prompt",
		"params": map[string]any{"sessionId": pkg, "prompt": []any{map[string]any{"type": "text", "text": "more"}}}})
	p.in.Write(append(data, '\n'))
	for p.out.Scan() {
		var m struct {
			ID    *int
			Error *struct {
				Code    int
				Message string
			}
		}
		if json.Unmarshal(p.out.Bytes(), &m) != nil || m.ID == nil || *m.ID != p.id {
			continue
		}
		if m.Error == nil || !strings.Contains(m.Error.Message, "SPBRIDGE_CODEX") {
			t.Errorf("the prompt: %s, want codex's turn (SPBRIDGE_CODEX cannot be run)", p.out.Text())
		}
		return
	}
	t.Fatalf("serve ended: %s", p.stderr.String())
}
