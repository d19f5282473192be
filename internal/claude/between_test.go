package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// replayClaude impersonates claude by printing a recorded stdout stream
// (testdata/claude/<name>.stdout.jsonl) as the real one printed it, waiting
// where the real one waited for its input: the answer to initialize for the
// initialize request, a turn the user asked for (a system/init whose next
// result has no origin) for the next user message, and each can_use_tool
// for its answer. Other control requests are answered at once, success.
func replayClaude(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	recorded := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	type line struct {
		Type, Subtype, RequestID string
		Request                  struct{ Subtype string }
		Response                 struct {
			RequestID string `json:"request_id"`
		}
		Origin *struct{ Kind string }
	}
	parsed := make([]line, len(recorded))
	for i, l := range recorded {
		var v struct {
			Type      string `json:"type"`
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
			Response struct {
				RequestID string `json:"request_id"`
			} `json:"response"`
			Origin *struct {
				Kind string `json:"kind"`
			} `json:"origin"`
		}
		if json.Unmarshal(l, &v) != nil {
			continue
		}
		parsed[i] = line{Type: v.Type, Subtype: v.Subtype, RequestID: v.RequestID}
		parsed[i].Request.Subtype = v.Request.Subtype
		parsed[i].Response.RequestID = v.Response.RequestID
		if v.Origin != nil {
			parsed[i].Origin = &struct{ Kind string }{v.Origin.Kind}
		}
	}
	userTurn := func(i int) bool {
		if parsed[i].Type != "system" || parsed[i].Subtype != "init" {
			return false
		}
		for _, l := range parsed[i+1:] {
			if l.Type == "result" {
				return l.Origin == nil
			}
		}
		return false
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	print := func(b []byte) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(append(b, '\n'))
		out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	users, inited := 0, false
	answered := map[string]bool{}
	// next reads and handles one stdin line; false at its end.
	next := func() bool {
		if !in.Scan() {
			return false
		}
		var v struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
			Response struct {
				RequestID string `json:"request_id"`
			} `json:"response"`
		}
		if json.Unmarshal(in.Bytes(), &v) != nil {
			return true
		}
		switch {
		case v.Type == "user":
			users++
		case v.Type == "control_response":
			answered[v.Response.RequestID] = true
		case v.Type == "control_request" && v.Request.Subtype == "initialize":
			inited = true
		case v.Type == "control_request":
			b, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": v.RequestID, "response": map[string]any{}}})
			print(b)
		}
		return true
	}
	turns := 0
	for i, l := range recorded {
		p := parsed[i]
		if p.Type == "control_response" && p.Response.RequestID == initRequestID {
			for !inited && next() {
			}
		}
		if userTurn(i) {
			turns++
			for users < turns && next() {
			}
		}
		print(l)
		if p.Type == "control_request" && p.Request.Subtype == "can_use_tool" {
			for !answered[p.RequestID] && next() {
			}
		}
	}
	for next() {
	}
}

// journal writes down what hosts for turns and for between them are
// told, one line a change, each marked with the host's name (see as).
type journal struct {
	mu    sync.Mutex
	lines []string
	items map[string]archive.Item // by id, to name a parent
	ends  chan *itemmap.TurnEnd   // the ends told between turns
	asked chan itemmap.Approval   // permission requests between turns
	allow bool
}

func newJournal() *journal {
	return &journal{items: map[string]archive.Item{}, ends: make(chan *itemmap.TurnEnd, 10), asked: make(chan itemmap.Approval, 10)}
}

// named is a host that writes into a journal under its name.
type named struct {
	*journal
	where string
}

// as is a host that writes into j under where.
func (j *journal) as(where string) named { return named{j, where} }

func (j named) printf(format string, a ...any) {
	j.lines = append(j.lines, j.where+" "+fmt.Sprintf(format, a...))
}

func (j named) Change(c itemmap.Change) {
	j.mu.Lock()
	defer j.mu.Unlock()
	it := c.Item
	if c.Op == itemmap.OpUpdate && it.Type() != archive.TypeTool {
		return // text as it streams: its add and its last state say enough
	}
	j.items[it.ID()] = it
	desc := it.Type()
	switch it.Type() {
	case archive.TypeTool:
		desc += " " + it.String("name") + " " + it.String("status")
	case archive.TypeToolApproval:
		desc += " " + it.String("name")
	default:
		desc += fmt.Sprintf(" %q", it.String("text"))
	}
	if c.Tool != nil && c.Tool.ParentID != "" {
		parent := "an item of another host"
		if p, ok := j.items[c.Tool.ParentID]; ok {
			parent = p.String("name")
		}
		desc += " under " + parent
	}
	j.printf("%s %s", c.Op, desc)
}

