package history_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/history"
	"spbridge/internal/history/historytest"
	"spbridge/internal/itemmap"
)

// toolSession is a Claude Code session of n turns, each running a command
// whose output is size bytes.
func toolSession(n, size int) string {
	var b strings.Builder
	for i := range n {
		out := strings.Repeat(fmt.Sprintf("line %d of turn %d\n", i, i), size/16+1)[:size]
		q := func(s string) string { data, _ := canonjson.EncodeCompact(s); return string(data) }
		fmt.Fprintf(&b, `{"type":"user","sessionId":"s1","cwd":"/w","message":{"role":"user","content":"turn %d"}}`+"\n", i)
		fmt.Fprintf(&b, `{"type":"assistant","sessionId":"s1","message":{"id":"a%d","model":"claude-x","role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"cat big"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":2}}}`+"\n", i, i)
		fmt.Fprintf(&b, `{"type":"user","sessionId":"s1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%s}]},"toolUseResult":{"stdout":%s,"stderr":""}}`+"\n", i, q(out), q(out))
		fmt.Fprintf(&b, `{"type":"assistant","sessionId":"s1","message":{"id":"b%d","model":"claude-x","role":"assistant","content":[{"type":"text","text":"done %d"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}}`+"\n", i, i)
	}
	return b.String()
}

// compactSize is the conversation's size on one line, the least a save
// writes.
func compactSize(t *testing.T, c *archive.Conversation) int {
	t.Helper()
	data, err := canonjson.EncodeCompact(c.Value())
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// TestImportFits: an import never makes a conversation larger than what a
// save writes and spbridge reads back (the limit, lowered here): the
// tools' long outputs are cut first, the oldest first; then the earliest
// turns go; a notice first in the conversation says what was left out,
// and the newest turn is whole. A session that fits is imported whole,
// without a notice; one whose last turn alone does not fit is an error.
func TestImportFits(t *testing.T) {
	dir := t.TempDir()
	path := historytest.Write(t, dir, "s.jsonl", toolSession(10, 200<<10))
	imp := func(limit int64) (*archive.Conversation, *history.Report, error) {
		return history.ImportFile("claude", path, history.ImportOptions{Stores: stores, NewID: itemmap.SequentialIDs(), MaxSize: limit})
	}
	whole, rep, err := imp(0)
	if err != nil || rep.Omitted != "" {
		t.Fatalf("import under the real limit: %v, %q", err, rep.Omitted)
	}
	full := compactSize(t, whole)
	if full < 10*(200<<10) {
		t.Fatalf("the session makes only %d bytes", full)
	}
	last := func(c *archive.Conversation) string {
		got := historytest.Kinds(c)
		return strings.Join(got[len(got)-3:], "|")
	}
	wantLast := "user turn 9|tool Bash succeeded|assistant done 9"
	if last(whole) != wantLast {
		t.Fatalf("whole import ends %q", last(whole))
	}

	for _, tc := range []struct {
		name  string
		limit int64
		want  string
	}{
		{"outputs cut", int64(full) / 2, "tool outputs were cut to their first 64 KiB."},
		{"turns left out", 512 << 10, "earliest turns were left out."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv, rep, err := imp(tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if n := compactSize(t, conv); int64(n) > tc.limit {
				t.Errorf("%d bytes, over the limit of %d", n, tc.limit)
			}
			first := conv.Items[0]
			if first.Type() != archive.TypeNotice || first.String("text") != rep.Omitted ||
				!strings.HasPrefix(rep.Omitted, "This conversation was larger than spbridge keeps (") || !strings.HasSuffix(rep.Omitted, tc.want) {
				t.Errorf("first item %v, omitted %q", first.Map(), rep.Omitted)
			}
			if last(conv) != wantLast {
				t.Errorf("the newest turn: %q", last(conv))
			}
			t.Log(rep.Omitted)
			// The history begins with a user's message; the newest output
			// is whole when only the oldest needed cutting.
			if m := conv.History[0]; m.Role != "user" || m.Content[0].Type() != archive.BlockText {
				t.Errorf("the history begins with %v", m)
			}
			newest := conv.History[len(conv.History)-2].Content[0]
			if whole := len(newest.String("content")) == 200<<10; whole != (tc.name == "outputs cut") {
				t.Errorf("the newest output is %d bytes", len(newest.String("content")))
			}
			// It saves, and reads back.
			pkg := t.TempDir()
			p, err := archive.Open(pkg, archive.KindDocument, true)
			if err != nil {
				t.Fatal(err)
			}
			p.Conv = conv
			if _, err := p.Save(true); err != nil {
				t.Fatal(err)
			}
			p2, err := archive.Open(pkg, archive.KindDocument, true)
			if err != nil || p2.Unreadable != "" || len(p2.Conv.Items) != len(conv.Items) {
				t.Fatalf("reopened: %v, unreadable %q", err, p2.Unreadable)
			}
		})
	}
	if _, _, err := imp(32 << 10); !errors.Is(err, archive.ErrTooLargeTurn) {
		t.Errorf("a last turn over the limit: %v", err)
	}
}
