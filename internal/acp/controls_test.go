package acp

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/pkglock"
	"spbridge/internal/sessionindex"
)

// ctlBackend is a fake backend with controls: modes default and
// acceptEdits, the command "review" before Prepare and "compact" too after
// it. Its turn on "loggedout" fails as a CLI whose credentials were
// refused.
type ctlBackend struct {
	*fakeBackend
	opts backend.Options

	cmu      sync.Mutex
	mode     string
	prepared bool
	// listed are the models Prepare says the CLI has (none: Prepare tells
	// no ModelsChanged and Models is the alias list).
	listed  []backend.Model
	models  []backend.Model
	efforts []string // every SetEffort, in order
	chosen  string   // the model SetModel chose
}

func (b *ctlBackend) SetModel(m string) {
	b.cmu.Lock()
	b.chosen = m
	b.cmu.Unlock()
	b.fakeBackend.SetModel(m)
}

func (b *ctlBackend) model() string { b.cmu.Lock(); defer b.cmu.Unlock(); return b.chosen }

func (b *ctlBackend) Models() []backend.Model {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if b.models != nil {
		return slices.Clone(b.models)
	}
	return []backend.Model{{ID: "default"}, {ID: "sonnet", Name: "Sonnet"}}
}

func (b *ctlBackend) Effort() string {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if len(b.efforts) == 0 {
		return ""
	}
	return b.efforts[len(b.efforts)-1]
}

func (b *ctlBackend) SetEffort(e string) {
	b.cmu.Lock()
	b.efforts = append(b.efforts, e)
	b.cmu.Unlock()
}

func (b *ctlBackend) setEfforts() []string {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	return slices.Clone(b.efforts)
}

func (b *ctlBackend) Modes() []backend.Mode {
	return []backend.Mode{{ID: "default", Name: "Default"}, {ID: "acceptEdits", Name: "Accept edits", Description: "Edits run without asking"}}
}

func (b *ctlBackend) Mode() string { b.cmu.Lock(); defer b.cmu.Unlock(); return b.mode }

func (b *ctlBackend) SetMode(_ context.Context, id string) error {
	if !slices.ContainsFunc(b.Modes(), func(m backend.Mode) bool { return m.ID == id }) {
		return backend.ErrUnknownMode
	}
	b.cmu.Lock()
	b.mode = id
	b.cmu.Unlock()
	b.opts.Events.ModeChanged(id)
	return nil
}

func (b *ctlBackend) Commands() []backend.Command {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	cmds := []backend.Command{{Name: "review", Description: "Review changes", InputHint: "what to review"}}
	if b.prepared {
		cmds = append(cmds, backend.Command{Name: "compact", Description: "Compact the conversation"})
	}
	return cmds
}

func (b *ctlBackend) Prepare(context.Context) error {
	b.cmu.Lock()
	b.prepared = true
	if b.listed != nil {
		b.models = b.listed
	}
	listed := b.listed
	b.cmu.Unlock()
	b.opts.Events.CommandsChanged(b.Commands())
	if listed != nil {
		b.opts.Events.ModelsChanged(slices.Clone(listed))
	}
	return nil
}

func (b *ctlBackend) Turn(ctx context.Context, msg backend.Message, h backend.Host) *itemmap.TurnEnd {
	if msg.Text == "loggedout" {
		f := archive.NewItem(archive.TypeFailure)
		f.Set("text", itemmap.ClaudeNotLoggedIn)
		h.Change(itemmap.Change{Op: itemmap.OpAdd, Item: f})
		return &itemmap.TurnEnd{Status: itemmap.TurnFailed}
	}
	return b.fakeBackend.Turn(ctx, msg, h)
}

// startControls starts a server whose backends are ctlBackends, as a
// client that initializes with caps; it returns the backends as they are
// made.
func startControls(t *testing.T, cfg Config, caps map[string]any) (*client, func(int) *ctlBackend) {
	t.Helper()
	return startListing(t, cfg, caps, nil)
}

