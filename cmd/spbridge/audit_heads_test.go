package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"spbridge/internal/audit"
)

// poster is a package whose conversation's identity is posterID.
const (
	poster   = "../../testdata/packages/Poster.silverpoint"
	posterID = "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30"
)

// savedFiles are copies of some of the state folder's files with their
// modification times, put back as a backup restore (or cp -p) does.
type savedFiles map[string][2]any

func saveFiles(t *testing.T, paths ...string) savedFiles {
	t.Helper()
	s := savedFiles{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		s[p] = [2]any{data, fi.ModTime()}
	}
	return s
}

func (s savedFiles) restore(t *testing.T) {
	t.Helper()
	for p, f := range s {
		if err := os.WriteFile(p, f[0].([]byte), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, f[1].(time.Time), f[1].(time.Time))
	}
}

// turns counts the records appendTurns made, so that each is another.
var turns int

func appendTurns(t *testing.T, path string, n int) {
	t.Helper()
	for range n {
		turns++
		if err := audit.Append(path, map[string]any{"user": fmt.Sprint("turn ", turns), "status": "completed"}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditHeadCatchesRollback: putting back earlier copies of the index
// and of one log and its head (no key needed) passes audit verify; audit
// verify --heads with heads kept by audit head (either form) catches it,
// for one log (PKG or --id) and for all.
func TestAuditHeadCatchesRollback(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	path, _ := audit.Path(state, posterID)
	other, _ := audit.Path(state, "OTHER")
	appendTurns(t, path, 2)
	appendTurns(t, other, 1)
	saved := saveFiles(t, filepath.Join(state, audit.IndexFile), path, strings.TrimSuffix(path, ".jsonl")+".head")
	appendTurns(t, path, 3)
	appendTurns(t, other, 1)

	code, text, errOut := runCmd(t, "audit", "head")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if code != 0 || errOut != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], posterID+" 5 ") || !strings.HasPrefix(lines[1], "OTHER 2 ") || len(lines[0]) != len(posterID)+3+64 {
		t.Fatalf("audit head = %d %q %q", code, text, errOut)
	}
	code, js, _ := runCmd(t, "audit", "head", "--json")
	tag := strings.Fields(lines[0])[2]
	if code != 0 || !strings.HasPrefix(js, `{"id":"`+posterID+`","last":"`+tag+`","records":5}`+"\n{\"id\":\"OTHER\",") || strings.Count(js, "\n") != 2 {
		t.Fatalf("audit head --json = %d %q", code, js)
	}
	keep := t.TempDir()
	textFile, jsonFile := filepath.Join(keep, "heads.txt"), filepath.Join(keep, "heads.jsonl")
	os.WriteFile(textFile, []byte(text), 0o600)
	os.WriteFile(jsonFile, []byte(js), 0o600)

	code, out, errOut := runCmd(t, "audit", "verify", "--heads", textFile)
	want := posterID + ": ok: 5 records, keyed (HMAC-SHA-256); holds its kept head (record 5)\n" +
		"OTHER: ok: 2 records, keyed (HMAC-SHA-256); holds its kept head (record 2)\n" +
		"ok: 2 audit logs\n" + keptAnchors + "\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("verify --heads (all) before the rollback = %d\n%s%s", code, out, errOut)
	}
	onlyOther := filepath.Join(keep, "other")
	os.WriteFile(onlyOther, []byte("# OTHER alone\n"+lines[1]+"\n"), 0o600)
	code, out, _ = runCmd(t, "audit", "verify", "--heads", onlyOther)
	if code != 0 || !strings.HasPrefix(out, posterID+": ok: 5 records, keyed (HMAC-SHA-256); no head kept\n") || !strings.HasSuffix(out, "\nok: 2 audit logs\n"+keptAnchors+"\nfor the 1 logs with no head kept, "+keyedLimit+"\n") {
		t.Errorf("verify --heads with one log's head = %d\n%s", code, out)
	}

	saved.restore(t)

	// The limit, said plainly on one line: without the kept heads the
	// rollback passes.
	code, out, _ = runCmd(t, "audit", "verify", "--id", posterID)
	if code != 0 || out != "ok: 2 records, keyed (HMAC-SHA-256)\n"+keyedLimit+"\n" || !strings.HasPrefix(keyedLimit, "limits: a rollback of the state folder goes unseen without a head kept elsewhere (spbridge audit head)") {
		t.Errorf("verify without heads = %d %q", code, out)
	}
	for _, args := range [][]string{{"--id", posterID}, {poster}} {
		for _, heads := range []string{textFile, jsonFile} {
			code, out, errOut := runCmd(t, append([]string{"audit", "verify", "--heads", heads}, args...)...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, "spbridge: audit log "+path+": 3 records missing since the kept head: the log ends at record 2, a head kept earlier counts 5") {
				t.Errorf("verify --heads %s %q = %d %q %q", filepath.Base(heads), args, code, out, errOut)
			}
		}
	}
	code, out, errOut = runCmd(t, "audit", "verify", "--heads", jsonFile)
	want = posterID + ": 3 records missing since the kept head: the log ends at record 2, a head kept earlier counts 5 (rolled back to an earlier copy, or records removed)\n" +
		"OTHER: ok: 2 records, keyed (HMAC-SHA-256); holds its kept head (record 2); the index counts 1 record fewer (a crash, or an earlier copy of the index)\n"
	if code != 1 || out != want || errOut != "spbridge: 1 of 2 audit logs do not verify against "+jsonFile+"\n" {
		t.Errorf("verify --heads (all) = %d\n%s%s", code, out, errOut)
	}
	// The other log alone holds its head.
	if code, out, _ := runCmd(t, "audit", "verify", "--heads", textFile, "--id", "OTHER"); code != 0 || out != "ok: 2 records, keyed (HMAC-SHA-256)\nthe log holds the head kept in "+textFile+": its first 2 records are as they were when it was kept\n"+
		"the index (or the head kept beside the log) counts 1 record fewer than the log: a crash between the writes leaves it so, and so does an earlier copy of the index put back\n"+
		keptAnchors+"\n" {
		t.Errorf("verify --heads --id OTHER = %d %q", code, out)
	}

	// Written anew to as many records: the record at the kept head differs.
	appendTurns(t, path, 3)
	if code, _, _ := runCmd(t, "audit", "verify", poster); code != 0 {
		t.Errorf("verify of the log written anew: %d", code)
	}
	code, _, errOut = runCmd(t, "audit", "verify", "--heads", textFile, poster)
	if code != 1 || !strings.Contains(errOut, ": the record at the kept head differs: record 5 is not the one a head kept earlier names") {
		t.Errorf("written anew: %d %q", code, errOut)
	}

	// Gone, with the index put back to before it: missing.
	saved = saveFiles(t, filepath.Join(state, audit.IndexFile))
	newer, _ := audit.Path(state, "NEWER")
	appendTurns(t, newer, 1)
	_, newHeads, _ := runCmd(t, "audit", "head")
	os.WriteFile(textFile, []byte(newHeads), 0o600)
	saved.restore(t)
	os.Remove(newer)
	os.Remove(strings.TrimSuffix(newer, ".jsonl") + ".head")
	if code, _, errOut := runCmd(t, "audit", "verify", "--id", "NEWER"); code != 1 || !strings.Contains(errOut, "no audit log") {
		t.Errorf("gone, without heads: %d %q", code, errOut)
	}
	code, out, _ = runCmd(t, "audit", "verify", "--heads", textFile)
	if code != 1 || !strings.Contains(out, "\nNEWER: log missing: a head kept earlier counts 1 records, but the log is gone") {
		t.Errorf("gone, all logs: %d %q", code, out)
	}
}

