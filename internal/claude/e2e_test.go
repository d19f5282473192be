package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
	"spbridge/internal/statedir"
	"spbridge/internal/trust"
)

// events records what Events hear.
type events struct {
	mu       sync.Mutex
	modes    []string
	commands [][]backend.Command
}

func (e *events) hooks() backend.Events {
	return backend.Events{
		ModeChanged: func(id string) { e.mu.Lock(); e.modes = append(e.modes, id); e.mu.Unlock() },
		CommandsChanged: func(c []backend.Command) {
			e.mu.Lock()
			e.commands = append(e.commands, c)
			e.mu.Unlock()
		},
	}
}

func (e *events) modeList() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.modes)
}

// realClaude returns a backend on the real claude talking to a fake API
// with replies, in a folder with a project command "greet".
func realClaude(t *testing.T, opts Options, replies ...fakeapi.Reply) (*Backend, *fakeapi.Server, string) {
	t.Helper()
	path := fakeapi.ClaudePath(t)
	s, err := fakeapi.NewAnthropic(replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	home := t.TempDir()
	dir := filepath.Join(home, "project")
	if err := os.MkdirAll(filepath.Join(dir, ".claude", "commands"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $ARGUMENTS in one word.\n"
	if err := os.WriteFile(filepath.Join(dir, ".claude", "commands", "greet.md"), []byte(cmd), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.Program = path
	opts.Dir = dir
	opts.Env = append(s.ClaudeEnv(home), "IS_SANDBOX=1") // bypassPermissions may be chosen as root
	opts.NewID = itemmap.SequentialIDs()
	if opts.Folder == nil {
		// The test's own project, with its command: trusted for the
		// session.
		opts.Folder = trust.Open(dir, opts.Env, []trust.CLI{Plugin.Trust})
		if err := opts.Folder.Answer(trust.TrustOnce); err != nil {
			t.Fatal(err)
		}
	}
	b := New(opts)
	t.Cleanup(func() { b.Close() })
	return b, s, dir
}

func tool(id, name string, input map[string]any) fakeapi.Block {
	return fakeapi.Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

func reply(text string) fakeapi.Reply {
	return fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "text", Text: text}}}
}

// TestE2EMCPServers gives the real claude two MCP servers: one that runs
// (the test binary), whose tool the model calls, and one whose program is
// missing, which shows as a notice while the turn goes on. The server's
// secret reaches it without appearing on claude's command line, and the
// config file is gone once claude has read it.
func TestE2EMCPServers(t *testing.T) {
	t.Setenv(statedir.EnvVar, t.TempDir())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := []backend.MCPServer{
		{Name: "fake", Transport: backend.MCPStdio, Command: exe, Env: []backend.NameValue{{Name: fakeapi.MCPServerEnv, Value: "1"}, {Name: fakeapi.MCPTokenEnv, Value: "s3cret-token"}}},
		{Name: "broken", Transport: backend.MCPStdio, Command: filepath.Join(t.TempDir(), "missing")},
	}
	b, s, _ := realClaude(t, Options{MCPServers: servers},
		fakeapi.Reply{Blocks: []fakeapi.Block{tool("toolu_mcp_1", "mcp__fake__shout", map[string]any{"text": "hi"})}},
		reply("done"))
	if err := b.SetMode(context.Background(), ModeBypass); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "call the shout tool"}, rec)
	if end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn = %v, items %q", end.Status, rec.texts())
	}
	texts := rec.texts()
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, "notice: ") && strings.Contains(s, `"broken"`) }) {
		t.Errorf("no notice of the broken server: %q", texts)
	}
	if slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, `"fake"`) }) {
		t.Errorf("a notice of the running server: %q", texts)
	}
	reqs := s.Requests()
	var last []byte
	for _, r := range reqs {
		if r.Path == "/v1/messages" {
			last = r.Body
		}
	}
	if !strings.Contains(string(last), "HI s3cret-token") {
		t.Errorf("the MCP tool's result did not reach the model: %.2000s", last)
	}
	p := b.Proc()
	if p == nil {
		t.Fatal("no claude process")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid()))
	if err != nil {
		t.Skipf("no /proc to read claude's command line: %v", err)
	}
	argv := strings.Split(string(cmdline), "\x00")
	if strings.Contains(string(cmdline), "s3cret") {
		t.Errorf("the secret is on claude's command line: %q", argv)
	}
	i := slices.Index(argv, "--mcp-config")
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("no --mcp-config: %q", argv)
	}
	cfg := argv[i+1]
	if _, err := os.Stat(cfg); !os.IsNotExist(err) {
		t.Errorf("the MCP config outlived claude's start-up: %v", err)
	}
	if st, err := os.Stat(filepath.Dir(cfg)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the MCP config's folder: %v, %v; want mode 0700", st, err)
	}
}

