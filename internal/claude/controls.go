package claude

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
	"spbridge/internal/regfile"
)

// Claude Code's permission modes that spbridge offers.
const (
	ModeDefault     = "default"
	ModeAcceptEdits = "acceptEdits"
	ModePlan        = "plan"
	ModeBypass      = "bypassPermissions"
)

var modes = []backend.Mode{
	{ID: ModeDefault, Name: "Default", Description: "Ask before each tool that changes something"},
	{ID: ModeAcceptEdits, Name: "Accept Edits", Description: "Edit files without asking; ask for the rest"},
	{ID: ModePlan, Name: "Plan", Description: "Look around and plan; change nothing"},
	{ID: ModeBypass, Name: "Bypass Permissions", Description: "Run every tool without asking"},
}

// bypassAllowed reports whether Claude Code accepts bypassPermissions with
// the environment env: it refuses it to root unless IS_SANDBOX is exactly
// "1" (2.1.328 exits at start with "--dangerously-skip-permissions cannot be
// used with root/sudo privileges" for any other value, "yes" and "true"
// included).
func bypassAllowed(env []string) bool {
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		return true
	}
	if env == nil {
		return os.Getenv("IS_SANDBOX") == "1"
	}
	sandbox := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "IS_SANDBOX="); ok {
			sandbox = v // the last one wins, as in the process's environment
		}
	}
	return sandbox == "1"
}

// Modes lists default, acceptEdits, plan, and bypassPermissions where the
// CLI allows it (not as root, unless IS_SANDBOX=1).
func (b *Backend) Modes() []backend.Mode {
	if bypassAllowed(b.Env()) {
		return slices.Clone(modes)
	}
	return slices.Clone(modes[:3])
}

// Mode returns the current mode: the one the CLI last reported, or the one
// asked for and not yet refused.
func (b *Backend) Mode() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mode
}

// SetMode switches Claude Code's permission mode. Without a running CLI it
// is kept for the next process (--permission-mode). A running CLI is told
// through its control protocol (set_permission_mode): between turns SetMode
// waits for its answer (which the reader of claude's lines hands it) (its refusal is ErrModeRefused, and the mode stays);
// during a turn it returns at once, and a refusal shows as a notice of that
// turn and Events.ModeChanged tells the mode that stays.
func (b *Backend) SetMode(ctx context.Context, id string) error {
	if !slices.ContainsFunc(b.Modes(), func(m backend.Mode) bool { return m.ID == id }) {
		return fmt.Errorf("%w: %q", backend.ErrUnknownMode, id)
	}
	b.starting.Lock()
	b.mu.Lock()
	if b.mode == id {
		b.mu.Unlock()
		b.starting.Unlock()
		return nil
	}
	b.mode = id
	b.modeSeq++
	reqID := "spbridge-mode-" + strconv.Itoa(b.modeSeq)
	b.mu.Unlock()
	p := b.Proc()
	b.starting.Unlock()
	if p == nil {
		return nil // the next process starts in it (--permission-mode)
	}
	ch := b.wait(reqID)
	sent := post(p, map[string]any{"type": "control_request", "request_id": reqID,
		"request": map[string]any{"subtype": "set_permission_mode", "mode": id}})
	if b.inTurn.Load() {
		b.unwait(reqID)
		return nil // the turn reads the answer
	}
	if err := <-sent; err != nil {
		b.unwait(reqID)
		return fmt.Errorf("set mode: %w", err)
	}
	resp, err := b.await(ctx, p, reqID, ch)
	if err != nil {
		return err
	}
	if resp.Get("subtype").String() == "error" {
		return fmt.Errorf("%w: %s", backend.ErrModeRefused, resp.Get("error").String())
	}
	return nil
}

