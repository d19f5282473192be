package codex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// Codex's modes, as codex-acp presents its approval presets.
const (
	ModeReadOnly   = "read-only"
	ModeAuto       = "auto"
	ModeFullAccess = "full-access"
)

var modes = []backend.Mode{
	{ID: ModeReadOnly, Name: "Read Only", Description: "Read files; ask before any change or network use"},
	{ID: ModeAuto, Name: "Auto", Description: "Read and edit in the working folder and run commands there; ask for more"},
	{ID: ModeFullAccess, Name: "Full Access", Description: "Edit anywhere and use the network without asking"},
}

// preset is what a mode sets: codex's sandbox mode, its sandbox policy as
// the app-server's turn/start takes it, and its approval policy.
type preset struct {
	sandbox  string
	policy   string
	approval string
}

var presets = map[string]preset{
	ModeReadOnly:   {"read-only", "readOnly", "on-request"},
	ModeAuto:       {"workspace-write", "workspaceWrite", "on-request"},
	ModeFullAccess: {"danger-full-access", "dangerFullAccess", "never"},
}

// modeOf is the mode of a sandbox mode.
func modeOf(sandbox string) string {
	for id, p := range presets {
		if p.sandbox == sandbox {
			return id
		}
	}
	return ModeAuto
}

// Modes lists read-only, auto and full-access.
func (b *Backend) Modes() []backend.Mode { return slices.Clone(modes) }

// Mode returns the current mode.
func (b *Backend) Mode() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mode
}

// SetMode chooses the mode of the next turns: app-server's turn/start
// gets its sandbox and approval policies, codex exec its sandbox mode. A
// running turn keeps the mode it started with. Events.ModeChanged hears the
// change.
func (b *Backend) SetMode(ctx context.Context, id string) error {
	if _, ok := presets[id]; !ok {
		return fmt.Errorf("%w: %q", backend.ErrUnknownMode, id)
	}
	b.mu.Lock()
	changed := b.mode != id
	b.mode = id
	b.mu.Unlock()
	if changed && b.Opts.Events.ModeChanged != nil {
		b.Opts.Events.ModeChanged(id)
	}
	return nil
}

// preset returns the current mode's preset.
func (b *Backend) preset() preset { return presets[b.Mode()] }

// Models lists the models codex offers: once the app-server started (the
// first turn), those of its model/list, after a "default" entry (codex's
// own choice, with its default model's efforts); before, and with codex
// exec, which has no list, only "default".
func (b *Backend) Models() []backend.Model {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.models != nil {
		return slices.Clone(b.models)
	}
	return []backend.Model{{ID: "default", Name: "Default (the CLI's own choice)"}}
}

// Effort returns the reasoning effort chosen, "" for codex's own.
func (b *Backend) Effort() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.effort
}

// SetEffort chooses the reasoning effort of the next turns: the
// app-server's turn/start gets it as effort, codex exec as
// -c model_reasoning_effort. A running turn keeps its own.
func (b *Backend) SetEffort(effort string) {
	b.mu.Lock()
	b.effort = effort
	b.mu.Unlock()
}

// turnEffort is the effort the next turn/start carries, "" for none: the
// one chosen when the thread does not have it yet; back to "" after
// another, the default effort of the model the thread runs on (turn/start's
// effort lasts for the turns after it). The caller holds b.mu.
func (b *Backend) turnEffort() string {
	effort := b.effort
	if effort == b.sentEffort {
		return ""
	}
	b.sentEffort = effort
	if effort != "" {
		return effort
	}
	model := b.model
	if model == "" {
		model = b.Model()
	}
	for _, m := range b.models {
		if m.ID == model || model == "" && m.ID == "default" {
			return m.DefaultEffort
		}
	}
	return ""
}

