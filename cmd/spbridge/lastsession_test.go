package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
)

// TestShowLastCLISession: conversation show ends with the CLI session the
// conversation's last turn ran on (from its audit log) and, while the CLI
// still keeps that session, the command that continues it in a terminal.
func TestShowLastCLISession(t *testing.T) {
	state, config := t.TempDir(), t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	pkg := filepath.Join(t.TempDir(), "Doc")
	os.Mkdir(pkg, 0o755)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	user := archive.NewItem(archive.TypeUser)
	user.Set("text", "hello")
	p.Conv.Items = []archive.Item{user}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	const sid = "5cb15913-241e-471f-becf-e54204cba130"
	cwd := t.TempDir()
	path, err := audit.Path(state, user.ID())
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Append(path, map[string]any{"backend": "claude", "sessionID": sid, "cwd": cwd, "user": "hello", "items": []any{}}); err != nil {
		t.Fatal(err)
	}
	show := func() string {
		var out, errw bytes.Buffer
		if code := run(context.Background(), []string{"conversation", "show", pkg}, nil, &out, &errw); code != exitOK {
			t.Fatalf("exit %d: %s", code, errw.String())
		}
		return out.String()
	}
	if got := show(); !strings.HasSuffix(got, "Last ran on claude session "+sid+" (no longer kept by claude on this machine).\n") {
		t.Errorf("without claude's file:\n%s", got)
	}
	dir := filepath.Join(config, "projects", regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cwd, "-"))
	os.MkdirAll(dir, 0o755)
	line := `{"type":"user","sessionId":"` + sid + `","cwd":"` + cwd + `","message":{"role":"user","content":"hello"}}` + "\n"
	os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(line), 0o644)
	if got := show(); !strings.HasSuffix(got, "continue it in a terminal: cd "+cwd+" && claude --resume "+sid+"\n") {
		t.Errorf("with claude's file:\n%s", got)
	}
}
