package fakeapi

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ClaudeRel is where scripts/install-clis puts claude's native binary,
// relative to the module root.
const ClaudeRel = ".tools/npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe"

// ClaudePath returns the real claude for an end-to-end test:
// $SPBRIDGE_CLAUDE, else the one scripts/install-clis installed. Without one
// the test is skipped, or fails when $CI is set: in CI it must run.
func ClaudePath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("SPBRIDGE_CLAUDE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("SPBRIDGE_CLAUDE: %v", err)
		}
		return p
	}
	root, err := ModuleRoot()
	if err == nil {
		p := filepath.Join(root, ClaudeRel)
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	msg := "real claude not found (" + err.Error() + "); run bash scripts/install-clis or set SPBRIDGE_CLAUDE"
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// ClaudeEnv is the complete environment for the real claude talking to
// this server: a throwaway home, a dummy key, nothing sent elsewhere, and
// one retry at most.
func (s *Server) ClaudeEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"CLAUDE_CODE_TMPDIR=" + filepath.Join(home, "tmp"),
		"PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=1",
	}
}

// ModuleRoot returns the closest folder at or above the working directory
// that holds a go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
