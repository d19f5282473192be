package trust

import (
	"os"
	"strings"
)

// What a CLI's readers of its own files (CLI.Record, CLI.Files) share.

// MaxConfig bounds what a CLI's reader reads of its own configuration
// file.
const MaxConfig = 64 << 20

// Getenv is the value of name in env (nil: spbridge's own environment).
func Getenv(env []string, name string) string {
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

// Home is the user's home folder as env says.
func Home(env []string) string {
	if h := Getenv(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}
