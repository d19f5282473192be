package codex

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// TestExecLastRound: the last token_count of the thread's newest session
// log gives the turn's last request and the model's window; a thread
// without a log leaves the end as it was.
func TestExecLastRound(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "12", "01")
	os.MkdirAll(dir, 0o755)
	count := func(in, cached, out, window int) string {
		return `{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":` + itoa(in) +
			`,"cached_input_tokens":` + itoa(cached) + `,"output_tokens":` + itoa(out) + `},"model_context_window":` + itoa(window) + `}}}`
	}
	old := filepath.Join(dir, "rollout-2026-12-01T01-00-00-th-1.jsonl")
	os.WriteFile(old, []byte(count(1, 0, 1, 10)+"\n"), 0o600)
	os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour))
	newest := strings.Join([]string{count(5, 0, 5, 100), `{"type":"event_msg","payload":{"type":"token_count","info":null}}`,
		count(1000, 600, 50, 258400), `{"not json`, `{"type":"response_item"}`, ""}, "\n")
	os.WriteFile(filepath.Join(dir, "rollout-2026-12-01T02-00-00-th-1.jsonl"), []byte(newest), 0o600)

	b := New(Options{Options: backend.Options{Env: []string{"CODEX_HOME=" + home}}, Transport: TransportExec})
	b.thread = "th-1"
	end := &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
	b.execLastRound(end)
	if lr := end.LastRound; lr.Input != "400" || lr.CacheRead != "600" || lr.Output != "50" || end.ContextWindow != 258400 {
		t.Errorf("execLastRound: last round %+v, window %d", lr, end.ContextWindow)
	}
	b.thread = "th-2"
	end = &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
	b.execLastRound(end)
	if end.ContextWindow != 0 || end.LastRound.Input != "" {
		t.Errorf("a thread without a log: %+v", end)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