// startListing is startControls with backends whose Prepare lists models.
func startListing(t *testing.T, cfg Config, caps map[string]any, models []backend.Model) (*client, func(int) *ctlBackend) {
	t.Helper()
	var mu sync.Mutex
	var made []*ctlBackend
	cfg.CLIs = rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		b := &ctlBackend{fakeBackend: newFake(), opts: o, mode: "default", listed: models}
		if o.Mode != "" {
			b.mode = o.Mode
		}
		mu.Lock()
		made = append(made, b)
		mu.Unlock()
		return b, nil
	})
	c := startPlain(t, cfg, nil)
	c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
	return c, func(i int) *ctlBackend { mu.Lock(); defer mu.Unlock(); return made[i] }
}

// waitUpdate reads until a session/update of kind and returns it.
func waitUpdate(c *client, kind string) map[string]any {
	c.t.Helper()
	m, _ := c.until(func(m map[string]any) bool {
		if m["method"] != "session/update" {
			return false
		}
		return m["params"].(map[string]any)["update"].(map[string]any)["sessionUpdate"] == kind
	})
	return m["params"].(map[string]any)["update"].(map[string]any)
}

func option(opts []any, id string) map[string]any {
	for _, o := range opts {
		if o.(map[string]any)["id"] == id {
			return o.(map[string]any)
		}
	}
	return nil
}

// TestModes: session/new lists the backend's modes and the mode option;
// set_mode and set_config_option switch it and the client hears
// current_mode_update and config_option_update; an unknown mode is
// -32602.
func TestModes(t *testing.T) {
	c, _ := startControls(t, Config{}, nil)
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	sid := res["sessionId"].(string)
	modes := res["modes"].(map[string]any)
	if modes["currentModeId"] != "default" || len(modes["availableModes"].([]any)) != 2 {
		t.Errorf("modes %v", modes)
	}
	if o := option(res["configOptions"].([]any), "mode"); o == nil || o["currentValue"] != "default" || o["category"] != "mode" {
		t.Errorf("mode option %v", res["configOptions"])
	}
	_, seen := c.request("session/set_mode", map[string]any{"sessionId": sid, "modeId": "acceptEdits"})
	if u := updates(seen, "current_mode_update"); len(u) != 1 || u[0]["currentModeId"] != "acceptEdits" {
		t.Errorf("current_mode_update %v", u)
	}
	if u := updates(seen, "config_option_update"); len(u) != 1 || option(u[0]["configOptions"].([]any), "mode")["currentValue"] != "acceptEdits" {
		t.Errorf("config_option_update %v", u)
	}
	if m, _ := c.response(c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "yolo"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown mode: %v", m)
	}
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "default"})
	if option(res["configOptions"].([]any), "mode")["currentValue"] != "default" {
		t.Errorf("set_config_option mode: %v", res)
	}
}

// TestCommands: the commands go out after the open (spbridge's /new and
// /save first), again when the CLI says its own; /save runs spbridge's
// save, any other /command goes to the CLI as it was typed.
func TestCommands(t *testing.T) {
	c, be := startControls(t, Config{}, nil)
	pkg := newPackage(t)
	res, _ := c.request("session/new", newSessionParams(pkg))
	sid := res["sessionId"].(string)
	names := func(u map[string]any) []string {
		var out []string
		for _, cmd := range u["availableCommands"].([]any) {
			out = append(out, cmd.(map[string]any)["name"].(string))
		}
		return out
	}
	first := waitUpdate(c, "available_commands_update")
	if got := names(first); !slices.Equal(got, []string{"new", "save", "review"}) {
		t.Errorf("first commands %v", got)
	}
	review := first["availableCommands"].([]any)[2].(map[string]any)
	if !reflect.DeepEqual(review["input"], map[string]any{"hint": "what to review"}) {
		t.Errorf("review %v", review)
	}
	if got := names(waitUpdate(c, "available_commands_update")); !slices.Equal(got, []string{"new", "save", "review", "compact"}) {
		t.Errorf("commands after the CLI started %v", got)
	}
	res, seen := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("/save")}})
	if res["stopReason"] != "end_turn" || len(updates(seen, "agent_message_chunk")) != 1 || len(be(0).texts()) != 0 {
		t.Errorf("/save: %v, %v, sent %v", res, seen, be(0).texts())
	}
	c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("/review the tests")}})
	if got := be(0).texts(); !slices.Equal(got, []string{"/review the tests"}) {
		t.Errorf("sent %q", got)
	}
}

