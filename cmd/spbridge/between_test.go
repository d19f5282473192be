package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/itemmap"
	"spbridge/internal/session"
)

// bgShellBackend is a backend whose CLI goes on after each turn: when the
// last hold of a turn is released it tells its watcher, at once, a
// subagent's call, its report and the end of the turn it ran for it (as
// claude's background subagents do), and, when ask is set, first asks
// about a command.
type bgShellBackend struct {
	mu      sync.Mutex
	holds   int
	turns   int
	told    int // turns whose between-turn work was told
	watcher backend.Between
	ask     *itemmap.Approval
	asked   []backend.Decision
}

func (b *bgShellBackend) Name() string { return "claude" }
func (b *bgShellBackend) Turn(_ context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	b.mu.Lock()
	b.turns++
	b.mu.Unlock()
	it := archive.NewItem(archive.TypeAssistant)
	it.Set("text", "reply to "+msg.Text)
	h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: it})
	return &itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "m",
		History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("reply to " + msg.Text)}}}}
}
func (b *bgShellBackend) Interrupt()               {}
func (b *bgShellBackend) Close() error             { return nil }
func (b *bgShellBackend) Started() bool            { return true }
func (b *bgShellBackend) Program() (string, error) { return "/usr/bin/claude", nil }
func (b *bgShellBackend) Version() string          { return "1" }
func (b *bgShellBackend) StderrTail() string       { return "" }
func (b *bgShellBackend) ExitStatus() string       { return "" }
func (b *bgShellBackend) Watch(h backend.Between) {
	b.mu.Lock()
	b.watcher = h
	b.mu.Unlock()
}

func (b *bgShellBackend) Hold() func() {
	b.mu.Lock()
	b.holds++
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.holds--
			tell := b.holds == 0 && b.told < b.turns && b.watcher != nil
			if tell {
				b.told++
			}
			w, ask := b.watcher, b.ask
			b.mu.Unlock()
			if tell {
				b.between(w, ask)
			}
		})
	}
}

func (b *bgShellBackend) between(w backend.Between, ask *itemmap.Approval) {
	if ask != nil {
		d := w.Approve(context.Background(), *ask)
		b.mu.Lock()
		b.asked = append(b.asked, d)
		b.mu.Unlock()
	}
	child := archive.NewItem(archive.TypeTool)
	child.Set("name", "Read")
	child.Set("summary", "notes.txt")
	child.Set("status", archive.StatusSucceeded)
	w.Change(itemmap.Change{Op: itemmap.OpAdd, Item: child, Tool: &itemmap.ToolView{Kind: itemmap.KindRead, Title: "Read notes.txt"}})
	report := archive.NewItem(archive.TypeAssistant)
	report.Set("text", "the subagent's report")
	w.Change(itemmap.Change{Op: itemmap.OpAdd, Item: report})
	w.End(&itemmap.TurnEnd{Status: itemmap.TurnCompleted, Model: "m", CostUSD: "0.25",
		Usage:   archive.Usage{Input: "5", Output: "1", ReportedCost: "0.25"},
		History: []archive.Message{{Role: "assistant", Content: []archive.Block{archive.NewTextBlock("the subagent's report")}}}})
}

// openBgShell opens a package on a bgShellBackend for sendAll, with a
// --json shell host writing to out.
func openBgShell(t *testing.T, be backend.Backend) (*session.Session, *shellHost, *bytes.Buffer, string) {
	t.Helper()
	pkg := filepath.Join(t.TempDir(), "Doc.silverpoint")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	row := claude.Plugin // its tools scope the grants
	row.New = func(backend.Options, map[string]string) backend.Backend { return be }
	s, err := session.Open(session.Options{Dir: pkg, Kind: archive.KindDocument, Keep: true, Cwd: filepath.Dir(pkg), Saving: session.SaveAuto,
		Settings: session.Settings{CLI: claude.Name}, CLIs: []backend.Plugin{row}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h := &shellHost{out: &out, errw: &out, json: true, dir: filepath.Dir(pkg)}
	return s, h, &out, pkg
}

// TestRunBetweenTurns: spbridge run shows what the CLI does between its
// turns (a background subagent) as it comes, after the turn's end and
// before the next MESSAGE's turn, with the end of the CLI's own turn as a
// turnEnd of origin "cli"; the session brings it into the conversation,
// which is saved with it: the same rule serve follows.
func TestRunBetweenTurns(t *testing.T) {
	be := &bgShellBackend{}
	s, h, out, pkg := openBgShell(t, be)
	if err := sendAll(context.Background(), stdio{err: out}, s, h, []string{"first", "second"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case m["type"] == "turnEnd":
			o, _ := m["origin"].(string)
			seen = append(seen, "end:"+o)
		case m["item"] != nil:
			it := m["item"].(map[string]any)
			text, _ := it["text"].(string)
			name, _ := it["name"].(string)
			seen = append(seen, it["type"].(string)+":"+text+name)
		}
	}
	want := "user:first|assistant:reply to first|end:|tool:Read|assistant:the subagent's report|end:cli|" +
		"user:second|assistant:reply to second|end:|tool:Read|assistant:the subagent's report|end:cli"
	if got := strings.Join(seen, "|"); got != want {
		t.Errorf("run showed\n%s\nwant\n%s", got, want)
	}
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, m := range p.Conv.History {
		said = append(said, m.Role+":"+m.Content[0].String("text"))
	}
	if got := strings.Join(said, "|"); got != "user:first|assistant:reply to first|assistant:the subagent's report|user:second|assistant:reply to second|assistant:the subagent's report" {
		t.Errorf("saved history %q", got)
	}
	if len(p.Conv.Items) != 8 || p.Conv.EstimatedCost.Dollars != "0.5" {
		t.Errorf("saved %d items, cost %+v", len(p.Conv.Items), p.Conv.EstimatedCost)
	}
}
