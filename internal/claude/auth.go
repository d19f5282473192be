package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// LoginArgs are the arguments of Claude Code's own log-in.
var LoginArgs = []string{"auth", "login"}

// Program finds the claude program: program when it is not "", else
// $SPBRIDGE_CLAUDE, else claude on PATH (backend.FindProgram).
func Program(program string) (string, error) {
	return backend.FindProgram("claude", program, ErrNotFound)
}

// AuthStatus asks `claude auth status` whether Claude Code is logged in:
// program as Program finds it, env its environment (spbridge's own when
// nil).
func AuthStatus(ctx context.Context, program string, env []string) (backend.AuthStatus, error) {
	path, err := Program(program)
	if err != nil {
		return backend.AuthStatus{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "auth", "status", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		return backend.AuthStatus{}, fmt.Errorf("claude auth status: %w", err)
	}
	var s struct {
		LoggedIn     bool   `json:"loggedIn"`
		AuthMethod   string `json:"authMethod"`
		APIKeySource string `json:"apiKeySource"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		return backend.AuthStatus{}, fmt.Errorf("claude auth status printed no status: %w", err)
	}
	st := backend.AuthStatus{LoggedIn: s.LoggedIn, Source: s.APIKeySource}
	if s.AuthMethod != "none" {
		st.Method = s.AuthMethod
	}
	return st, nil
}

// Logout runs `claude auth logout`: Claude Code forgets the log-in it
// stored (for every program that uses it, not only spbridge). Being logged
// out already is no error.
func Logout(ctx context.Context, program string, env []string) error {
	path, err := Program(program)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "auth", "logout")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("claude auth logout: %w: %s", err, backend.LastLine(out))
	}
	return nil
}

// NotLoggedInText is the failure shown when Claude Code is not logged in.
const NotLoggedInText = itemmap.ClaudeNotLoggedIn