// TestMCPServers: the editor's MCP servers reach the backend, each
// transport in its neutral form; one without its command is -32602.
func TestMCPServers(t *testing.T) {
	c, be := startControls(t, Config{}, nil)
	p := newSessionParams(newPackage(t))
	p["mcpServers"] = []any{
		map[string]any{"name": "files", "command": "/bin/mcp", "args": []any{"-v"}, "env": []any{map[string]any{"name": "TOKEN", "value": "s"}}},
		map[string]any{"type": "http", "name": "web", "url": "https://x/mcp", "headers": []any{map[string]any{"name": "Authorization", "value": "Bearer t"}}},
		map[string]any{"type": "sse", "name": "events", "url": "https://x/sse", "headers": []any{}},
	}
	c.request("session/new", p)
	want := []backend.MCPServer{
		{Name: "files", Transport: backend.MCPStdio, Command: "/bin/mcp", Args: []string{"-v"}, Env: []backend.NameValue{{Name: "TOKEN", Value: "s"}}},
		{Name: "web", Transport: backend.MCPHTTP, URL: "https://x/mcp", Headers: []backend.NameValue{{Name: "Authorization", Value: "Bearer t"}}},
		{Name: "events", Transport: backend.MCPSSE, URL: "https://x/sse"},
	}
	if got := be(0).opts.MCPServers; !reflect.DeepEqual(got, want) {
		t.Errorf("MCPServers = %+v, want %+v", got, want)
	}
	p = newSessionParams(newPackage(t))
	p["mcpServers"] = []any{map[string]any{"name": "broken", "args": []any{}, "env": []any{}}}
	if m, _ := c.response(c.call("session/new", p)); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("a stdio server without command: %v", m)
	}
}