func (j named) Approve(ctx context.Context, a itemmap.Approval) backend.Decision {
	j.mu.Lock()
	j.printf("asked %s %s", a.ToolName, a.Input)
	allow := j.allow
	j.mu.Unlock()
	j.asked <- a
	return backend.Decision{Allow: allow, Message: "no"}
}

func (j named) End(end *itemmap.TurnEnd) {
	j.mu.Lock()
	j.printf("end %s", describeEnd(end))
	j.mu.Unlock()
	j.ends <- end
}

func describeEnd(end *itemmap.TurnEnd) string {
	var said []string
	for _, m := range end.History {
		for _, c := range m.Content {
			switch c.Type() {
			case archive.BlockText:
				said = append(said, m.Role+": "+c.String("text"))
			default:
				said = append(said, m.Role+": "+c.Type())
			}
		}
	}
	return fmt.Sprintf("%s history %q input %s output %s cost %s", end.Status, said, end.Usage.Input, end.Usage.Output, end.CostUSD)
}

// TestBetweenTurnsGolden plays recorded streams of the real claude with
// background subagents through the backend, with a host watching between
// turns, and compares what each turn's host and the between-turn host
// were told with testdata/between/<name>.golden (-update rewrites them).
func TestBetweenTurnsGolden(t *testing.T) {
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		prompt string // a turn, or "" to wait for the end of one claude ran on its own
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		// The subagent's calls, and the turn claude runs for its report,
		// come after the first result: they show between turns.
		{"tool_agent_background", []step{{"have a subagent look at readme.txt"}, {""}}},
		// The subagent's Bash asks its permission between turns.
		{"tool_agent_background_permission", []step{{"have a subagent make a file"}, {""}, {"anything else?"}}},
		// The user sends while the subagent runs: its last lines come in
		// the second turn, which ends once.
		{"tool_agent_background_race", []step{{"have a subagent run the slow command"}, {"meanwhile, run the other command"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := fakeBackend(t, "replay:"+filepath.Join(root, "testdata", "claude", c.name+".stdout.jsonl"), Options{})
			j := newJournal()
			j.allow = true
			b.Watch(j.as("between"))
			turns := 0
			for _, s := range c.steps {
				if s.prompt == "" {
					<-j.ends // a hang here is a between-turn end never told
					continue
				}
				turns++
				h := j.as(fmt.Sprintf("turn%d", turns))
				// Held across the turn as a session holds it: nothing
				// between turns is told before the turn's end is.
				release := b.Hold()
				end := b.Turn(context.Background(), backend.Message{Text: s.prompt}, h)
				j.mu.Lock()
				h.printf("end %s", describeEnd(end))
				j.mu.Unlock()
				release()
			}
			b.Close()
			j.mu.Lock()
			got := strings.Join(j.lines, "\n") + "\n"
			j.mu.Unlock()
			golden := filepath.Join("testdata", "between", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("what the hosts were told differs from %s; got:\n%s", golden, got)
			}
		})
	}
}

// TestPermissionDuringPrepare: a can_use_tool request that comes before
// the answer to initialize is answered (by the host watching between
// turns, else denied), and Prepare returns.
func TestPermissionDuringPrepare(t *testing.T) {
	for _, watched := range []bool{true, false} {
		t.Run(fmt.Sprintf("watched=%v", watched), func(t *testing.T) {
			b := fakeBackend(t, "ask-at-init", Options{})
			j := newJournal()
			j.allow = true
			if watched {
				b.Watch(j.as("between"))
			}
			if err := b.Prepare(context.Background()); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			want := "answered-deny"
			if watched {
				want = "answered-allow"
				if a := <-j.asked; a.ToolName != "Bash" {
					t.Errorf("asked about %s, want Bash", a.ToolName)
				}
			}
			if cmds := b.Commands(); len(cmds) != 1 || cmds[0].Name != want {
				t.Errorf("Commands() = %v, want the fake's %s", cmds, want)
			}
			if !watched {
				// The denial is kept for the next turn, with the request.
				rec := &recorder{}
				b.Turn(context.Background(), backend.Message{Text: "hi"}, rec)
				got := rec.texts()
				if len(got) < 2 || got[0] != "toolApproval: " || !strings.Contains(got[1], "between turns, with nobody to ask") {
					t.Errorf("next turn's items = %q, want the request and the denial first", got)
				}
			}
		})
	}
}

// TestPermissionDuringSetMode: a can_use_tool request that comes while
// SetMode waits between turns for its answer is asked of the host, and
// SetMode gets its answer.
func TestPermissionDuringSetMode(t *testing.T) {
	b := fakeBackend(t, "ask-at-mode", Options{})
	j := newJournal()
	b.Watch(j.as("between"))
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := b.SetMode(context.Background(), ModePlan)
	if !errors.Is(err, backend.ErrModeRefused) || !strings.Contains(err.Error(), "answered deny") {
		t.Fatalf("SetMode = %v, want the fake's refusal after the answer deny", err)
	}
	if a := <-j.asked; a.ToolName != "Bash" {
		t.Errorf("asked about %s", a.ToolName)
	}
	if b.Mode() != ModeDefault {
		t.Errorf("Mode() = %s after a refusal", b.Mode())
	}
}

