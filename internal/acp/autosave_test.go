package acp

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/archive"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// TestWhoSaves: a turn's end is in the package when its answer comes, for
// a package named by a client that did not opt in to the host-save
// contract and for a thread in the state folder of one that did; a
// package the opted-in client names is left to its saves, with a recovery
// copy in the state folder, which no open offered (-32600 for
// _spbridge/recover).
func TestWhoSaves(t *testing.T) {
	itemsOnDisk := func(pkg string) int {
		t.Helper()
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Conv.Items)
	}
	prompt := func(c *client, sid string) {
		t.Helper()
		if res, _ := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{textBlock("hi")}}); res["stopReason"] != "end_turn" {
			t.Fatalf("prompt: %v", res)
		}
	}
	t.Run("did not opt in", func(t *testing.T) {
		c := startPlain(t, Config{RecoveryDir: t.TempDir()}, nil)
		c.request("initialize", map[string]any{"protocolVersion": 1})
		pkg := newPackage(t)
		c.request("session/new", newSessionParams(pkg))
		prompt(c, pkg)
		if n := itemsOnDisk(pkg); n == 0 {
			t.Fatal("the turn's end is not in the package")
		}
	})
	t.Run("state folder", func(t *testing.T) {
		sessions := t.TempDir()
		c := startServerWith(t, Config{SessionsDir: sessions, DefaultBackend: "claude", RecoveryDir: t.TempDir()})
		res, _ := c.request("session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})
		sid := res["sessionId"].(string)
		prompt(c, sid)
		if n := itemsOnDisk(sid); n == 0 {
			t.Fatal("the turn's end is not in the package")
		}
	})
	t.Run("host saves", func(t *testing.T) {
		recovery := t.TempDir()
		c := startServerWith(t, Config{RecoveryDir: recovery})
		pkg := newPackage(t)
		c.request("session/new", newSessionParams(pkg))
		prompt(c, pkg)
		if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the turn's end was written into the host's package (%v)", err)
		}
		if r, err := session.ReadRecovery(recovery, pkg); r == nil || err != nil || r.Items == 0 {
			t.Fatalf("no recovery copy: %+v %v", r, err)
		}
		if m, _ := c.response(c.call("_spbridge/recover", map[string]any{"sessionId": pkg})); errCode(m) != jsonrpc.CodeInvalidRequest {
			t.Fatalf("recover with none offered: %v", m)
		}
		c.request("_spbridge/save", map[string]any{"sessionId": pkg})
		if r, _ := session.ReadRecovery(recovery, pkg); r != nil || itemsOnDisk(pkg) == 0 {
			t.Fatalf("after the host's save: copy %+v, package %d items", r, itemsOnDisk(pkg))
		}
	})
}
