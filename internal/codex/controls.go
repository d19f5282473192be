package codex

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/backend"
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

// Commands lists none yet: codex's own (/review, /compact, /init) are
// operations of its terminal and app-server, not prompt text it expands; a
// prompt that starts with one reaches codex as plain text.
func (b *Backend) Commands() []backend.Command { return []backend.Command{} }

// Prepare does nothing: codex starts with the first turn.
func (b *Backend) Prepare(ctx context.Context) error { return nil }

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
			all[mcpName(s.Name)] = map[string]any{"command": s.Command, "args": args, "env": nameValues(s.Env)}
		case backend.MCPHTTP:
			all[mcpName(s.Name)] = map[string]any{"url": s.URL, "http_headers": nameValues(s.Headers)}
		default:
			skipped = append(skipped, s.Name)
		}
	}
	if len(all) == 0 {
		return nil, skipped
	}
	return map[string]any{"mcp_servers": all}, skipped
}

func nameValues(list []backend.NameValue) map[string]string {
	m := make(map[string]string, len(list))
	for _, nv := range list {
		m[nv.Name] = nv.Value
	}
	return m
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
