package claude

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/regfile"
	"spbridge/internal/trust"
)

// This file holds what trust weighs of Claude Code (Plugin.Trust): its
// own record of the folders it trusts, and what in a folder it would
// apply.

// configDir is Claude Code's configuration folder, as env (spbridge's own
// environment when nil) says: $CLAUDE_CONFIG_DIR, else ~/.claude; ""
// when neither can be told.
func configDir(env []string) string {
	if d := trust.Getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	if home := trust.Home(env); home != "" {
		return filepath.Join(home, ".claude")
	}
	return ""
}

// configFile is the file where Claude Code 2.1.328 keeps its global
// configuration, with its per-folder records (projects) and the user's MCP
// servers: .config.json in its configuration folder when that exists (an
// older layout it still reads first), else .claude.json in
// $CLAUDE_CONFIG_DIR, else ~/.claude.json.
func configFile(env []string) string {
	if legacy := filepath.Join(configDir(env), ".config.json"); isFile(legacy) {
		return legacy
	}
	if d := trust.Getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, ".claude.json")
	}
	return filepath.Join(trust.Home(env), ".claude.json")
}

// Config is what spbridge reads of Claude Code's global
// configuration: the user's MCP servers (user scope), and by folder its
// trust record and MCP servers (local scope).
type Config struct {
	MCPServers map[string]json.RawMessage
	Projects   map[string]Project
}

// Project is Claude Code's record of one folder.
type Project struct {
	HasTrustDialogAccepted bool
	MCPServers             map[string]json.RawMessage
}

// ReadConfig reads Claude Code's global configuration (empty when it
// has none or it cannot be read). The file holds much else (each folder's
// prompt history, say) and grows to megabytes: only these fields are
// read out of it.
func ReadConfig(env []string) Config {
	c := Config{MCPServers: map[string]json.RawMessage{}, Projects: map[string]Project{}}
	f, err := regfile.Open(configFile(env))
	if err != nil {
		return c
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, trust.MaxConfig))
	if err != nil || !gjson.ValidBytes(data) {
		return c
	}
	servers := func(v gjson.Result) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		v.ForEach(func(name, s gjson.Result) bool {
			if s.IsObject() {
				m[name.String()] = json.RawMessage(s.Raw)
			}
			return true
		})
		return m
	}
	root := gjson.ParseBytes(data)
	c.MCPServers = servers(root.Get("mcpServers"))
	root.Get("projects").ForEach(func(dir, p gjson.Result) bool {
		c.Projects[dir.String()] = Project{HasTrustDialogAccepted: p.Get("hasTrustDialogAccepted").Type == gjson.True,
			MCPServers: servers(p.Get("mcpServers"))}
		return true
	})
	return c
}

// trustedFolders is every folder Claude Code's own record trusts (its trust
// dialog accepted there).
func trustedFolders(env []string) []string {
	var dirs []string
	for dir, p := range ReadConfig(env).Projects {
		if p.HasTrustDialogAccepted {
			dirs = append(dirs, filepath.Clean(dir))
		}
	}
	return dirs
}

// folderFiles returns what in dir would act, or steer the model, when
// Claude Code 2.1.328 runs there with the folder's own configuration (its
// project and local setting sources), as checked on it: in dir itself its
// project and local settings (.claude/settings.json,
// .claude/settings.local.json), its commands, skills, agents and output
// styles (.claude/commands, skills, agents, output-styles); in dir and
// every folder above it the instructions (CLAUDE.md, CLAUDE.local.md,
// .claude/CLAUDE.md) and the MCP servers of a .mcp.json. What is the
// user's own (under Claude Code's configuration folder, when dir is the
// home folder or below it) is not the folder's.
func folderFiles(dir string, env []string) []string {
	var out []string
	user := configDir(env)
	add := func(p string, dirOK bool) {
		if p == user || strings.HasPrefix(p, user+string(filepath.Separator)) {
			return
		}
		if fi, err := os.Stat(p); err == nil && (!fi.IsDir() || dirOK && trust.NonEmptyDir(p)) {
			out = append(out, p)
		}
	}
	for _, name := range []string{"settings.json", "settings.local.json"} {
		add(filepath.Join(dir, ".claude", name), false)
	}
	for _, name := range []string{"commands", "skills", "agents", "output-styles"} {
		add(filepath.Join(dir, ".claude", name), true)
	}
	for d := dir; ; {
		for _, name := range []string{"CLAUDE.md", "CLAUDE.local.md", filepath.Join(".claude", "CLAUDE.md"), ".mcp.json"} {
			add(filepath.Join(d, name), false)
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return out
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// trustRecord is Claude Code's own record of the folders it trusts: its
// global configuration's file, and the folders whose trust dialog was
// accepted.
func trustRecord(env []string) (string, []string) { return configFile(env), trustedFolders(env) }
