package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"spbridge/internal/audit"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errw bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errw)
	return code, out.String(), errw.String()
}

func TestAuditCommands(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	const id = "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30"
	path, _ := audit.Path(state, id)
	for _, text := range []string{"first", "second"} {
		rec := map[string]any{"time": "2026-11-30T00:00:00Z", "backend": "claude", "program": "/bin/claude", "programVersion": "2.1.328 (Claude Code)",
			"model": "m", "cwd": "/w", "status": "completed", "costUSD": "0.1", "user": text,
			"items": []any{map[string]any{"id": "U", "type": "user", "text": text}, map[string]any{"id": "A", "type": "assistant", "text": "re " + text}}}
		if err := audit.Append(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, _ := runCmd(t, "audit", "verify", "--id", id); code != 0 || out != "ok: 2 records\n" {
		t.Errorf("verify = %d %q", code, out)
	}
	code, out, _ := runCmd(t, "audit", "show", "--id", id)
	if code != 0 || !strings.Contains(out, "Turn 2, 2026-11-30T00:00:00Z: completed, $0.1") || !strings.Contains(out, "  User: second\n  Assistant: re second\n") {
		t.Errorf("show = %d\n%s", code, out)
	}
	if code, out, _ := runCmd(t, "audit", "show", "--json", "--id", id); code != 0 || strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, `{"backend":"claude"`) {
		t.Errorf("show --json = %d\n%s", code, out)
	}
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"user":"second"`), []byte(`"user":"changed"`), 1), 0o600)
	code, _, errOut := runCmd(t, "audit", "verify", "--id", id)
	if code != 1 || !strings.Contains(errOut, "record 2: its content does not match") {
		t.Errorf("verify of an edited log = %d %q", code, errOut)
	}
	if code, _, _ := runCmd(t, "audit", "verify", "--id", "../etc"); code != 1 {
		t.Errorf("a bad id: exit %d", code)
	}
	if code, _, _ := runCmd(t, "audit", "verify"); code != 2 {
		t.Errorf("no package: exit %d", code)
	}
}

func TestTranscriptCommand(t *testing.T) {
	code, out, _ := runCmd(t, "transcript", "../../testdata/packages/Poster.silverpoint")
	want := "User: Make a card [image]\n\nTool batch_design: Card (1 created)\n\nAssistant: Made a card.\n"
	if code != 0 || out != want {
		t.Errorf("transcript = %d %q", code, out)
	}
}
