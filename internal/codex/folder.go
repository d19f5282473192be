package codex

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"spbridge/internal/regfile"
	"spbridge/internal/trust"
)

// This file holds what trust weighs of the Codex CLI (Plugin.Trust): its
// own record of the folders it trusts, and what in a folder it would
// apply.

// homeDir is Codex's home, as env (spbridge's own environment when nil)
// says: $CODEX_HOME, else ~/.codex; "" when neither can be told.
func homeDir(env []string) string {
	if d := trust.Getenv(env, "CODEX_HOME"); d != "" {
		return d
	}
	if home := trust.Home(env); home != "" {
		return filepath.Join(home, ".codex")
	}
	return ""
}

// configTOML is Codex's config.toml, in its home; "" when that cannot be
// told.
func configTOML(env []string) string {
	if home := homeDir(env); home != "" {
		return filepath.Join(home, "config.toml")
	}
	return ""
}

// trustedFolders is every folder Codex's config.toml trusts: a
// [projects."<folder>"] table with trust_level = "trusted".
func trustedFolders(env []string) []string {
	f, err := regfile.Open(configTOML(env))
	if err != nil {
		return nil
	}
	defer f.Close()
	var dirs []string
	project := ""
	sc := bufio.NewScanner(io.LimitReader(f, trust.MaxConfig))
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

// folderFiles returns what in dir would act when Codex 0.169.0 runs there
// with its project configuration trusted: a .codex folder (config.toml,
// hooks, exec policies) in dir or a folder above it up to the project's
// root (the closest folder holding .git; dir itself without one), as
// codex reads its project layers from that root down to its working
// folder; the user's own (CODEX_HOME, ~/.codex) is not the folder's.
func folderFiles(dir string, env []string) []string {
	root := dir
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	var out []string
	user := filepath.Dir(configTOML(env))
	for d := dir; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, ".codex"); p != user && trust.NonEmptyDir(p) {
			out = append(out, p)
		}
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	return out
}

// trustRecord is Codex's own record of the folders it trusts: its
// config.toml, and the folders it trusts there.
func trustRecord(env []string) (string, []string) { return configTOML(env), trustedFolders(env) }