// listModels asks the app-server for its models (model/list, every page,
// hidden ones left out) and tells Events.ModelsChanged. A codex without
// model/list keeps the static list; only an interrupt is an error.
func (b *Backend) listModels(ctx context.Context, h backend.Host, interruptCh <-chan struct{}) error {
	var all []gjson.Result
	cursor := ""
	for range 20 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := b.appCall(ctx, h, interruptCh, "model/list", params)
		if err != nil {
			if errors.Is(err, errInterrupted) {
				return err
			}
			return nil
		}
		all = append(all, res.Get("data").Array()...)
		if cursor = res.Get("nextCursor").String(); cursor == "" {
			break
		}
	}
	models := parseModels(all)
	b.mu.Lock()
	changed := b.models == nil || !backend.EqualModels(models, b.models)
	b.models = models
	b.mu.Unlock()
	if changed && b.Opts.Events.ModelsChanged != nil {
		b.Opts.Events.ModelsChanged(slices.Clone(models))
	}
	return nil
}

// parseModels reads model/list's entries: "default" first (codex's own
// choice, named after its isDefault model), then each model that is not
// hidden, by its model name (what turn/start's model takes).
func parseModels(list []gjson.Result) []backend.Model {
	def := backend.Model{ID: "default", Name: "Default (the CLI's own choice)"}
	models := []backend.Model{def}
	for _, m := range list {
		id := m.Get("model").String()
		if id == "" {
			id = m.Get("id").String()
		}
		if id == "" || id == "default" {
			continue
		}
		md := backend.Model{ID: id, Name: m.Get("displayName").String(), Description: m.Get("description").String(),
			DefaultEffort: m.Get("defaultReasoningEffort").String()}
		if md.Name == "" {
			md.Name = id
		}
		for _, e := range m.Get("supportedReasoningEfforts").Array() {
			if v := e.Get("reasoningEffort").String(); v != "" {
				md.Efforts = append(md.Efforts, v)
			}
		}
		md.Switches = modelSwitches(m)
		if m.Get("isDefault").Bool() {
			models[0].Name = "Default (" + md.Name + ")"
			models[0].Efforts, models[0].DefaultEffort = md.Efforts, md.DefaultEffort
			models[0].Switches = md.Switches
		}
		if m.Get("hidden").Bool() {
			continue
		}
		models = append(models, md)
	}
	return models
}

// SwitchFast is the on/off setting of codex's fast service tier (its
// /fast): the model's serviceTiers entry "priority", which turn/start's
// serviceTierForTurn takes.
const (
	SwitchFast = "fast"
	fastTier   = "priority"
)

// modelSwitches are the on/off settings a model/list entry takes: fast,
// when it has the fast tier (named and described as codex says it), on
// when it is the model's default tier.
func modelSwitches(m gjson.Result) []backend.Switch {
	for _, t := range m.Get("serviceTiers").Array() {
		if t.Get("id").String() != fastTier {
			continue
		}
		name := t.Get("name").String()
		if name == "" {
			name = "Fast"
		}
		return []backend.Switch{{ID: SwitchFast, Name: name, Description: t.Get("description").String(),
			Default: m.Get("defaultServiceTier").String() == fastTier}}
	}
	return nil
}

// SetSwitch turns codex's fast service tier on or off for the next
// turns on the app-server (turn/start's serviceTierForTurn: "priority",
// or "default" for standard speed); codex exec, which lists no models,
// offers it on none.
func (b *Backend) SetSwitch(id string, on bool) {
	if id != SwitchFast {
		return
	}
	b.mu.Lock()
	b.fast = &on
	b.mu.Unlock()
}

// Codex's own commands that spbridge runs on the app-server: a prompt
// that starts with "/review" or "/compact" (commandOf).
const (
	CommandReview  = "review"
	CommandCompact = "compact"
)

var commands = []backend.Command{
	{Name: CommandReview, Description: "Have Codex review the uncommitted changes in the working folder, or what you name",
		InputHint: "what to look at (empty: the uncommitted changes; --base BRANCH; --commit SHA)"},
	{Name: CommandCompact, Description: "Have Codex summarize the conversation so far, to free its context"},
}