// Commands lists Claude Code's slash commands: once the CLI started, the
// ones it said it has (built-ins that make sense without its terminal,
// skills, project and user commands); before, the project's
// .claude/commands in the working folder.
func (b *Backend) Commands() []backend.Command {
	b.mu.Lock()
	cmds := b.commands
	b.mu.Unlock()
	if cmds != nil {
		return slices.Clone(cmds)
	}
	return b.projectCommands(b.Opts.Dir)
}

// ListsModels reports that claude lists its models as it starts (in its
// initialize answer).
func (b *Backend) ListsModels() bool { return true }

// Prepare starts claude ahead of the first turn and waits for the answer
// to its initialize request (which lists the commands), or for ctx. It
// does nothing when claude runs.
func (b *Backend) Prepare(ctx context.Context) error {
	if !b.lines.TryLock() {
		return nil // a turn runs
	}
	release := b.Hold()
	if b.Proc() != nil {
		release()
		b.lines.Unlock()
		return nil
	}
	ch := b.wait(initRequestID)
	p, err := b.start()
	// The between-turn reader reads the answer, and what comes with it.
	release()
	b.lines.Unlock()
	if err != nil {
		b.unwait(initRequestID)
		return err
	}
	_, err = b.await(ctx, p, initRequestID, ch)
	return err
}

// controlResponse returns the response of a control_response line.
func controlResponse(line []byte) (gjson.Result, bool) {
	if !isType(line, "control_response") {
		return gjson.Result{}, false
	}
	return gjson.GetBytes(line, "response"), true
}

// isType reports whether the type of a line of claude's, its top-level
// "type", is typ. Claude writes "type" first, so its value is read from
// the line's first bytes, without parsing; only a line that begins
// otherwise, or whose type has an escape, goes through gjson.
func isType(line []byte, typ string) bool {
	const key = `{"type":"`
	if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return string(rest[:end]) == typ
		}
	}
	return gjson.GetBytes(line, "type").String() == typ
}

// initRequestID names the initialize request start sends.
const initRequestID = "spbridge-init"

// observe reads what a line of claude says besides items: the mode it is
// in (system/status permissionMode), the commands it has (the initialize
// answer, else the init line's slash_commands), a mode it refused, and,
// when h is set, a notice for each MCP server that did not start, and the
// steps of a compaction (compactionLine).
func (b *Backend) observe(line []byte, h backend.Host) {
	if resp, ok := controlResponse(line); ok {
		id := resp.Get("request_id").String()
		if id == initRequestID {
			b.mcpConfigRead()
		}
		switch {
		case id == initRequestID && resp.Get("subtype").String() == "success":
			if mode := resp.Get("response.current_permission_mode").String(); mode != "" {
				b.confirmMode(mode)
			}
			b.setCommands(parseCommands(resp.Get("response.commands")), true)
			if list := resp.Get("response.models"); list.IsArray() {
				b.setModels(parseModels(list))
			}
		case strings.HasPrefix(id, "spbridge-mode-") && resp.Get("subtype").String() == "error":
			b.mu.Lock()
			refused := b.mode
			b.mode = b.cliMode
			b.mu.Unlock()
			if h != nil {
				backend.Notice(b.Opts.NewID, h, fmt.Sprintf("Claude Code did not switch to %s: %s", refused, resp.Get("error").String()))
			}
			b.fireMode()
		}
		return
	}
	b.compactionLine(line, h)
	b.noteUUID(line)
	if !isType(line, "system") {
		return
	}
	// The subtype alone for the many lines that say nothing of this (a
	// status, thinking tokens): the line is parsed only when it does.
	switch gjson.GetBytes(line, "subtype").String() {
	case "background_tasks_changed":
		b.backgroundTasks(line)
	case "status":
		if mode := gjson.GetBytes(line, "permissionMode").String(); mode != "" {
			b.confirmMode(mode)
		}
	case "init":
		v := gjson.ParseBytes(line)
		if mode := v.Get("permissionMode").String(); mode != "" {
			b.confirmMode(mode)
		}
		var names []backend.Command
		for _, n := range v.Get("slash_commands").Array() {
			names = append(names, backend.Command{Name: n.String()})
		}
		b.setCommands(names, false)
		if h == nil {
			return
		}
		for _, s := range v.Get("mcp_servers").Array() {
			name, status := s.Get("name").String(), s.Get("status").String()
			if status == "connected" || status == "pending" || b.mcpSaid[name+"\x00"+status] {
				continue
			}
			b.mcpSaid[name+"\x00"+status] = true
			backend.Notice(b.Opts.NewID, h, mcpNotice(name, status))
		}
	}
}

