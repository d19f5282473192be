package codex

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// configModel returns the model codex's configuration names (`model = "…"`
// at the top of config.toml in CODEX_HOME, else in ~/.codex), the one codex
// runs when not told one; "" when it names none (codex's built-in default,
// which it does not say on the exec transport).
func configModel(env []string) string {
	home := ""
	userHome := os.Getenv("HOME")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			home = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	if home == "" {
		if userHome == "" {
			return ""
		}
		home = filepath.Join(userHome, ".codex")
	}
	f, err := os.Open(filepath.Join(home, "config.toml"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			return "" // a table: the top-level keys are behind
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(key) != "model" {
			continue
		}
		value = strings.TrimSpace(value)
		if i := strings.Index(value, " #"); i >= 0 && !strings.HasPrefix(value, `"`) {
			value = strings.TrimSpace(value[:i])
		}
		if s, err := strconv.Unquote(value); err == nil {
			return s
		}
		if len(value) >= 2 && value[0] == '\'' {
			if j := strings.IndexByte(value[1:], '\''); j >= 0 {
				return value[1 : j+1]
			}
		}
		// A double-quoted value with a comment after it.
		if len(value) >= 2 && value[0] == '"' {
			if j := strings.IndexByte(value[1:], '"'); j >= 0 {
				return value[1 : j+1]
			}
		}
		return ""
	}
	return ""
}
