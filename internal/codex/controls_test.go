package codex

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"spbridge/internal/backend"
)

func TestModes(t *testing.T) {
	var heard []string
	b := New(Options{Options: backend.Options{Events: backend.Events{ModeChanged: func(id string) { heard = append(heard, id) }}}, Transport: TransportExec})
	if got := b.Mode(); got != ModeAuto {
		t.Errorf("Mode() = %q, want auto", got)
	}
	if err := b.SetMode(context.Background(), "plan"); !errors.Is(err, backend.ErrUnknownMode) {
		t.Errorf("SetMode(plan) = %v, want ErrUnknownMode", err)
	}
	for _, tc := range []struct{ mode, sandbox string }{{ModeReadOnly, "read-only"}, {ModeFullAccess, "danger-full-access"}, {ModeAuto, "workspace-write"}} {
		if err := b.SetMode(context.Background(), tc.mode); err != nil {
			t.Fatal(err)
		}
		if got := b.args(nil)[1]; got != `sandbox_mode="`+tc.sandbox+`"` {
			t.Errorf("SetMode(%q): args %q, want sandbox %s", tc.mode, got, tc.sandbox)
		}
	}
	if want := []string{ModeReadOnly, ModeFullAccess, ModeAuto}; !reflect.DeepEqual(heard, want) {
		t.Errorf("ModeChanged heard %v, want %v", heard, want)
	}
	if got := New(Options{Sandbox: "read-only"}).Mode(); got != ModeReadOnly {
		t.Errorf("Mode() with Sandbox read-only = %q", got)
	}
}

func TestMCPExecArgs(t *testing.T) {
	servers := []backend.MCPServer{
		{Name: "my tools", Transport: backend.MCPStdio, Command: "/bin/tool", Args: []string{"--x"}, Env: []backend.NameValue{{Name: "TOKEN", Value: "s3cret"}}},
		{Name: "web", Transport: backend.MCPHTTP, URL: "https://example.test/mcp", Headers: []backend.NameValue{{Name: "Authorization", Value: "Bearer s3cret"}}},
		{Name: "old", Transport: backend.MCPSSE, URL: "https://example.test/sse"},
	}
	args, env, skipped := mcpExecArgs(servers)
	want := []string{
		"-c", `mcp_servers.my_tools.command="/bin/tool"`, "-c", `mcp_servers.my_tools.args=["--x"]`, "-c", `mcp_servers.my_tools.env_vars=["TOKEN"]`,
		"-c", `mcp_servers.web.url="https://example.test/mcp"`, "-c", `mcp_servers.web.env_http_headers={"Authorization"="SPBRIDGE_MCP_1_0"}`,
	}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args = %q\nwant %q", args, want)
	}
	if strings.Contains(strings.Join(args, " "), "s3cret") {
		t.Error("a secret on argv")
	}
	if wantEnv := []string{"TOKEN=s3cret", "SPBRIDGE_MCP_1_0=Bearer s3cret"}; !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("env = %q, want %q", env, wantEnv)
	}
	if !reflect.DeepEqual(skipped, []string{"old"}) {
		t.Errorf("skipped = %q", skipped)
	}
	cfg, _ := mcpConfig(servers)
	data, _ := json.Marshal(cfg)
	if got := string(data); got != `{"mcp_servers":{"my_tools":{"args":["--x"],"command":"/bin/tool","env":{"TOKEN":"s3cret"}},"web":{"http_headers":{"Authorization":"Bearer s3cret"},"url":"https://example.test/mcp"}}}` {
		t.Errorf("mcpConfig = %s", got)
	}
}