// TestE2EModesAndCommands starts the real claude ahead of a turn, lists
// its commands (the project's "greet" with its description and hint),
// switches it to plan mode, runs /greet (claude expands it), and approves
// ExitPlanMode, which leaves plan mode as claude reports; then claude's
// own /compact shows as a notice.
func TestE2EModesAndCommands(t *testing.T) {
	ev := &events{}
	plan := "1. Say hello.\n"
	b, s, _ := realClaude(t, Options{Events: ev.hooks()},
		reply("Hello"),
		fakeapi.Reply{Blocks: []fakeapi.Block{tool("toolu_search_1", "ToolSearch", map[string]any{"query": "select:ExitPlanMode", "max_results": 1})}},
		fakeapi.Reply{Blocks: []fakeapi.Block{tool("toolu_plan_1", "ExitPlanMode", map[string]any{"plan": plan})}},
		reply("Plan approved."),
		reply("Summary: a greeting was planned."))
	if got := b.Commands(); !slices.Contains(got, backend.Command{Name: "greet", Description: "Greet someone", InputHint: "<name>"}) {
		t.Errorf("Commands before the start = %v, want greet from .claude/commands", got)
	}
	if err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	cmds := b.Commands()
	i := slices.IndexFunc(cmds, func(c backend.Command) bool { return c.Name == "greet" })
	if i < 0 || !strings.HasPrefix(cmds[i].Description, "Greet someone") || cmds[i].InputHint != "<name>" {
		t.Errorf("Commands after the start = %v, want greet", cmds)
	}
	if !slices.ContainsFunc(cmds, func(c backend.Command) bool { return c.Name == "compact" }) {
		t.Errorf("no /compact among %v", cmds)
	}
	if slices.ContainsFunc(cmds, func(c backend.Command) bool { return c.Name == "login" }) {
		t.Errorf("/login offered: %v", cmds)
	}
	if len(ev.commands) == 0 {
		t.Error("Events.CommandsChanged not called")
	}
	if ids := modeIDs(b.Modes()); !slices.Equal(ids, []string{ModeDefault, ModeAcceptEdits, ModePlan, ModeBypass}) {
		t.Errorf("Modes = %v", ids)
	}
	if err := b.SetMode(context.Background(), "nonsense"); err == nil {
		t.Error("SetMode(nonsense) = nil")
	}
	if err := b.SetMode(context.Background(), ModePlan); err != nil {
		t.Fatalf("SetMode(plan) = %v", err)
	}
	if got := b.Mode(); got != ModePlan {
		t.Errorf("Mode = %q, want plan", got)
	}

	rec := &recorder{allow: true}
	if end := b.Turn(context.Background(), backend.Message{Text: "/greet Ada"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("/greet turn = %v %q", end.Status, rec.texts())
	}
	var first []byte
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" && strings.Contains(string(r.Body), "Ada") {
			first = r.Body
			break
		}
	}
	if !strings.Contains(string(first), "Say hello to Ada in one word.") {
		t.Errorf("/greet was not expanded by claude: %.3000s", first)
	}
	if !strings.Contains(messagesOf(first), `<command-name>/greet</command-name>`) {
		t.Errorf("the API got no command-name for /greet: %.2000s", messagesOf(first))
	}

	rec = &recorder{allow: true}
	if end := b.Turn(context.Background(), backend.Message{Text: "plan a greeting"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("plan turn = %v %q", end.Status, rec.texts())
	}
	if got := b.Mode(); got != ModeDefault {
		t.Errorf("Mode after ExitPlanMode approved = %q, want default", got)
	}
	if got := ev.modeList(); !slices.Equal(got, []string{ModePlan, ModeDefault}) {
		t.Errorf("ModeChanged heard %v, want [plan default]", got)
	}

	// Claude Code's own /compact: a notice.
	rec = &recorder{allow: true}
	if end := b.Turn(context.Background(), backend.Message{Text: "/compact"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("/compact turn = %v %q", end.Status, rec.texts())
	}
	if !slices.ContainsFunc(rec.texts(), func(s string) bool { return strings.HasPrefix(s, "notice: Claude Code compacted the conversation") }) {
		t.Errorf("/compact items = %q, want a compaction notice", rec.texts())
	}
}

func modeIDs(ms []backend.Mode) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// messagesOf returns the messages of an API request, for the log.
func messagesOf(body []byte) string {
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	json.Unmarshal(body, &req)
	return string(req.Messages)
}
