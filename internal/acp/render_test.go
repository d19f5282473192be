package acp

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
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
			terminals := []bool{false}
			if strings.Contains(name, "bash") {
				// Also for a client with terminals of its own.
				terminals = append(terminals, true)
			}
			for _, terminal := range terminals {
				got := renderClaude(t, f, terminal)
				golden := filepath.Join("testdata", "claude", name+".acp.jsonl")
				if terminal {
					golden = filepath.Join("testdata", "claude", name+".terminal.acp.jsonl")
				}
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
			}
		})
	}
}

// renderClaude maps a recorded stream and renders its changes as a
// session's host does, with the session's working folder /work.
func renderClaude(t *testing.T, path string, terminal bool) []byte {
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
	m := itemmap.NewClaude(itemmap.SequentialIDs())
	var lines [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 {
			lines = append(lines, line)
		}
	}
	return render(t, claudeMapper{m}, lines, allowed, "claude-code", terminal)
}

// mapper is what render needs of a stream mapper.
type mapper interface {
	Line([]byte) itemmap.Result
	Answered(requestID string, allowed bool)
	InTurn() bool
	Finish(interrupted bool, text, detail string) itemmap.Result
}

type claudeMapper struct{ *itemmap.Claude }

func (m claudeMapper) Answered(id string, allowed bool) { m.Claude.Answered(id, allowed) }

// execMapper is a Codex exec mapper, which is never asked.
type execMapper struct{ *itemmap.Codex }

func (execMapper) Answered(string, bool) {}

// appMapper is a Codex app-server mapper given the image a view_image
// call looked at, as internal/codex reads it from the file the imageView
// item names once the item completes.
type appMapper struct{ *itemmap.CodexApp }

func (a appMapper) Line(line []byte) itemmap.Result {
	r := a.CodexApp.Line(line)
	v := gjson.ParseBytes(line)
	if v.Get("method").String() == "item/completed" && v.Get("params.item.type").String() == "imageView" {
		for i := range r.Changes {
			r.Changes[i].Item = r.Changes[i].Item.Clone() // delivered before the file is read
		}
		r.Changes = append(r.Changes, a.ViewedImage(v.Get("params.item.id").String(), itemmap.Image{MimeType: "image/png", Data: redPNG}).Changes...)
	}
	return r
}

// redPNG is the 8×8 red square the recordings' tools looked at.
var redPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII=")

// render maps the lines of a recorded stream and renders its changes as a
// session's host does, with the session's working folder /work, for a
// client with terminals of its own when terminal is set: every
// session/update and the toolCall of each permission request (answered
// as allowed says), one JSON value a line.
func render(t *testing.T, m mapper, lines [][]byte, allowed map[string]bool, provider string, terminal bool) []byte {
	t.Helper()
	var out bytes.Buffer
	srv := &Server{w: jsonrpc.NewConn(&out, jsonrpc.Options{})}
	srv.terminal.Store(terminal)
	// The session holds conv itself (imported), which the turns' ends
	// below are applied to.
	conv := &archive.Conversation{}
	s, err := session.Open(session.Options{Dir: t.TempDir(), Keep: true, Import: conv, Settings: session.Settings{CLI: "claude"}, CLIs: clis.All})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ss := &acpSession{srv: srv, id: "S", send: newSender(srv, "S"), set: sessionSettings{cwd: "/work"}, conv: s}
	h := &acpHost{ss: ss, turn: true}
	feed := func(r itemmap.Result) {
		for _, c := range r.Changes {
			h.Change(c)
		}
		for _, a := range r.Approvals {
			tc := wire.PermissionToolCall(a.ToolItemID, a, ss.set.cwd)
			delete(tc, "rawInput")
			srv.w.Send(map[string]any{"permission": tc})
			m.Answered(a.RequestID, allowed[a.RequestID])
		}
		if r.End != nil {
			itemmap.Apply(conv, r.End, provider)
			ss.send.usage(r.End, ss.conv)
		}
	}
	for _, line := range lines {
		feed(m.Line(line))
	}
	if m.InTurn() {
		feed(m.Finish(false, "The CLI stopped before the turn ended.", ""))
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

// TestCodexUpdatesGolden: what an ACP client is sent for each recorded
// Codex stream, app-server and exec (the project's own recordings), as
// TestClaudeUpdatesGolden; the app-server sessions with commands also for
// a client with terminals of its own (.terminal.acp.jsonl).
func TestCodexUpdatesGolden(t *testing.T) {
	app, _ := filepath.Glob("../../testdata/codex/app-server/*.jsonl")
	exec, _ := filepath.Glob("../../testdata/codex/exec/*.stdout.jsonl")
	if len(app) == 0 || len(exec) == 0 {
		t.Fatal("no recorded codex streams")
	}
	check := func(t *testing.T, got []byte, golden string) {
		t.Helper()
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
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
	}
	for _, f := range app {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run("app-server/"+name, func(t *testing.T) {
			lines, allowed := appServerLines(t, f)
			got := render(t, appMapper{itemmap.NewCodexApp(itemmap.SequentialIDs())}, lines, allowed, "openai", false)
			check(t, got, filepath.Join("testdata", "codex", "app-server", name+".acp.jsonl"))
			if strings.Contains(name, "command") {
				got := render(t, appMapper{itemmap.NewCodexApp(itemmap.SequentialIDs())}, lines, allowed, "openai", true)
				check(t, got, filepath.Join("testdata", "codex", "app-server", name+".terminal.acp.jsonl"))
			}
		})
	}
	for _, f := range exec {
		name := strings.TrimSuffix(filepath.Base(f), ".stdout.jsonl")
		t.Run("exec/"+name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var lines [][]byte
			for _, line := range bytes.Split(data, []byte("\n")) {
				if len(line) > 0 {
					lines = append(lines, line)
				}
			}
			got := render(t, execMapper{itemmap.NewCodex(itemmap.SequentialIDs())}, lines, nil, "openai", false)
			check(t, got, filepath.Join("testdata", "codex", "exec", name+".acp.jsonl"))
		})
	}
}

// appServerLines reads a recorded app-server session: the server's lines,
// and the client's answers to its approval requests by request id.
func appServerLines(t *testing.T, path string) ([][]byte, map[string]bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	allowed := map[string]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec struct {
			Dir string
			Msg json.RawMessage
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		switch rec.Dir {
		case "out":
			lines = append(lines, rec.Msg)
		case "in":
			var msg struct {
				ID     json.RawMessage
				Result struct{ Decision any }
			}
			if json.Unmarshal(rec.Msg, &msg) == nil {
				if d, ok := msg.Result.Decision.(string); ok {
					allowed[string(msg.ID)] = strings.HasPrefix(d, "accept")
				}
			}
		}
	}
	return lines, allowed
}
