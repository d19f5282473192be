package cliproc

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// Version returns the first line of what `path --version` prints with the
// environment env (nil: this process's), or "" when it cannot be run within
// ten seconds.
func Version(path string, env []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
