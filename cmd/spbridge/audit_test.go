package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/audit"
	"spbridge/internal/canonjson"
	"spbridge/internal/pkglock"
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
	// Costs as a CLI reports them, float noise and all.
	costs := map[string]json.Number{"first": "0.1", "second": "0.0009599999999999999"}
	for _, text := range []string{"first", "second"} {
		rec := map[string]any{"time": "2026-11-30T00:00:00Z", "backend": "claude", "program": "/bin/claude", "programVersion": "2.1.328 (Claude Code)",
			"model": "m", "cwd": "/w", "status": "completed", "costUSD": costs[text], "user": text,
			"items": []any{map[string]any{"id": "U", "type": "user", "text": text}, map[string]any{"id": "A", "type": "assistant", "text": "re " + text}}}
		if err := audit.Append(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, _ := runCmd(t, "audit", "verify", "--id", id); code != 0 || strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, "ok: 2 records, keyed (HMAC-SHA-256)\n") || !strings.Contains(out, "the key's holder") {
		t.Errorf("verify = %d %q", code, out)
	}
	code, out, _ := runCmd(t, "audit", "show", "--id", id)
	if code != 0 || !strings.Contains(out, "Turn 1, 2026-11-30T00:00:00Z: completed, $0.10\n") || !strings.Contains(out, "Turn 2, 2026-11-30T00:00:00Z: completed, $0.00096\n") || !strings.Contains(out, "  User: second\n  Assistant: re second\n") {
		t.Errorf("show = %d\n%s", code, out)
	}
	// --json prints the records as written: the cost as the CLI gave it.
	if code, out, _ := runCmd(t, "audit", "show", "--json", "--id", id); code != 0 || strings.Count(out, "\n") != 2 || !strings.HasPrefix(out, `{"backend":"claude"`) || !strings.Contains(out, `"costUSD":0.0009599999999999999,`) {
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

// TestAuditVerifyStates: an unkeyed log from an earlier spbridge, a keyed
// one, one deleted with its head, and one never written each read as what
// they are.
func TestAuditVerifyStates(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)

	// An earlier spbridge's log: a plain SHA-256 chain and its head.
	legacy, _ := audit.Path(state, "LEGACY")
	os.MkdirAll(filepath.Dir(legacy), 0o700)
	var log []byte
	prev := strings.Repeat("0", 64)
	for i, text := range []string{"one", "two"} {
		rec := map[string]any{"user": text, "seq": i + 1, "prev": prev}
		line, _ := canonjson.EncodeCompact(rec)
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
		rec["sha256"] = prev
		line, _ = canonjson.EncodeCompact(rec)
		log = append(append(log, line...), '\n')
	}
	os.WriteFile(legacy, log, 0o600)
	os.WriteFile(strings.TrimSuffix(legacy, ".jsonl")+".head", []byte(`{"records":2,"sha256":"`+prev+`"}`), 0o600)
	if code, out, errOut := runCmd(t, "audit", "verify", "--id", "LEGACY"); code != 0 || !strings.HasPrefix(out, "ok: 2 records, unkeyed (a plain SHA-256 chain from an earlier spbridge") {
		t.Errorf("legacy: %d %q %q", code, out, errOut)
	}

	keyed, _ := audit.Path(state, "KEYED")
	for range 2 {
		if err := audit.Append(keyed, map[string]any{"user": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, _ := runCmd(t, "audit", "verify", "--id", "KEYED"); code != 0 || !strings.HasPrefix(out, "ok: 2 records, keyed") {
		t.Errorf("keyed: %d %q", code, out)
	}
	os.Remove(keyed)
	os.Remove(strings.TrimSuffix(keyed, ".jsonl") + ".head")
	if code, _, errOut := runCmd(t, "audit", "verify", "--id", "KEYED"); code != 1 || !strings.Contains(errOut, "log missing: the index counts 2 records") {
		t.Errorf("deleted with its head: %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "audit", "verify", "--id", "NEVER"); code != 1 || !strings.Contains(errOut, "no audit log") || !strings.Contains(errOut, "--no-audit") {
		t.Errorf("never written: %d %q", code, errOut)
	}
}

// TestStatePrune: old audit logs and old editor sessions go (a dry run
// only says so); recent ones and a session in use stay; a pruned log
// verifies as pruned.
func TestStatePrune(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, id := range []string{"OLD", "NEW"} {
		path, _ := audit.Path(state, id)
		if err := audit.Append(path, map[string]any{"user": id}); err != nil {
			t.Fatal(err)
		}
		if id == "OLD" {
			os.Chtimes(path, old, old)
		}
	}
	sessions := filepath.Join(state, "sessions")
	for _, name := range []string{"S-OLD", "S-NEW", "S-BUSY"} {
		dir := filepath.Join(sessions, name)
		os.MkdirAll(filepath.Join(dir, "agent"), 0o700)
		os.WriteFile(filepath.Join(dir, "agent", "conversation.json"), []byte("{}"), 0o600)
		if name != "S-NEW" {
			for _, p := range []string{filepath.Join(dir, "agent", "conversation.json"), filepath.Join(dir, "agent"), dir} {
				os.Chtimes(p, old, old)
			}
		}
	}
	busy, err := pkglock.Acquire(filepath.Join(sessions, "S-BUSY"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Unlock()

	code, out, errOut := runCmd(t, "state", "prune", "--older-than", "30d", "--dry-run")
	want := "would remove audit/OLD.jsonl\nwould remove sessions/S-OLD\n"
	if code != 0 || out != want || !strings.Contains(errOut, "kept sessions/S-BUSY") {
		t.Errorf("dry run: %d %q %q, want %q", code, out, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(sessions, "S-OLD")); err != nil {
		t.Errorf("the dry run removed a session: %v", err)
	}
	code, out, _ = runCmd(t, "state", "prune", "--older-than", "720h")
	if want := "removed audit/OLD.jsonl\nremoved sessions/S-OLD\n"; code != 0 || out != want {
		t.Errorf("prune: %d %q, want %q", code, out, want)
	}
	for _, name := range []string{"S-NEW", "S-BUSY"} {
		if _, err := os.Stat(filepath.Join(sessions, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	if code, out, _ := runCmd(t, "audit", "verify", "--id", "OLD"); code != 0 || !strings.HasPrefix(out, "pruned: ") {
		t.Errorf("verify of a pruned log: %d %q", code, out)
	}
	if code, out, _ := runCmd(t, "audit", "verify", "--id", "NEW"); code != 0 || !strings.HasPrefix(out, "ok: 1 records") {
		t.Errorf("verify of the kept log: %d %q", code, out)
	}
	if code, out, _ := runCmd(t, "state", "prune", "--older-than", "30d"); code != 0 || out != "nothing to remove\n" {
		t.Errorf("again: %d %q", code, out)
	}
	for _, bad := range []string{"", "0d", "-1h", "30x", "1.5d"} {
		args := []string{"state", "prune", "--older-than", bad}
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("--older-than %q: exit %d, want 2", bad, code)
		}
	}
}

func TestTranscriptCommand(t *testing.T) {
	code, out, _ := runCmd(t, "transcript", "../../testdata/packages/Poster.silverpoint")
	want := "User: Make a card [image]\n\nTool batch_design: Card (1 created)\n\nAssistant: Made a card.\n"
	if code != 0 || out != want {
		t.Errorf("transcript = %d %q", code, out)
	}
}