// TestListResumeClose: session/list gives the packages opened, newest
// first, with the title of their first message (told as
// session_info_update after the first turn); session/close ends the CLI
// and frees the lock; session/resume opens it again without replaying.
func TestListResumeClose(t *testing.T) {
	ix := sessionindex.New(t.TempDir())
	c, be := startControls(t, Config{Index: ix, DefaultBackend: "claude"}, nil)
	a, b := newPackage(t), newPackage(t)
	c.request("session/new", newSessionParams(a))
	c.request("session/new", newSessionParams(b))
	_, seen := c.request("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock("hi there")}})
	if u := updates(seen, "session_info_update"); len(u) != 1 || u[0]["title"] != "hi there" {
		t.Errorf("session_info_update %v", u)
	}
	_, seen = c.request("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock("more")}})
	if u := updates(seen, "session_info_update"); len(u) != 0 {
		t.Errorf("a second session_info_update %v", u)
	}
	res, _ := c.request("session/list", map[string]any{})
	list := res["sessions"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["sessionId"] != a || list[0].(map[string]any)["title"] != "hi there" ||
		list[0].(map[string]any)["cwd"] != filepath.Dir(a) || list[0].(map[string]any)["updatedAt"] == nil {
		t.Errorf("session/list %v", list)
	}
	// A later turn of a titled session is recorded in the background; the
	// session's close waits for it: a is the newest again after b's turn.
	c.request("session/prompt", map[string]any{"sessionId": b, "prompt": []any{textBlock("b's turn")}})
	for _, text := range []string{"a again", "and again", "and once more"} {
		c.request("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock(text)}})
	}
	c.request("session/close", map[string]any{"sessionId": a})
	res, _ = c.request("session/list", map[string]any{})
	if list := res["sessions"].([]any); len(list) != 2 || list[0].(map[string]any)["sessionId"] != a || list[0].(map[string]any)["title"] != "hi there" {
		t.Errorf("session/list after a's later turn %v", list)
	}
	c.request("session/resume", map[string]any{"sessionId": a, "cwd": filepath.Dir(a), "mcpServers": []any{}})
	res, _ = c.request("session/list", map[string]any{"cwd": filepath.Dir(b)})
	if list := res["sessions"].([]any); len(list) != 1 || list[0].(map[string]any)["sessionId"] != b {
		t.Errorf("session/list by cwd %v", list)
	}
	if m, _ := c.response(c.call("session/list", map[string]any{"cursor": "bogus"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("bad cursor: %v", m)
	}

	if res, _ := c.request("session/close", map[string]any{"sessionId": a}); len(res) != 0 {
		t.Errorf("close: %v", res)
	}
	be(0).mu.Lock()
	closed := be(0).closed
	be(0).mu.Unlock()
	if !closed {
		t.Error("the CLI of the closed session was not ended")
	}
	lock, err := pkglock.Acquire(a)
	if err != nil {
		t.Fatalf("the closed session's package is still locked: %v", err)
	}
	lock.Unlock()
	if m, _ := c.response(c.call("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock("x")}})); errCode(m) != CodeNotFound {
		t.Errorf("prompt after close: %v", m)
	}

	res, seen = c.request("session/resume", map[string]any{"sessionId": a, "cwd": filepath.Dir(a), "mcpServers": []any{}})
	if res["sessionId"] != nil || res["modes"] == nil || len(updates(seen, "user_message_chunk")) != 0 {
		t.Errorf("resume: %v, %v", res, seen)
	}
	res, _ = c.request("session/prompt", map[string]any{"sessionId": a, "prompt": []any{textBlock("again")}})
	if res["stopReason"] != "end_turn" {
		t.Errorf("prompt after resume: %v", res)
	}
}

// TestCloseDuringATurn: session/close cancels the running turn and the
// prompts queued behind it, then closes.
func TestCloseDuringATurn(t *testing.T) {
	c, be := startControls(t, Config{}, nil)
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	pid := c.call("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("slow")}})
	<-be(0).began
	queued := c.call("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("next")}})
	c.request("session/close", map[string]any{"sessionId": pkg})
	for _, id := range []float64{pid, queued} {
		if r, _ := c.response(id); r["result"].(map[string]any)["stopReason"] != "cancelled" {
			t.Errorf("prompt %v: %v", id, r)
		}
	}
	lock, err := pkglock.Acquire(pkg)
	if err != nil {
		t.Fatalf("locked after close: %v", err)
	}
	lock.Unlock()
}

// TestPromptQueued: a prompt sent while a turn runs waits for it, then
// runs and is answered.
func TestPromptQueued(t *testing.T) {
	c, be := startControls(t, Config{}, itemsCapability) // _spbridge/edited says it was queued
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	first := c.call("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("slow")}})
	<-be(0).began
	second := c.call("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("hi")}})
	c.until(func(m map[string]any) bool { return m["method"] == "_spbridge/edited" }) // queued
	be(0).finish <- struct{}{}
	for _, id := range []float64{first, second} {
		if r, _ := c.response(id); r["result"].(map[string]any)["stopReason"] != "end_turn" {
			t.Errorf("prompt %v: %v", id, r)
		}
	}
	if got := be(0).texts(); !slices.Equal(got, []string{"slow", "hi"}) {
		t.Errorf("sent %q", got)
	}
}

// TestAuthMethods: terminal log-ins only for a client with
// auth.terminal, their args run `serve --login NAME`; a prompt whose CLI
// is not logged in is -32000 naming the methods.
func TestAuthMethods(t *testing.T) {
	c, _ := startControls(t, Config{}, map[string]any{"auth": map[string]any{"terminal": true}})
	c.mu.Lock()
	init := c.all[len(c.all)-1]
	c.mu.Unlock()
	methods := init["result"].(map[string]any)["authMethods"].([]any)
	for i, be := range []string{"claude", "codex"} {
		m := methods[i].(map[string]any)
		if m["type"] != "terminal" || fmt.Sprint(m["args"]) != "[--login "+be+"]" {
			t.Errorf("method %v", m)
		}
	}
	pkg := newPackage(t)
	c.request("session/new", newSessionParams(pkg))
	m, _ := c.response(c.call("session/prompt", map[string]any{"sessionId": pkg, "prompt": []any{textBlock("loggedout")}}))
	data, _ := m["error"].(map[string]any)["data"].(map[string]any)
	if errCode(m) != CodeAuthRequired || fmt.Sprint(data["authMethods"]) != "[claude-login codex-login]" {
		t.Errorf("prompt not logged in: %v", m)
	}
}

// TestModels: the model option lists the backend's models, first as it
// knows them before its CLI starts, then as the CLI says (a
// config_option_update); the reasoning_effort option shows where the
// current model takes efforts; set_config_option on either reaches the
// backend; an effort the model does not take is -32602, and changing to a
// model without it sends the effort back to the CLI's own.
func TestModels(t *testing.T) {
	listed := []backend.Model{
		{ID: "default", Name: "Default (recommended)", Efforts: []string{"low", "high"}},
		{ID: "opus", Name: "Opus", Description: "the big one", Efforts: []string{"low", "high", "max"}},
		{ID: "haiku", Name: "Haiku"},
	}
	c, be := startListing(t, Config{}, nil, listed)
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	sid := res["sessionId"].(string)
	values := func(o map[string]any) []string {
		var out []string
		for _, v := range o["options"].([]any) {
			out = append(out, v.(map[string]any)["value"].(string))
		}
		return out
	}
	if o := option(res["configOptions"].([]any), "model"); !slices.Equal(values(o), []string{"default", "sonnet"}) || o["currentValue"] != "default" {
		t.Errorf("model option at open %v", o)
	}
	if o := option(res["configOptions"].([]any), "reasoning_effort"); o != nil {
		t.Errorf("reasoning_effort before the CLI said %v", o)
	}
	u := waitUpdate(c, "config_option_update")
	opts := u["configOptions"].([]any)
	if o := option(opts, "model"); !slices.Equal(values(o), []string{"default", "opus", "haiku"}) {
		t.Errorf("model option after the CLI started %v", o)
	}
	if o := option(opts, "reasoning_effort"); o == nil || !slices.Equal(values(o), []string{"default", "low", "high"}) ||
		o["currentValue"] != "default" || o["category"] != "thought_level" {
		t.Errorf("reasoning_effort option %v", o)
	}

	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "opus"})
	if o := option(res["configOptions"].([]any), "reasoning_effort"); o == nil || !slices.Equal(values(o), []string{"default", "low", "high", "max"}) {
		t.Errorf("reasoning_effort for opus %v", o)
	}
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "reasoning_effort", "value": "max"})
	if o := option(res["configOptions"].([]any), "reasoning_effort"); o["currentValue"] != "max" {
		t.Errorf("reasoning_effort after set %v", o)
	}
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "reasoning_effort", "value": "extreme"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown effort: %v", m)
	}
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "haiku"})
	if o := option(res["configOptions"].([]any), "reasoning_effort"); o != nil {
		t.Errorf("reasoning_effort for haiku %v", o)
	}
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "reasoning_effort", "value": "low"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("effort on a model without: %v", m)
	}
	if got := be(0).setEfforts(); !slices.Equal(got, []string{"max", ""}) {
		t.Errorf("SetEffort calls %q, want max, then the CLI's own", got)
	}
	if got := be(0).model(); got != "haiku" {
		t.Errorf("model %q", got)
	}
}

// TestSwitchCLIOption: the "cli" option lists the CLIs and switches the
// session's between turns: a backend of the other CLI's row is made, with
// its own mode, and the answer's options say so; an unknown CLI is
// -32602 and changes nothing.
func TestSwitchCLIOption(t *testing.T) {
	c, made := startControls(t, Config{}, nil)
	res, _ := c.request("session/new", newSessionParams(newPackage(t)))
	sid := res["sessionId"].(string)
	o := option(res["configOptions"].([]any), "cli")
	if o == nil || o["currentValue"] != "claude" || len(o["options"].([]any)) != 2 {
		t.Fatalf("cli option %v", res["configOptions"])
	}
	c.request("session/set_mode", map[string]any{"sessionId": sid, "modeId": "acceptEdits"})
	if m, _ := c.response(c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "cli", "value": "gemini"})); errCode(m) != jsonrpc.CodeInvalidParams {
		t.Errorf("an unknown CLI: %v", m)
	}
	res, _ = c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "cli", "value": "codex"})
	opts := res["configOptions"].([]any)
	if option(opts, "cli")["currentValue"] != "codex" || option(opts, "mode")["currentValue"] != "default" {
		t.Errorf("after the switch: %v", opts)
	}
	if b := made(1); b.opts.Mode != "" {
		t.Errorf("the new CLI's backend was made with the old mode %q", b.opts.Mode)
	}
}
