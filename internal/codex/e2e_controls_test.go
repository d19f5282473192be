//go:build linux

package codex

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
)

// TestE2EMCPAndMode gives the real codex, on both transports, a stdio MCP
// server (the test binary), whose tools reach the model, and
// one whose program is missing (app-server: a notice; the turn goes on);
// then read-only mode reaches the model's environment context.
func TestE2EMCPAndMode(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{TransportAppServer, TransportExec} {
		t.Run(transport, func(t *testing.T) {
			b, srv := realCodex(t, transport)
			b.Opts.MCPServers = []backend.MCPServer{
				{Name: "fake", Transport: backend.MCPStdio, Command: exe, Env: []backend.NameValue{{Name: fakeapi.MCPServerEnv, Value: "1"}}},
				{Name: "broken", Transport: backend.MCPStdio, Command: filepath.Join(t.TempDir(), "missing")},
			}
			a := &approver{streaming: make(chan struct{})}
			if end := b.Turn(context.Background(), backend.Message{Text: "hello"}, a); end.Status != itemmap.TurnCompleted {
				t.Fatalf("turn = %v %v", end.Status, a.items)
			}
			reqs := srv.Requests()
			// codex offers an MCP server's tools as a deferred namespace.
			if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "mcp__fake") {
				t.Errorf("the MCP server is not among the model's tools")
			}
			if strings.Contains(string(reqs[len(reqs)-1].Body), "mcp__broken") {
				t.Errorf("the broken MCP server is among the model's tools")
			}
			if transport == TransportAppServer && !slices.ContainsFunc(a.items, func(it archive.Item) bool {
				return it.Type() == archive.TypeNotice && strings.Contains(it.String("text"), `"broken"`)
			}) {
				t.Errorf("no notice of the broken server: %v", a.items)
			}
			if err := b.SetMode(context.Background(), ModeReadOnly); err != nil {
				t.Fatal(err)
			}
			if end := b.Turn(context.Background(), backend.Message{Text: "again"}, a); end.Status != itemmap.TurnCompleted {
				t.Fatalf("turn 2 = %v", end.Status)
			}
			reqs = srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "read-only") {
				t.Errorf("read-only mode did not reach codex: %.1500s", body)
			}
		})
	}
}