// mcpNotice says that an MCP server is not there for the turn.
func mcpNotice(name, status string) string {
	if status == "failed" {
		return fmt.Sprintf("The MCP server %q did not start; the turn goes on without it.", name)
	}
	return fmt.Sprintf("The MCP server %q is not available (%s); the turn goes on without it.", name, status)
}

// confirmMode records the mode the CLI reports it is in.
func (b *Backend) confirmMode(mode string) {
	b.mu.Lock()
	b.cliMode = mode
	b.mode = mode
	b.mu.Unlock()
	b.fireMode()
}

// fireMode tells Events.ModeChanged the current mode when it is not the
// one last told.
func (b *Backend) fireMode() {
	b.mu.Lock()
	mode := b.mode
	changed := mode != b.toldMode
	b.toldMode = mode
	b.mu.Unlock()
	if changed && b.Opts.Events.ModeChanged != nil {
		b.Opts.Events.ModeChanged(mode)
	}
}

// aliases are the models offered before the CLI said which it has: the
// aliases --model takes.
var aliases = []backend.Model{
	{ID: "default", Name: "Default (the CLI's own choice)"},
	{ID: "sonnet", Name: "Sonnet"},
	{ID: "opus", Name: "Opus"},
	{ID: "haiku", Name: "Haiku"},
}

// Models lists Claude Code's models: once the CLI started, those its
// initialize answer offers (with their effort levels); before, the
// aliases default, sonnet, opus and haiku, without efforts.
func (b *Backend) Models() []backend.Model {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.models != nil {
		return slices.Clone(b.models)
	}
	return slices.Clone(aliases)
}

// Effort returns the effort level chosen, "" for the CLI's own.
func (b *Backend) Effort() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.effort
}

// SetEffort chooses the effort level of the next turns: a running claude
// is told through its control protocol (apply_flag_settings effortLevel,
// which lasts for the process and is written to no settings file), a
// later one gets --effort. A level the CLI refuses shows in its log only:
// the answer is not waited for, as with SetModel.
func (b *Backend) SetEffort(effort string) {
	b.starting.Lock()
	b.mu.Lock()
	b.effort = effort
	b.mu.Unlock()
	p := b.Proc()
	b.starting.Unlock()
	if p != nil {
		var level any = effort
		if effort == "" {
			level = nil // back to the CLI's own
		}
		post(p, map[string]any{"type": "control_request", "request_id": "spbridge-effort",
			"request": map[string]any{"subtype": "apply_flag_settings", "settings": map[string]any{"effortLevel": level}}})
	}
}

// parseModels reads the initialize answer's models: value, displayName,
// description and, where supportsEffort, supportedEffortLevels.
func parseModels(list gjson.Result) []backend.Model {
	models := []backend.Model{}
	for _, m := range list.Array() {
		id := m.Get("value").String()
		if id == "" {
			continue
		}
		md := backend.Model{ID: id, Name: m.Get("displayName").String(), Description: m.Get("description").String()}
		if md.Name == "" {
			md.Name = id
		}
		if m.Get("supportsEffort").Bool() {
			for _, e := range m.Get("supportedEffortLevels").Array() {
				md.Efforts = append(md.Efforts, e.String())
			}
		}
		models = append(models, md)
	}
	return models
}