// TestBetweenTurnsDelivered: what a background subagent prints after the
// turn's result reaches the watching host as it comes, with no next
// turn: its call under the Agent call, the report claude's own turn
// gives, and that turn's end; the turn's host heard none of it.
func TestBetweenTurnsDelivered(t *testing.T) {
	b := fakeBackend(t, "background", Options{})
	j := newJournal()
	b.Watch(j.as("between"))
	rec := &recorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "have a subagent look"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn = %+v", end)
	}
	end := <-j.ends
	if got, want := rec.texts(), []string{"tool: succeeded", "assistant: launched"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("turn items = %q, want %q", got, want)
	}
	j.mu.Lock()
	got := strings.Join(j.lines, "\n")
	j.mu.Unlock()
	for _, want := range []string{"add tool Read succeeded under an item of another host", `add assistant "the subagent counted 4 words"`} {
		if !strings.Contains(got, want) {
			t.Errorf("between-turn host heard:\n%s\nwant %q", got, want)
		}
	}
	if d := describeEnd(end); !strings.Contains(d, `assistant: the subagent counted 4 words`) || end.CostUSD == "" {
		t.Errorf("between-turn end = %s", d)
	}
	// The next turn is the user's alone.
	rec2 := &recorder{}
	b.Turn(context.Background(), backend.Message{Text: "again"}, rec2)
	if got := rec2.texts(); len(got) != 1 || got[0] != "assistant: echo: again" {
		t.Errorf("next turn's items = %q", got)
	}
}

// noticeHost is a between-turn host that hands over each notice's text.
type noticeHost struct{ notices chan string }

func (n noticeHost) Change(c itemmap.Change) {
	if c.Item.Type() == archive.TypeNotice {
		n.notices <- c.Item.String("text")
	}
}
func (n noticeHost) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}
func (n noticeHost) End(*itemmap.TurnEnd) {}

// TestExitBetweenTurns: claude exiting after a turn is noticed between
// turns (the watching host is told, the process is reaped), and the next
// turn starts claude again, resuming.
func TestExitBetweenTurns(t *testing.T) {
	b := fakeBackend(t, "exit-after-turn", Options{})
	h := noticeHost{notices: make(chan string, 10)}
	b.Watch(h)
	if end := b.Turn(context.Background(), backend.Message{Text: "one"}, &recorder{}); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn = %+v", end)
	}
	if got := <-h.notices; !strings.HasPrefix(got, "Claude Code exited between turns") {
		t.Errorf("notice %q", got)
	}
	if b.Proc() != nil {
		t.Error("the process that exited is still held")
	}
	// The fake refuses to start again: the next turn tried, resuming.
	rec := &recorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "two"}, rec); !end.NotStarted {
		t.Errorf("turn two = %+v, want one that did not start", end)
	}
	if !strings.Contains(strings.Join(b.args(), " "), "--resume fake-session-1") {
		t.Errorf("args %q", b.args())
	}
}

// gateHost is a between-turn host whose Approve waits for gate.
type gateHost struct {
	asked chan itemmap.Approval
	gate  chan struct{}
}

func (g gateHost) Change(itemmap.Change) {}
func (g gateHost) Approve(ctx context.Context, a itemmap.Approval) backend.Decision {
	g.asked <- a
	<-g.gate
	return backend.Decision{Allow: true}
}
func (g gateHost) End(*itemmap.TurnEnd) {}

// TestPermissionBetweenAnsweredInTurn: a permission request asked between
// turns whose answer comes while the next turn runs is answered by that
// turn's reader: claude gets it, and the turn goes on.
func TestPermissionBetweenAnsweredInTurn(t *testing.T) {
	b := fakeBackend(t, "ask-between", Options{})
	g := gateHost{asked: make(chan itemmap.Approval, 1), gate: make(chan struct{})}
	b.Watch(g)
	if end := b.Turn(context.Background(), backend.Message{Text: "one"}, &recorder{}); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn one = %+v", end)
	}
	if a := <-g.asked; a.ToolName != "Bash" {
		t.Fatalf("asked about %s", a.ToolName)
	}
	// Held: only the turn's reader can take the answer.
	release := b.Hold()
	close(g.gate)
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "two"}, rec)
	release()
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn two = %+v", end)
	}
	if got := rec.texts(); len(got) != 1 || got[0] != "assistant: echo: two (between turns: allow)" {
		t.Errorf("turn two's items = %q", got)
	}
}
