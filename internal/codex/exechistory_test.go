package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// noticeHost records the notices a turn gives.
type noticeHost struct{ notices []string }

func (h *noticeHost) Change(c itemmap.Change) {
	if c.Op == itemmap.OpAdd && c.Item.Type() == archive.TypeNotice {
		h.notices = append(h.notices, c.Item.String("text"))
	}
}

func (h *noticeHost) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}

// execHistoryRun replays the recorded exec_history thread (two turns of
// codex exec) as the exec backend runs them, with rollout (nil: none) as
// codex's log of the thread, each turn's lines of it written as the turn
// runs; it returns each turn's end and notices.
func execHistoryRun(t *testing.T, rollout []byte) ([]*itemmap.TurnEnd, [][]string) {
	t.Helper()
	stream, err := os.ReadFile("testdata/exec_history.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	stream = bytes.ReplaceAll(stream, []byte(captureWork), []byte(work))
	rollout = bytes.ReplaceAll(rollout, []byte(captureWork), []byte(work))
	thread := gjson.GetBytes(stream, "thread_id").String()
	// The log's part of each turn: the first ends with its task_complete
	// event.
	var parts [2][]byte
	if rollout != nil {
		i := bytes.Index(rollout, []byte(`"type":"task_complete"`))
		i += bytes.IndexByte(rollout[i:], '\n') + 1
		parts = [2][]byte{rollout[:i], rollout[i:]}
	}
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "12", "02")
	os.MkdirAll(dir, 0o755)
	log := filepath.Join(dir, "rollout-2026-12-02T05-40-00-"+thread+".jsonl")
	b := New(Options{Options: backend.Options{Env: []string{"CODEX_HOME=" + home}, Dir: work, NewID: itemmap.SequentialIDs()}, Transport: TransportExec})
	m := itemmap.NewCodex(itemmap.SequentialIDs())
	var ends []*itemmap.TurnEnd
	var notices [][]string
	h := &noticeHost{}
	n := 0
	for line := range bytes.SplitSeq(stream, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if bytes.Contains(line, []byte(`"turn.started"`)) {
			b.markRollout()
			if rollout != nil {
				f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(parts[n])
				f.Close()
			}
			n++
		}
		b.execFileChange(m, line)
		r := m.Line(line)
		if r.Session != nil {
			b.thread = r.Session.ID
		}
		if r.End != nil {
			b.execHistory(m, r.End, h)
			ends, notices = append(ends, r.End), append(notices, h.notices)
			h = &noticeHost{}
		}
	}
	if len(ends) != 2 {
		t.Fatalf("%d turns ended, want 2", len(ends))
	}
	return ends, notices
}

// recordedHistoryRollout is the recorded log of the exec_history thread,
// without its lines that contain drop.
func recordedHistoryRollout(t *testing.T, drop string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/exec_history.rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if drop == "" {
		return data
	}
	var kept [][]byte
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if !bytes.Contains(l, []byte(drop)) {
			kept = append(kept, l)
		}
	}
	return bytes.Join(kept, []byte("\n"))
}

// The odd bytes of the recorded calls' arguments (exec_history.*).
const (
	oddArgs  = "{ \"yield_time_ms\" :5000,\n  \"cmd\":\"printf 'x  y\\\\n'\\u003e/dev/null;   echo odd\" , \"workdir\":\".\\/\"}"
	failArgs = `{"cmd":"exit 4"   }`
)

