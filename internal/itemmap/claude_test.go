package itemmap

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// panel applies changes as a host's panel does and records what a run of
// the mapper produced.
type panel struct {
	items     []archive.Item
	turns     []any
	approvals []any
	skipped   int
	changes   int
}

func (p *panel) apply(t *testing.T, r Result) {
	t.Helper()
	if r.Skipped {
		p.skipped++
	}
	for _, c := range r.Changes {
		p.changes++
		i := -1
		for j, it := range p.items {
			if it.ID() == c.Item.ID() {
				i = j
			}
		}
		switch c.Op {
		case OpAdd:
			if i >= 0 {
				t.Fatalf("add of an item already there: %v", c.Item.Map())
			}
			p.items = append(p.items, c.Item.Clone())
		case OpUpdate:
			if i < 0 {
				t.Fatalf("update of an unknown item: %v", c.Item.Map())
			}
			if c.Delta != "" && !strings.HasSuffix(c.Item.String("text"), c.Delta) {
				t.Fatalf("delta %q is not the end of the text %q", c.Delta, c.Item.String("text"))
			}
			p.items[i] = c.Item.Clone()
		case OpRemove:
			if i < 0 {
				t.Fatalf("remove of an unknown item: %v", c.Item.Map())
			}
			p.items = append(p.items[:i], p.items[i+1:]...)
		}
	}
	for _, a := range r.Approvals {
		p.approvals = append(p.approvals, map[string]any{
			"requestID": a.RequestID, "toolUseID": a.ToolUseID, "toolName": a.ToolName,
			"input": string(a.Input), "itemID": a.ItemID, "toolItemID": a.ToolItemID,
		})
	}
	if e := r.End; e != nil {
		history := make([]any, len(e.History))
		for i, m := range e.History {
			content := make([]any, len(m.Content))
			for j, b := range m.Content {
				content[j] = b.Map()
			}
			history[i] = map[string]any{"role": m.Role, "content": content}
		}
		turn := map[string]any{
			"status": e.Status, "usage": usageValue(e.Usage), "lastRound": usageValue(e.LastRound),
			"model": e.Model, "sessionID": e.SessionID, "history": history,
		}
		if e.CostUSD != "" {
			turn["costUSD"] = e.CostUSD
		}
		p.turns = append(p.turns, turn)
	}
}

func usageValue(u archive.Usage) any {
	c := &archive.Conversation{Usage: u}
	return c.Value()["usage"]
}

func (p *panel) golden() []byte {
	items := make([]any, len(p.items))
	for i, it := range p.items {
		items[i] = it.Map()
	}
	v := map[string]any{"items": items, "turns": orEmpty(p.turns), "approvals": orEmpty(p.approvals), "skippedLines": p.skipped}
	out, err := canonjson.Encode(v)
	if err != nil {
		panic(err)
	}
	return out
}

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// answers reads the host's answers to permission requests from a
// fixture's recorded stdin: request id → allowed.
func answers(t *testing.T, stdinPath string) map[string]bool {
	out := map[string]bool{}
	data, err := os.ReadFile(stdinPath)
	if err != nil {
		return out
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := gjson.GetBytes(line, "line")
		if l.Get("type").String() == "control_response" {
			out[l.Get("response.request_id").String()] = l.Get("response.response.behavior").String() == "allow"
		}
	}
	return out
}

// runClaude feeds a stream through a mapper, reading it from r in whatever
// pieces r returns, as a supervisor does.
func runClaude(t *testing.T, r io.Reader, allowed map[string]bool) *panel {
	t.Helper()
	m := NewClaude(SequentialIDs())
	p := &panel{}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			res := m.Line(line)
			for _, a := range res.Approvals {
				m.Answered(a.RequestID, allowed[a.RequestID])
			}
			p.apply(t, res)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.InTurn() {
		p.apply(t, m.Finish(false, "Claude Code stopped before the turn ended.", ""))
	}
	return p
}

// chunkReader returns its data n bytes at a time.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// lineReader returns one line per Read (the buffer permitting).
type lineReader struct{ data []byte }

func (l *lineReader) Read(p []byte) (int, error) {
	if len(l.data) == 0 {
		return 0, io.EOF
	}
	k := bytes.IndexByte(l.data, '\n') + 1
	if k == 0 {
		k = len(l.data)
	}
	k = min(k, len(p))
	copy(p, l.data[:k])
	l.data = l.data[k:]
	return k, nil
}

