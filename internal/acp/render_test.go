package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/itemmap"
	"spbridge/internal/session"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestClaudeUpdatesGolden: what an ACP client is sent for each recorded
// Claude Code stream (the project's own recordings of its tools): every
// session/update of the turn (tool calls with their kind, title,
// locations, diffs and output; plans; usage_update at the turn's end) and
// the toolCall of each permission request, one JSON value a line.
func TestClaudeUpdatesGolden(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/claude/*.stdout.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded claude streams")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout.jsonl")
		t.Run(name, func(t *testing.T) {
			got := renderClaude(t, f)
			golden := filepath.Join("testdata", "claude", name+".acp.jsonl")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("updates differ from %s; got:\n%s", golden, got)
			}
		})
	}
}

// renderClaude maps a recorded stream and renders its changes as a
// session's host does, with the session's working folder /work.
func renderClaude(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The host's answers, as the recording's stdin gave them.
	allowed := map[string]bool{}
	stdin, _ := os.ReadFile(strings.TrimSuffix(path, ".stdout.jsonl") + ".stdin.jsonl")
	for _, line := range bytes.Split(stdin, []byte("\n")) {
		var l struct {
			Line struct {
				Type     string
				Response struct {
					RequestID string `json:"request_id"`
					Response  struct{ Behavior string }
				}
			}
		}
		if json.Unmarshal(line, &l) == nil && l.Line.Type == "control_response" {
			allowed[l.Line.Response.RequestID] = l.Line.Response.Response.Behavior == "allow"
		}
	}
	var out bytes.Buffer
	srv := &Server{w: newWriter(&out)}
	ss := &acpSession{srv: srv, id: "S", cwd: "/work", pkg: &archive.Package{Conv: &archive.Conversation{}}}
	h := &acpHost{ss: ss, t: &turn{}}
	m := itemmap.NewClaude(itemmap.SequentialIDs())
	feed := func(r itemmap.Result) {
		for _, c := range r.Changes {
			h.Change(c)
		}
		for _, a := range r.Approvals {
			tc := permissionToolCall(a.ToolItemID, a, ss.cwd)
			delete(tc, "rawInput")
			srv.w.send(map[string]any{"permission": tc})
			m.Answered(a.RequestID, allowed[a.RequestID])
		}
		if r.End != nil {
			session.Apply(ss.pkg.Conv, r.End, "claude-code")
			ss.usage(r.End)
		}
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 {
			feed(m.Line(line))
		}
	}
	if m.InTurn() {
		feed(m.Finish(false, "Claude Code stopped before the turn ended.", ""))
	}
	// One value a line, _spbridge/edited and the envelope left out.
	var b bytes.Buffer
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("%v: %q", err, sc.Bytes())
		}
		var v any = msg["permission"]
		if msg["method"] == "session/update" {
			v = msg["params"].(map[string]any)["update"]
		} else if v == nil {
			continue
		}
		line, _ := json.Marshal(v)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