// TestExecHistory: the recorded exec thread's histories hold the model's
// own calls from codex's log, byte for byte, and the outputs codex sent
// back (the golden file: exec_history.golden.json); no notice.
func TestExecHistory(t *testing.T) {
	ends, notices := execHistoryRun(t, recordedHistoryRollout(t, ""))
	for i := range ends {
		if len(notices[i]) != 0 {
			t.Errorf("turn %d: notices %q", i, notices[i])
		}
	}
	calls := historyCalls(ends[0].History)
	want := []string{"call_odd exec_command " + oddArgs, "call_patch apply_patch *** Begin Patch\n*** Add File: notes.txt\n+a note\n*** End Patch\n",
		`call_plan update_plan {"plan":[{"step":"look","status":"completed"}] }`, "call_fail exec_command " + failArgs}
	if strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Errorf("first turn's calls:\n%q\nwant\n%q", calls, want)
	}
	if calls := historyCalls(ends[1].History); len(calls) != 1 || calls[0] != `call_second exec_command {"cmd":"echo second"}` {
		t.Errorf("second turn's calls: %q", calls)
	}
	var turns [][]map[string]any
	for _, end := range ends {
		var blocks []map[string]any
		for _, m := range end.History {
			for _, b := range m.Content {
				blocks = append(blocks, map[string]any{"role": m.Role, "block": b.Map()})
			}
		}
		turns = append(turns, blocks)
	}
	golden(t, "exec_history.golden.json", turns)
}

// TestExecHistoryFallback: a tool call that codex's log does not have
// stays in the neutral form where the turn had it, and a notice says how
// many; without a log, every one does.
func TestExecHistoryFallback(t *testing.T) {
	ends, notices := execHistoryRun(t, recordedHistoryRollout(t, `"call_fail"`))
	calls := historyCalls(ends[0].History)
	if len(calls) != 4 || !strings.HasPrefix(calls[0], "call_odd ") || !strings.HasPrefix(calls[2], "call_plan ") ||
		!strings.HasPrefix(calls[3], "00000000-") || !strings.HasSuffix(calls[3], ` shell {"command":"exit 4"}`) {
		t.Errorf("calls without call_fail in the log: %q", calls)
	}
	if len(notices[0]) != 1 || !strings.Contains(notices[0][0], "one tool call of this turn") || len(notices[1]) != 0 {
		t.Errorf("notices %q", notices)
	}
	neutral := ends[0].History[len(ends[0].History)-2]
	if neutral.Role != "tool" || !neutral.Content[0].Bool("isError") {
		t.Errorf("the neutral call's result: %+v", neutral)
	}

	// A message of the log that differs from what the turn showed: the
	// text as shown, once.
	rollout := bytes.ReplaceAll(recordedHistoryRollout(t, ""), []byte(`"output_text","text":"All done."`), []byte(`"output_text","text":"All done!"`))
	ends, _ = execHistoryRun(t, rollout)
	if text := historyText(ends[0].History); strings.Count(text, "All done.") != 1 || strings.Contains(text, "All done!") {
		t.Errorf("texts with a differing message in the log: %q", text)
	}

	ends, notices = execHistoryRun(t, nil)
	if calls := historyCalls(ends[0].History); len(calls) != 3 || !strings.Contains(calls[0], ` shell {"command":`) {
		t.Errorf("calls without a log: %q", calls)
	}
	if len(notices[0]) != 1 || !strings.Contains(notices[0][0], "3 tool calls") || len(notices[1]) != 1 || !strings.Contains(notices[1][0], "one tool call") {
		t.Errorf("notices without a log: %q", notices)
	}
}

// historyText is the text blocks of history, one a line.
func historyText(history []archive.Message) string {
	var out []string
	for _, m := range history {
		for _, b := range m.Content {
			if b.Type() == archive.BlockText {
				out = append(out, b.String("text"))
			}
		}
	}
	return strings.Join(out, "\n")
}

// historyCalls is each toolCall block of history as "id name arguments".
func historyCalls(history []archive.Message) []string {
	var out []string
	for _, m := range history {
		for _, b := range m.Content {
			if b.Type() == archive.BlockToolCall {
				out = append(out, b.String("id")+" "+b.String("name")+" "+b.String("arguments"))
			}
		}
	}
	return out
}

// golden compares v, as indented JSON, with testdata/name (rewritten with
// -update).
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(p, append(got, '\n'), 0o644)
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(bytes.TrimSpace(want)) != string(got) {
		t.Errorf("%s differs:\n%s", name, got)
	}
}
