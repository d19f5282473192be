package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/checkpoint"
)

// exportRun runs spbridge with args and returns its standard output; it
// fails the test on another exit than 0.
func exportRun(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), args, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("%q: exit %d, %s", args, code, errOut.String())
	}
	return out.String()
}

// TestExportAppliesJournal: the export reads the conversation as
// conversation show does, its journal applied: a turn only the journal
// holds is on the page.
func TestExportAppliesJournal(t *testing.T) {
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	if err := os.MkdirAll(pkg, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	add := func(typ, text string) {
		it := archive.NewItem(typ)
		it.Set("text", text)
		p.Conv.Items = append(p.Conv.Items, it)
	}
	add(archive.TypeUser, "First")
	add(archive.TypeAssistant, "Saved whole.")
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	add(archive.TypeUser, "Second")
	add(archive.TypeAssistant, "Only in the *journal*.")
	if _, err := p.Append(p.Snapshot(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pkg, archive.AgentDir, archive.JournalFile)); err != nil {
		t.Fatalf("no journal: %v", err)
	}
	md := exportRun(t, "export", "--format", "md", pkg)
	if !strings.Contains(md, "## Turn 2\n\n**You**\n\nSecond\n\n**Assistant**\n\nOnly in the *journal*.\n") {
		t.Errorf("the Markdown export lacks the journal's turn:\n%s", md)
	}
	page := exportRun(t, "export", pkg)
	if !strings.Contains(page, "<p>Only in the <em>journal</em>.</p>") {
		t.Errorf("the page lacks the journal's turn")
	}
}

// TestExportTurnUsage: each turn's usage and cost come from the
// conversation's audit log, by the id of the turn's last item.
func TestExportTurnUsage(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	os.MkdirAll(pkg, 0o700)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, typ := range []string{archive.TypeUser, archive.TypeAssistant, archive.TypeUser, archive.TypeAssistant} {
		it := archive.NewItem(typ)
		it.Set("text", typ)
		p.Conv.Items = append(p.Conv.Items, it)
		ids = append(ids, it.ID())
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	path, err := audit.Path(state, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]any{"user": "user", "status": "completed",
		"items":   []any{map[string]any{"id": ids[1], "type": "assistant", "text": "assistant"}},
		"usage":   map[string]any{"input": 1200, "output": 34, "cacheRead": 5000},
		"costUSD": "0.0456"}
	if err := audit.Append(path, rec); err != nil {
		t.Fatal(err)
	}
	page := exportRun(t, "export", pkg)
	if !strings.Contains(page, `<p class="usage">1,200 in · 34 out · 5,000 cache read · $0.0456</p>`) {
		t.Errorf("the page lacks the first turn's usage")
	}
	if n := strings.Count(page, `<p class="usage">`); n != 1 {
		t.Errorf("%d turns show a usage, want 1 (the second has no record)", n)
	}
	if !strings.Contains(page, "<dt>Per-turn usage</dt><dd>from the audit log</dd>") {
		t.Errorf("the page does not say where the usage comes from")
	}
}

// TestExportTurnChanges: what a turn changed in the files is shown from
// the package's checkpoints, keyed by the notice that ends the turn.
func TestExportTurnChanges(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	work := t.TempDir()
	pkg := filepath.Join(work, "Doc.silverpoint")
	os.MkdirAll(pkg, 0o700)
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\ntwo\n"), 0o600)
	os.WriteFile(filepath.Join(work, "old.txt"), []byte("gone\n"), 0o600)
	tr, err := checkpoint.NewTracker([]string{work}, filepath.Join(state, "cache"), checkpoint.Options{Exclude: []string{pkg}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Begin(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\nTWO\nthree\n"), 0o600)
	os.WriteFile(filepath.Join(work, "new.txt"), []byte("x\n"), 0o600)
	os.Remove(filepath.Join(work, "old.txt"))
	cs, err := tr.End()
	if err != nil {
		t.Fatal(err)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var items []archive.Item
	for _, typ := range []string{archive.TypeUser, archive.TypeAssistant, archive.TypeNotice, archive.TypeUser, archive.TypeAssistant} {
		it := archive.NewItem(typ)
		it.Set("text", typ)
		items = append(items, it)
	}
	p.Conv.Items = items
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.Open(pkg, checkpoint.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Record(items[2].ID(), items[0].ID(), cs); err != nil {
		t.Fatal(err)
	}
	md := exportRun(t, "export", "--format", "md", pkg)
	want := "**Notice**\n\nnotice\n\n### Files changed\n\n- `a.txt` modified +2 −1\n- `new.txt` created +1\n- `old.txt` deleted\n\n## Turn 2"
	if !strings.Contains(md, want) {
		t.Errorf("the Markdown export lacks the first turn's changes %q:\n%s", want, md)
	}
	if n := strings.Count(md, "Files changed"); n != 1 {
		t.Errorf("%d turns show changes, want 1", n)
	}
	page := exportRun(t, "export", pkg)
	if !strings.Contains(page, `<li><code>a.txt</code> <span class="sub">modified +2 −1</span></li>`) {
		t.Errorf("the page lacks the first turn's changes")
	}
}

// TestAuditExport exports an audit log: its verification at the top, each
// record a turn (the user's message, the items, the changes, the usage,
// the CLI's facts), the totals; a log edited since is exported all the
// same, saying first that it does not verify, and the command exits 1.
func TestAuditExport(t *testing.T) {
	state := t.TempDir()
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	const id = "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30"
	path, err := audit.Path(state, id)
	if err != nil {
		t.Fatal(err)
	}
	recs := []map[string]any{
		{"time": "2026-12-03T10:00:00Z", "backend": "claude", "programVersion": "2.1.328", "model": "claude-opus-5-5",
			"cwd": "/work", "user": "Fix <b>it</b>", "status": "completed", "images": []any{},
			"items": []any{
				map[string]any{"id": "T1", "type": "tool", "name": "Edit", "summary": "a.go", "status": "succeeded",
					"detail": "arguments:\n{\"file_path\":\"a.go\",\"old_string\":\"x\",\"new_string\":\"y\"}"},
				map[string]any{"id": "A1", "type": "assistant", "text": "Fixed **it**."},
			},
			"usage":   map[string]any{"input": 1000, "output": 20},
			"costUSD": "0.01",
			"changes": map[string]any{"files": []any{map[string]any{"path": "a.go", "change": "modified", "added": 1, "removed": 1, "binary": false}}, "skipped": []any{}},
		},
		{"time": "2026-12-03T10:05:00Z", "backend": "codex", "programVersion": "0.169.0", "model": "gpt-5.5",
			"cwd": "/work", "user": "Again", "status": "failed", "exitStatus": "exit status 1", "stderrTail": "boom\n",
			"items":   []any{map[string]any{"id": "F1", "type": "failure", "text": "It failed."}},
			"usage":   map[string]any{"input": 500, "output": 5},
			"costUSD": "0.02"},
	}
	for _, r := range recs {
		if err := audit.Append(path, r); err != nil {
			t.Fatal(err)
		}
	}
	md := exportRun(t, "audit", "export", "--format", "md", "--id", id)
	for _, want := range []string{
		"# Audit log of " + id + "\n",
		"> **The audit log verifies.**\n>\n> ok: 2 records, keyed (HMAC-SHA-256)\n",
		"## Turn 1 · 2026-12-03T10:00:00Z · claude 2.1.328 · claude-opus-5-5 · completed\n\n**You**\n\nFix <b>it</b>\n",
		"```diff\n-x\n+y\n```",
		"Fixed **it**.",
		"### Files changed\n\n- `a.go` modified +1 −1\n",
		"*Usage: 1,000 in · 20 out · $0.01*",
		"- The CLI ended: exit status 1\n",
		"Standard error (last lines):\n\n```\nboom\n```",
		"## Totals\n\n1,500 in · 25 out · $0.03\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown export lacks %q:\n%s", want, md)
		}
	}
	page := exportRun(t, "audit", "export", "--id", id)
	if !strings.Contains(page, `<section class="verify ok"><h2>The audit log verifies</h2>`) {
		t.Errorf("the page does not say the log verifies")
	}

	// An edited record: the page says so first, and the command exits 1.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, bytes.Replace(data, []byte("Fixed **it**."), []byte("Fixed **nothing**."), 1), 0o600)
	out := filepath.Join(t.TempDir(), "audit.html")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"audit", "export", "-o", out, "--id", id}, strings.NewReader(""), &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "does not verify: the page says why, first") {
		t.Errorf("exit %d, stderr %q; want 1 saying the log does not verify", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`<section class="verify bad"><h2>The audit log does not verify</h2>`)) || !bytes.Contains(got, []byte("record 1: ")) {
		t.Errorf("the page does not say first that the log does not verify:\n%.2000s", got)
	}
}
