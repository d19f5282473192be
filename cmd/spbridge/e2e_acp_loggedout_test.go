package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// authError is the JSON-RPC error of a step.
type authError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		AuthMethods []string `json:"authMethods"`
		Backend     string   `json:"backend"`
	} `json:"data"`
}

// stepError returns step n's error, failing the test when the step was
// answered with a result.
func stepError(t *testing.T, events []acpEvent, n int) authError {
	t.Helper()
	for _, e := range events {
		if e.Step != nil && *e.Step == n {
			switch e.Event {
			case "error":
				var a authError
				json.Unmarshal(e.Error, &a)
				return a
			case "response":
				t.Fatalf("step %d answered %s, want an error", n, e.Result)
			}
		}
	}
	t.Fatalf("no answer to step %d", n)
	return authError{}
}

// TestE2EServeLoggedOut: a prompt on a CLI that is not logged in is
// JSON-RPC error -32000 naming the log-in methods, so the editor offers its
// log-in button; the client without auth.terminal is offered agent methods
// naming `spbridge login`. Claude Code really logged out (no key, no
// credentials in its home: it refuses before any request), and a Codex
// whose key the API refuses (401; codex without a key would go to its
// default, non-loopback server, so it is given the fake one and no key).
func TestE2EServeLoggedOut(t *testing.T) {
	t.Parallel()
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		e := newE2E(t)
		env := acpEnv(e.env)
		env["ANTHROPIC_API_KEY"] = nil
		env["ANTHROPIC_AUTH_TOKEN"] = nil
		env["CLAUDE_CODE_OAUTH_TOKEN"] = nil
		loggedOutTurn(t, e.pkg, "claude", env)
		if n := len(e.srv.Requests()); n != 0 {
			t.Errorf("the logged-out claude made %d requests", n)
		}
		if items := e.items(); len(items) != 2 || !strings.HasPrefix(items[1], "failure: ") || !strings.Contains(items[1], "spbridge login --backend claude") {
			t.Errorf("saved items %q: want the message and the log-in failure", items)
		}
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		var refusals []fakeapi.ResponsesReply
		for range 10 {
			refusals = append(refusals, fakeapi.ResponsesReply{Status: 401, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided."})
		}
		e, srv := newCodexE2E(t, refusals...)
		env := acpEnv(e.env)
		env["FAKE_API_KEY"] = "refused"
		loggedOutTurn(t, e.pkg, "codex", env)
		if len(srv.Requests()) == 0 {
			t.Error("codex made no request")
		}
		if items := e.items(); len(items) != 2 || !strings.HasPrefix(items[1], "failure: ") || !strings.Contains(items[1], "spbridge login --backend codex") {
			t.Errorf("saved items %q: want the message and the log-in failure", items)
		}
	})
	// A provider whose key variable is not set: codex refuses before any
	// request ("Missing environment variable"), on either transport.
	for _, transport := range []string{"app-server", "exec"} {
		t.Run("codex key unset "+transport, func(t *testing.T) {
			t.Parallel()
			e, srv := newCodexE2E(t)
			env := acpEnv(e.env)
			env["FAKE_API_KEY"] = nil
			loggedOutTurn(t, e.pkg, "codex", env, "--codex-transport", transport)
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("codex without its key made %d requests", n)
			}
			// spbridge auth status says the same.
			status := exec.Command(spbridgeBin(t), "auth", "status", "--backend", "codex")
			status.Env = slices.DeleteFunc(slices.Clone(e.env), func(kv string) bool { return strings.HasPrefix(kv, "FAKE_API_KEY=") })
			out, err := status.Output()
			if code := status.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "codex: not logged in: the environment variable FAKE_API_KEY") {
				t.Errorf("auth status: exit %d, %v: %s", code, err, out)
			}
			if items := e.items(); len(items) != 2 || !strings.HasPrefix(items[1], "failure: ") || !strings.Contains(items[1], "FAKE_API_KEY") || !strings.Contains(items[1], "spbridge login --backend codex") {
				t.Errorf("saved items %q: want the message and the failure naming the variable and the log-in", items)
			}
		})
	}
}

// loggedOutTurn runs initialize, session/new on pkg and one prompt under the
// official ACP client and checks the answers of a CLI that is not logged in.
func loggedOutTurn(t *testing.T, pkg, backend string, env map[string]any, serveArgs ...string) []acpEvent {
	t.Helper()
	work := filepath.Dir(pkg)
	os.MkdirAll(work, 0o755)
	meta := map[string]any{"spbridge": map[string]any{"package": pkg, "backend": backend}}
	events := runACPClient(t, map[string]any{
		"command": append([]string{spbridgeBin(t), "serve"}, serveArgs...), "env": env, "cwd": work,
		"steps": []any{
			map[string]any{"op": "initialize"},
			map[string]any{"op": "newSession", "cwd": work, "meta": meta, "saveAs": "s1"},
			map[string]any{"op": "prompt", "session": "s1", "text": "hello"},
			map[string]any{"op": "closeStdin"},
		},
	})
	for _, m := range response(t, events, 0)["authMethods"].([]any) {
		m := m.(map[string]any)
		if m["type"] != nil || !strings.Contains(fmt.Sprint(m["description"]), "spbridge login --backend") {
			t.Errorf("auth method for a client without auth.terminal: %v", m)
		}
	}
	got := stepError(t, events, 2)
	if got.Code != -32000 || strings.Join(got.Data.AuthMethods, " ") != "claude-login codex-login" || got.Data.Backend != backend {
		t.Errorf("prompt answered %+v, want -32000 with the methods", got)
	}
	return events
}