func TestClaudeGolden(t *testing.T) {
	files := claudeStreams(t)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout.jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			allowed := answers(t, strings.TrimSuffix(f, ".stdout.jsonl")+".stdin.jsonl")
			whole := runClaude(t, bytes.NewReader(data), allowed).golden()
			byLine := runClaude(t, &lineReader{data}, allowed).golden()
			byTwo := runClaude(t, &chunkReader{data, 2}, allowed).golden()
			if !bytes.Equal(whole, byLine) || !bytes.Equal(whole, byTwo) {
				t.Fatalf("results differ by how the stream is read")
			}
			golden := filepath.Join("testdata", "claude", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, whole, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(whole, want) {
				t.Errorf("items differ from %s; got:\n%s", golden, whole)
			}
		})
	}
}

// claudeStreams lists the recorded claude streams: the shared fixtures
// (copied into testdata/claude) and the project's own recordings
// (testdata/claude at the top of the module).
func claudeStreams(t testing.TB) []string {
	shared, _ := filepath.Glob("testdata/claude/*.stdout.jsonl")
	own, _ := filepath.Glob("../../testdata/claude/*.stdout.jsonl")
	if len(shared) == 0 || len(own) == 0 {
		t.Fatalf("found %d shared and %d own claude streams", len(shared), len(own))
	}
	return append(shared, own...)
}

func FuzzClaude(f *testing.F) {
	files := claudeStreams(f)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) < 64<<10 {
			for _, seed := range streamSeeds(data, claudeStart) {
				f.Add(seed)
			}
		}
	}
	for _, seed := range streamSeeds([]byte(specialStream), claudeStart) {
		f.Add(seed)
	}
	for _, line := range deepSeeds() {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewClaude(SequentialIDs())
		for _, line := range bytes.Split(data, []byte("\n")) {
			r := m.Line(line)
			checkResult(t, r)
		}
		checkResult(t, m.Finish(false, "end", ""))
	})
}

// checkResult checks invariants every result keeps: items have an id and a
// known type, and encode.
func checkResult(t *testing.T, r Result) {
	for _, c := range r.Changes {
		if c.Item.ID() == "" || !archive.KnownItemType(c.Item.Type()) {
			t.Fatalf("bad item %v", c.Item.Map())
		}
		if _, err := canonjson.Encode(c.Item.Map()); err != nil {
			t.Fatalf("item does not encode: %v", err)
		}
	}
	if r.End != nil {
		for _, m := range r.End.History {
			for _, b := range m.Content {
				if _, err := json.Marshal(b.Map()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestClaudeUsageWithoutResult: a turn whose stream ends with no result
// line (Claude Code 2.1.332 on a SIGINT during a tool call; 2.1.328 printed
// one, tool_bash_sigint) used what its model requests streamed: the same
// tokens 2.1.328's result reported for the same turn.
func TestClaudeUsageWithoutResult(t *testing.T) {
	lastTurn := func(name string) map[string]any {
		data, err := os.ReadFile("../../testdata/claude/" + name + ".stdout.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if name == "tool_bash_sigint_no_result" && bytes.Contains(data, []byte(`"type":"result"`)) {
			t.Fatalf("%s has a result line", name)
		}
		p := runClaude(t, bytes.NewReader(data), answers(t, "../../testdata/claude/"+name+".stdin.jsonl"))
		if len(p.turns) != 1 {
			t.Fatalf("%s: %d turns", name, len(p.turns))
		}
		return p.turns[0].(map[string]any)
	}
	withResult, without := lastTurn("tool_bash_sigint"), lastTurn("tool_bash_sigint_no_result")
	if without["status"] != TurnInterrupted {
		t.Errorf("status %v", without["status"])
	}
	u, want := without["usage"].(map[string]any), withResult["usage"].(map[string]any)
	for _, k := range []string{"input", "output", "cacheRead", "cacheWrite"} {
		if fmt.Sprint(u[k]) != fmt.Sprint(want[k]) {
			t.Errorf("usage %s = %v, want %v as the result said", k, u[k], want[k])
		}
	}
	if fmt.Sprint(u["input"]) == "0" {
		t.Errorf("no usage: %v", u)
	}
}
