package codex

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/trust"
)

// LoginArgs are the arguments of the Codex CLI's own log-in.
var LoginArgs = []string{"login"}

// NotLoggedInText is the failure shown when codex is not logged in.
const NotLoggedInText = itemmap.CodexNotLoggedIn

// AuthStatus asks `codex login status` whether codex is logged in. Its
// output (which may show part of a key) is read, never passed on. A codex
// whose configuration chooses a model provider that takes its key from an
// environment variable (env_key) runs turns without a log-in: with that
// variable set (in env, or spbridge's own environment when env is nil) it
// counts as logged in, by "api_key" from that variable; with it unset, as
// not logged in (Source names the variable): codex refuses its turns
// whatever it stored.
func AuthStatus(ctx context.Context, program string, env []string) (backend.AuthStatus, error) {
	if name := configProviderKey(env); name != "" {
		return backend.AuthStatus{LoggedIn: trust.Getenv(env, name) != "", Method: "api_key", Source: name}, nil
	}
	path, err := Program(program)
	if err != nil {
		return backend.AuthStatus{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "login", "status")
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err = cmd.Run()
	if ctx.Err() != nil {
		return backend.AuthStatus{}, fmt.Errorf("codex login status: %w", ctx.Err())
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "Not logged in"):
			return backend.AuthStatus{}, nil
		case strings.HasPrefix(line, "Logged in"):
			st := backend.AuthStatus{LoggedIn: true}
			switch lower := strings.ToLower(line); {
			case strings.Contains(lower, "chatgpt"):
				st.Method = "chatgpt"
			case strings.Contains(lower, "api key"):
				st.Method = "api_key"
			case strings.Contains(lower, "access token"):
				st.Method = "access_token"
			}
			return st, nil
		}
	}
	if err != nil {
		return backend.AuthStatus{}, fmt.Errorf("codex login status: %w", err)
	}
	return backend.AuthStatus{}, fmt.Errorf("codex login status said neither logged in nor not")
}

// Logout runs `codex logout`: codex removes the credentials it stored
// (for every program that uses them, not only spbridge). Being logged out
// already is no error.
func Logout(ctx context.Context, program string, env []string) error {
	path, err := Program(program)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "logout")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("codex logout: %w: %s", err, backend.LastLine(out))
	}
	return nil
}