// Commands lists /review and /compact, which the app-server runs
// (review/start, thread/compact/start); with codex exec only /review (codex
// exec review), as exec cannot compact. Codex's other commands are
// operations of its terminal.
func (b *Backend) Commands() []backend.Command {
	if b.transport == TransportExec {
		return slices.DeleteFunc(slices.Clone(commands), func(c backend.Command) bool { return c.Name == CommandCompact })
	}
	return slices.Clone(commands)
}

// commandOf reads a prompt that runs one of Codex's commands: its name
// and what follows it. text is the user's words (backend.Message.Text),
// never the Context told before them.
func commandOf(text string) (name, arg string, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return "", "", false
	}
	name, arg = t[1:], ""
	if i := strings.IndexAny(name, " \t\n"); i >= 0 {
		name, arg = name[:i], strings.TrimSpace(name[i+1:])
	}
	switch name {
	case CommandReview:
		return name, arg, true
	case CommandCompact:
		if arg == "" {
			return name, "", true
		}
	}
	return "", "", false
}

// reviewTarget is review/start's target for /review's argument: the
// uncommitted changes when there is none, a base branch (--base BRANCH),
// a commit (--commit SHA), else the argument as the review's instructions.
func reviewTarget(arg string) map[string]any {
	if arg == "" {
		return map[string]any{"type": "uncommittedChanges"}
	}
	if f := strings.Fields(arg); len(f) == 2 {
		switch f[0] {
		case "--base":
			return map[string]any{"type": "baseBranch", "branch": f[1]}
		case "--commit":
			return map[string]any{"type": "commit", "sha": f[1]}
		}
	}
	return map[string]any{"type": "custom", "instructions": arg}
}

// ListsModels reports whether the CLI lists its models as it starts: the
// app-server does, and for codex exec Prepare starts one for the list.
func (b *Backend) ListsModels() bool { return true }

// Prepare starts the app-server ahead of the first turn and asks it for
// its models (model/list; Events.ModelsChanged hears them), so that the
// editor can choose one before it sends a prompt; the thread starts with
// the first turn. codex exec lists no models: with it, an app-server is
// started for the list alone and ends once it gave it. It does nothing
// while a turn runs and once the server runs. A server that cannot start
// is an error here, and the first turn tries again.
func (b *Backend) Prepare(ctx context.Context) error {
	if !b.run.TryLock() {
		return nil
	}
	defer b.run.Unlock()
	if b.app.proc != nil {
		return nil
	}
	if _, err := b.Program(); err != nil {
		return err
	}
	if err := b.appLaunch(ctx, discard{}, ctx.Done()); err != nil {
		b.appReap()
		return err
	}
	if b.transport != TransportAppServer {
		b.appReap() // exec's turns run without it
	}
	return nil
}

// discard is the host of what an app-server says outside a turn: nothing
// of the conversation, and no request (it has no thread).
type discard struct{}

func (discard) Change(itemmap.Change) {}

func (discard) Approve(context.Context, itemmap.Approval) backend.Decision { return backend.Decision{} }

// mcpName makes an MCP server's name a bare key of codex's configuration:
// what is not a letter, digit, '-' or '_' becomes '_'.
func mcpName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, name)
}

// mcpConfig is the MCP servers as the app-server's thread/start takes them
// in its config: {"mcp_servers": {name: {command, args, env} | {url,
// http_headers}}}. SSE servers are left out (codex speaks stdio and
// streamable HTTP) and returned by name.
func mcpConfig(servers []backend.MCPServer) (map[string]any, []string) {
	all := map[string]any{}
	var skipped []string
	for _, s := range servers {
		switch s.Transport {
		case backend.MCPStdio:
			args := s.Args
			if args == nil {
				args = []string{}
			}
			all[mcpName(s.Name)] = map[string]any{"command": s.Command, "args": args, "env": backend.NameValueMap(s.Env)}
		case backend.MCPHTTP:
			all[mcpName(s.Name)] = map[string]any{"url": s.URL, "http_headers": backend.NameValueMap(s.Headers)}
		default:
			skipped = append(skipped, s.Name)
		}
	}
	if len(all) == 0 {
		return nil, skipped
	}
	return map[string]any{"mcp_servers": all}, skipped
}