// setModels records the CLI's models and tells Events.ModelsChanged when
// they changed.
func (b *Backend) setModels(models []backend.Model) {
	b.mu.Lock()
	changed := b.models == nil || !backend.EqualModels(models, b.models)
	b.models = models
	b.mu.Unlock()
	if changed && b.Opts.Events.ModelsChanged != nil {
		b.Opts.Events.ModelsChanged(slices.Clone(models))
	}
}

// hidden are Claude Code's commands that need its terminal, or that
// spbridge does otherwise (the model, a new conversation).
var hidden = map[string]bool{
	"clear": true, "color": true, "config": true, "context": true, "cost": true, "exit": true,
	"focus": true, "heapdump": true, "login": true, "logout": true, "model": true,
	"release-notes": true, "todos": true, "usage": true, "output-style": true,
}

// parseCommands reads the initialize answer's commands.
func parseCommands(list gjson.Result) []backend.Command {
	cmds := []backend.Command{}
	for _, c := range list.Array() {
		name := c.Get("name").String()
		if name == "" || hidden[name] || strings.HasPrefix(name, "__") {
			continue
		}
		cmds = append(cmds, backend.Command{Name: name, Description: c.Get("description").String(), InputHint: c.Get("argumentHint").String()})
	}
	return cmds
}

// setCommands records the CLI's commands: full, from the initialize answer,
// replaces them; names only (the init line) are added to what is known,
// with the descriptions of the project's own commands, read from disk with
// no lock held and published under b.mu (unless the full list came
// meanwhile).
func (b *Backend) setCommands(cmds []backend.Command, full bool) {
	var project []backend.Command
	if !full {
		b.mu.Lock()
		known := b.commands != nil
		b.mu.Unlock()
		if known {
			return
		}
		project = b.projectCommands(b.Opts.Dir)
	}
	b.mu.Lock()
	var next []backend.Command
	switch {
	case full:
		next = cmds
	case b.commands == nil:
		for _, c := range cmds {
			if hidden[c.Name] {
				continue
			}
			if i := slices.IndexFunc(project, func(p backend.Command) bool { return p.Name == c.Name }); i >= 0 {
				c = project[i]
			}
			next = append(next, c)
		}
		if next == nil {
			next = []backend.Command{}
		}
	default:
		b.mu.Unlock()
		return
	}
	changed := !slices.Equal(next, b.commands)
	b.commands = next
	b.mu.Unlock()
	if changed && b.Opts.Events.CommandsChanged != nil {
		b.Opts.Events.CommandsChanged(slices.Clone(next))
	}
}

// ProjectCommands lists the project commands of the working folder dir:
// .claude/commands/**/*.md, each named by its file name without .md, with
// the description and argument-hint of its front matter (else its first
// line as the description), sorted by name.
func ProjectCommands(dir string) []backend.Command {
	root := filepath.Join(dir, ".claude", "commands")
	cmds := []backend.Command{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		data, err := regfile.ReadFile(path)
		if err != nil {
			return nil
		}
		c := commandFile(data)
		c.Name = strings.TrimSuffix(d.Name(), ".md")
		cmds = append(cmds, c)
		return nil
	})
	slices.SortFunc(cmds, func(a, b backend.Command) int { return strings.Compare(a.Name, b.Name) })
	return cmds
}

// commandFile reads a command file's description and argument hint.
func commandFile(data []byte) backend.Command {
	var c backend.Command
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	inFront := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if first && line == "---" {
			first, inFront = false, true
			continue
		}
		first = false
		if inFront {
			if line == "---" {
				inFront = false
				continue
			}
			key, value, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			value = unquote(strings.TrimSpace(value))
			switch strings.TrimSpace(key) {
			case "description":
				c.Description = value
			case "argument-hint":
				c.InputHint = value
			}
			continue
		}
		if c.Description == "" && line != "" {
			c.Description = line
		}
		if c.Description != "" {
			break
		}
	}
	return c
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		if s[0] == '"' {
			if u, err := strconv.Unquote(s); err == nil {
				return u
			}
		}
		return s[1 : len(s)-1]
	}
	return s
}
