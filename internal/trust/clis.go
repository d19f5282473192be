package trust

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/regfile"
)

// maxCLIConfig bounds what is read of a CLI's own configuration file.
const maxCLIConfig = 64 << 20

// getenv is the value of name in env (nil: spbridge's own environment).
func getenv(env []string, name string) string {
	if env == nil {
		return os.Getenv(name)
	}
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// home is the user's home folder as env says.
func home(env []string) string {
	if h := getenv(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// claudeConfigDir is Claude Code's configuration folder: $CLAUDE_CONFIG_DIR,
// else ~/.claude.
func claudeConfigDir(env []string) string {
	if d := getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(home(env), ".claude")
}

// ClaudeConfigFile is the file where Claude Code 2.1.328 keeps its global
// configuration, with its per-folder records (projects) and the user's MCP
// servers: .config.json in its configuration folder when that exists (an
// older layout it still reads first), else .claude.json in
// $CLAUDE_CONFIG_DIR, else ~/.claude.json.
func ClaudeConfigFile(env []string) string { return claudeConfigFile(env) }

func claudeConfigFile(env []string) string {
	if legacy := filepath.Join(claudeConfigDir(env), ".config.json"); isFile(legacy) {
		return legacy
	}
	if d := getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, ".claude.json")
	}
	return filepath.Join(home(env), ".claude.json")
}

// ClaudeConfig is what spbridge reads of Claude Code's global
// configuration: the user's MCP servers (user scope), and by folder its
// trust record and MCP servers (local scope).
type ClaudeConfig struct {
	MCPServers map[string]json.RawMessage
	Projects   map[string]ClaudeProject
}

// ClaudeProject is Claude Code's record of one folder.
type ClaudeProject struct {
	HasTrustDialogAccepted bool
	MCPServers             map[string]json.RawMessage
}

// ReadClaudeConfig reads Claude Code's global configuration (empty when it
// has none or it cannot be read). The file holds much else (each folder's
// prompt history, say) and grows to megabytes: only these fields are
// read out of it.
func ReadClaudeConfig(env []string) ClaudeConfig {
	c := ClaudeConfig{MCPServers: map[string]json.RawMessage{}, Projects: map[string]ClaudeProject{}}
	f, err := regfile.Open(claudeConfigFile(env))
	if err != nil {
		return c
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCLIConfig))
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
		c.Projects[dir.String()] = ClaudeProject{HasTrustDialogAccepted: p.Get("hasTrustDialogAccepted").Type == gjson.True,
			MCPServers: servers(p.Get("mcpServers"))}
		return true
	})
	return c
}

// claudeTrusted is every folder Claude Code's own record trusts (its trust
// dialog accepted there).
func claudeTrusted(env []string) []string {
	var dirs []string
	for dir, p := range ReadClaudeConfig(env).Projects {
		if p.HasTrustDialogAccepted {
			dirs = append(dirs, filepath.Clean(dir))
		}
	}
	return dirs
}

// claudeTrusts reports whether Claude Code's own record trusts dir: its
// trust dialog was accepted in dir or in a folder above it, as Claude Code
// itself reads its record; it returns the record's file.
func claudeTrusts(dir string, env []string) (string, bool) {
	return claudeConfigFile(env), covered(dir, claudeTrusted(env))
}

// codexConfigFile is Codex's config.toml: in $CODEX_HOME, else ~/.codex.
func codexConfigFile(env []string) string {
	if d := getenv(env, "CODEX_HOME"); d != "" {
		return filepath.Join(d, "config.toml")
	}
	return filepath.Join(home(env), ".codex", "config.toml")
}

// codexTrusted is every folder Codex's config.toml trusts: a
// [projects."<folder>"] table with trust_level = "trusted".
func codexTrusted(env []string) []string {
	f, err := regfile.Open(codexConfigFile(env))
	if err != nil {
		return nil
	}
	defer f.Close()
	var dirs []string
	project := ""
	sc := bufio.NewScanner(io.LimitReader(f, maxCLIConfig))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			project = ""
			if rest, ok := strings.CutPrefix(line, "[projects."); ok {
				if name, tail, ok := tomlKey(rest); ok && strings.TrimSpace(tail) == "]" {
					project = name
				}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if project == "" || !ok || strings.TrimSpace(key) != "trust_level" {
			continue
		}
		if v, _, ok := tomlKey(strings.TrimSpace(value)); ok && v == "trusted" {
			dirs = append(dirs, filepath.Clean(project))
		}
	}
	return dirs
}

// codexTrusts reports whether Codex's config.toml trusts dir or a folder
// above it; it returns the file.
func codexTrusts(dir string, env []string) (string, bool) {
	return codexConfigFile(env), covered(dir, codexTrusted(env))
}

// tomlKey reads a quoted TOML string at the start of s ("…" with escapes,
// or '…' as it is) and returns it and what follows.
func tomlKey(s string) (string, string, bool) {
	if s == "" {
		return "", "", false
	}
	switch s[0] {
	case '\'':
		if end := strings.IndexByte(s[1:], '\''); end >= 0 {
			return s[1 : 1+end], s[2+end:], true
		}
	case '"':
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				v, err := strconv.Unquote(s[:i+1])
				return v, s[i+1:], err == nil
			}
		}
	}
	return "", "", false
}