// mcpExecArgs are the -c overrides that give codex exec the MCP servers,
// and the environment variables they need. No secret goes on argv: a stdio
// server's env values are set in codex's environment and named by
// env_vars (codex passes them through by name), an HTTP server's header
// values are set as SPBRIDGE_MCP_<i>_<j> and named by env_http_headers.
// So a stdio server's variables are in codex's own environment too.
func mcpExecArgs(servers []backend.MCPServer) (args, env []string, skipped []string) {
	for i, s := range servers {
		key := "mcp_servers." + mcpName(s.Name) + "."
		switch s.Transport {
		case backend.MCPStdio:
			args = append(args, "-c", key+"command="+strconv.Quote(s.Command), "-c", key+"args="+tomlList(s.Args))
			if len(s.Env) > 0 {
				var names []string
				for _, nv := range s.Env {
					names = append(names, nv.Name)
					env = append(env, nv.Name+"="+nv.Value)
				}
				args = append(args, "-c", key+"env_vars="+tomlList(names))
			}
		case backend.MCPHTTP:
			args = append(args, "-c", key+"url="+strconv.Quote(s.URL))
			if len(s.Headers) > 0 {
				var pairs []string
				for j, h := range s.Headers {
					v := fmt.Sprintf("SPBRIDGE_MCP_%d_%d", i, j)
					pairs = append(pairs, strconv.Quote(h.Name)+"="+strconv.Quote(v))
					env = append(env, v+"="+h.Value)
				}
				args = append(args, "-c", key+"env_http_headers={"+strings.Join(pairs, ",")+"}")
			}
		default:
			skipped = append(skipped, s.Name)
		}
	}
	return args, env, skipped
}

// execMCPArgs are codex exec's overrides for the editor's MCP servers
// (mcpExecArgs). codex exec has no one to ask before an MCP tool runs, and
// refuses every call it would ask about: outside read-only mode the
// servers' tools are approved (default_tools_approval_mode "approve"), as
// the editor chose the servers; in read-only mode they stay refused.
func (b *Backend) execMCPArgs() []string {
	args, _, _ := mcpExecArgs(b.Opts.MCPServers)
	if b.Mode() == ModeReadOnly {
		return args
	}
	for _, s := range b.Opts.MCPServers {
		if s.Transport == backend.MCPStdio || s.Transport == backend.MCPHTTP {
			args = append(args, "-c", "mcp_servers."+mcpName(s.Name)+`.default_tools_approval_mode="approve"`)
		}
	}
	return args
}

// tomlList is a list of strings as a TOML array.
func tomlList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// mcpSkippedNotice tells, once an open, of the servers codex cannot take.
func (b *Backend) mcpSkippedNotice(h backend.Host, skipped []string) {
	if len(skipped) == 0 || b.sseSaid {
		return
	}
	b.sseSaid = true
	backend.Notice(b.Opts.NewID, h, fmt.Sprintf("Codex does not speak SSE to MCP servers; left out: %s.", strings.Join(skipped, ", ")))
}

// observeApp turns an app-server line saying that an MCP server did not
// start into a notice.
func (b *Backend) observeApp(line []byte, h backend.Host) {
	if !bytes.Contains(line, []byte(`"mcpServer/startupStatus/updated"`)) {
		return
	}
	v := gjson.ParseBytes(line)
	if v.Get("method").String() != "mcpServer/startupStatus/updated" || v.Get("params.status").String() != "failed" {
		return
	}
	name := v.Get("params.name").String()
	text := fmt.Sprintf("The MCP server %q did not start; the turn goes on without it.", name)
	if e := v.Get("params.error").String(); e != "" {
		text = fmt.Sprintf("The MCP server %q did not start (%s); the turn goes on without it.", name, e)
	}
	backend.Notice(b.Opts.NewID, h, text)
}
