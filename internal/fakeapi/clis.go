package fakeapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// CodexRel is where scripts/install-clis puts codex's Node wrapper, which
// runs the native binary of @openai/codex-<platform>, relative to the module
// root.
const CodexRel = ".tools/npm/node_modules/@openai/codex/bin/codex.js"

// CodexPath returns the real codex for an end-to-end test: $SPBRIDGE_CODEX,
// else the one scripts/install-clis installed. Without one the test is
// skipped, or fails when $CI is set: in CI it must run.
func CodexPath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("SPBRIDGE_CODEX"); p != "" {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("SPBRIDGE_CODEX: %v", err)
		}
		return p
	}
	root, err := ModuleRoot()
	if err == nil {
		p := filepath.Join(root, CodexRel)
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	msg := "real codex not found (" + err.Error() + "); run bash scripts/install-clis or set SPBRIDGE_CODEX"
	if os.Getenv("CI") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// CodexModel is the model the throwaway codex configuration asks for: one
// the codex binary knows, so that it needs no model list from the server.
const CodexModel = "gpt-5.5"

// CodexEnv prepares dir, a throwaway folder, for the real codex talking to
// this server and returns codex's complete environment: HOME is dir/home,
// CODEX_HOME is dir/codex-home with a config.toml whose model provider
// "fake" is this server (Responses API, no retries), with update checks and
// analytics off; FAKE_API_KEY holds the dummy key. It fails the test when it
// cannot write the folders.
func (s *OpenAIServer) CodexEnv(tb testing.TB, dir string) []string {
	tb.Helper()
	env, err := s.WriteCodexHome(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return env
}

// WriteCodexHome is CodexEnv for a program: it returns the error of
// writing the folders instead of failing a test.
func (s *OpenAIServer) WriteCodexHome(dir string) ([]string, error) {
	home := filepath.Join(dir, "home")
	codexHome := filepath.Join(dir, "codex-home")
	for _, d := range []string{home, codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(s.CodexConfig()), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
		"PATH=" + os.Getenv("PATH"),
		"FAKE_API_KEY=dummy",
		"LANG=C.UTF-8",
	}, nil
}

// CodexConfig returns the config.toml that CodexEnv writes.
func (s *OpenAIServer) CodexConfig() string {
	return fmt.Sprintf(`model = %s
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake"
base_url = %s
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

# Nothing but the fake API on 127.0.0.1: no plugin marketplace fetched from
# its remote (a git ls-remote to a public host at every start), and no
# snapshot of a login shell taken (a bash -lc at every start). Together
# they took a quarter of each codex start's CPU (855 ms of a codex exec
# turn, 630 without), and neither touches what spbridge reads or sends.
[features]
plugins = false
remote_plugin = false
shell_snapshot = false
`, strconv.Quote(CodexModel), strconv.Quote(s.URL+"/v1"))
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
