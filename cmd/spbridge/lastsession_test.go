package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	show := func(args ...string) string {
		var out, errw bytes.Buffer
		if code := run(context.Background(), append([]string{"conversation", "show", pkg}, args...), nil, &out, &errw); code != exitOK {
			t.Fatalf("exit %d: %s", code, errw.String())
		}
		return out.String()
	}
	// --json: the way back first, then the conversation's own fields.
	showJSON := func() (map[string]any, *archive.Conversation) {
		t.Helper()
		out := show("--json")
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		w, _ := v["lastCLISession"].(map[string]any)
		delete(v, "lastCLISession")
		rest, _ := json.Marshal(v)
		conv, err := archive.Decode(rest)
		if err != nil {
			t.Fatalf("the conversation of --json: %v", err)
		}
		return w, conv
	}
	if got := show(); !strings.HasSuffix(got, "Last ran on claude session "+sid+" (no longer kept by claude on this machine).\n") {
		t.Errorf("without claude's file:\n%s", got)
	}
	if w, conv := showJSON(); w["backend"] != "claude" || w["id"] != sid || w["cwd"] != cwd || w["held"] != false || w["continueCommand"] != nil || len(conv.Items) != 1 {
		t.Errorf("--json without claude's file: %v", w)
	}
	dir := filepath.Join(config, "projects", regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cwd, "-"))
	os.MkdirAll(dir, 0o755)
	line := `{"type":"user","sessionId":"` + sid + `","cwd":"` + cwd + `","message":{"role":"user","content":"hello"}}` + "\n"
	os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(line), 0o644)
	if got := show(); !strings.HasSuffix(got, "continue it in a terminal: cd "+cwd+" && claude --resume "+sid+"\n") {
		t.Errorf("with claude's file:\n%s", got)
	}
	if w, _ := showJSON(); w["held"] != true || w["continueCommand"] != "claude --resume "+sid {
		t.Errorf("--json with claude's file: %v", w)
	}
	// --last shows the last turn only, with no way back.
	if got := show("--last"); strings.Contains(got, "Last ran on") {
		t.Errorf("--last:\n%s", got)
	}
}