// TestAuditHeadUsage: what audit head and verify --heads refuse, and the
// empty cases.
func TestAuditHeadUsage(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	if code, out, errOut := runCmd(t, "audit", "head"); code != 0 || out != "" || errOut != "" {
		t.Errorf("no logs: %d %q %q", code, out, errOut)
	}
	empty := filepath.Join(t.TempDir(), "heads")
	os.WriteFile(empty, nil, 0o600)
	if code, out, _ := runCmd(t, "audit", "verify", "--heads", empty); code != 0 || out != "ok: no audit logs in "+state+"\n" {
		t.Errorf("no logs, no heads: %d %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("A1 1 "+strings.Repeat("0", 64)+"\nA1 two\n"), 0o600)
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"audit", "head", "PKG"}, 2, "takes no arguments"},
		{[]string{"audit", "verify", "--heads"}, 2, "flag needs an argument"},
		{[]string{"audit", "verify", "--heads="}, 2, "--heads needs a file"},
		{[]string{"audit", "verify"}, 2, "needs a package folder"},
		{[]string{"audit", "verify", "--heads", empty, "--id", "A1", poster}, 2, "not both"},
		{[]string{"audit", "verify", "--heads", filepath.Join(state, "none")}, 1, "heads file: open "},
		{[]string{"audit", "verify", "--heads", bad}, 1, "heads file " + bad + ": line 2: "},
	} {
		code, _, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.err) {
			t.Errorf("%q = %d %q, want %d and %q", c.args, code, errOut, c.code, c.err)
		}
	}
	if code, out, _ := runCmd(t, "audit", "head", "--help"); code != 0 || !strings.Contains(out, "\nUsage: spbridge audit head [--json]\n") || !strings.Contains(out, "--heads FILE") {
		t.Errorf("audit head --help = %d %q", code, out)
	}
	if code, out, _ := runCmd(t, "audit", "verify", "--help"); code != 0 || !strings.Contains(out, "--heads FILE ") || !strings.Contains(out, "cannot be told from that earlier state") {
		t.Errorf("audit verify --help = %d %q", code, out)
	}
}
