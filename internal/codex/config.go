package codex

import (
	"bufio"
	"strconv"
	"strings"

	"spbridge/internal/regfile"
)

// configFile reads the string values of codex's configuration (config.toml
// in CODEX_HOME, else in ~/.codex, as env or spbridge's own environment
// says) by table: "" for the top-level keys, "model_providers.x" for
// [model_providers.x]. It reads only what spbridge needs, key = "string"
// lines; nil when there is no configuration.
func configFile(env []string) map[string]map[string]string {
	path := configTOML(env)
	if path == "" {
		return nil
	}
	f, err := regfile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	tables := map[string]map[string]string{}
	table := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			name := strings.Trim(line, "[] ")
			if i := strings.Index(name, "]"); i >= 0 {
				name = name[:i]
			}
			table = strings.ReplaceAll(strings.ReplaceAll(name, `"`, ""), " ", "")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		s, ok := tomlString(strings.TrimSpace(value))
		if !ok {
			continue
		}
		if tables[table] == nil {
			tables[table] = map[string]string{}
		}
		tables[table][strings.TrimSpace(key)] = s
	}
	return tables
}

// tomlString reads a quoted TOML string value, with or without a comment
// after it.
func tomlString(value string) (string, bool) {
	if i := strings.Index(value, " #"); i >= 0 && !strings.HasPrefix(value, `"`) {
		value = strings.TrimSpace(value[:i])
	}
	if s, err := strconv.Unquote(value); err == nil {
		return s, true
	}
	if len(value) >= 2 && (value[0] == '\'' || value[0] == '"') {
		if j := strings.IndexByte(value[1:], value[0]); j >= 0 {
			return value[1 : j+1], true
		}
	}
	return "", false
}

// configModel returns the model codex's configuration names (`model = "…"`
// at its top), the one codex runs when not told one; "" when it names none
// (codex's built-in default, which it does not say on the exec transport).
func configModel(env []string) string {
	return configFile(env)[""]["model"]
}

// configProviderKey returns the environment variable that holds the key of
// the model provider codex's configuration chooses (`model_provider =
// "x"` and `env_key` in [model_providers.x]), "" when it chooses none or
// the provider takes no key from the environment.
func configProviderKey(env []string) string {
	cfg := configFile(env)
	p := cfg[""]["model_provider"]
	if p == "" {
		return ""
	}
	return cfg["model_providers."+p]["env_key"]
}
