package acp

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/sessionindex"
)

// TestAdditionalDirectories: initialize advertises
// sessionCapabilities.additionalDirectories; session/new, load and resume
// give their additionalDirectories (clean, each once, in order) to the
// session's backend, also to the one New Conversation makes; a relative
// path or one that is not a folder is -32602 naming it; session/list
// reports the folders of the last open, and a load without any opens
// with none.
func TestAdditionalDirectories(t *testing.T) {
	var mu sync.Mutex
	var got [][]string // each backend's AddDirs, in the order made
	cfg := Config{Index: sessionindex.New(t.TempDir()), DefaultBackend: "claude", CLIs: rowsOf(func(name string, o backend.Options) (backend.Backend, error) {
		if name != "claude" {
			return nil, fmt.Errorf("no %s", name)
		}
		mu.Lock()
		got = append(got, o.AddDirs)
		mu.Unlock()
		return newFake(), nil
	})}
	made := func() [][]string { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
	c := startServerWith(t, cfg)

	res, _ := c.request("initialize", map[string]any{"protocolVersion": 1})
	sc, _ := res["agentCapabilities"].(map[string]any)["sessionCapabilities"].(map[string]any)
	if v, ok := sc["additionalDirectories"].(map[string]any); !ok || len(v) != 0 {
		t.Errorf("sessionCapabilities = %v, want additionalDirectories: {}", sc)
	}

	pkg := newPackage(t)
	assets, lib := t.TempDir(), t.TempDir()
	file := filepath.Join(assets, "a.txt")
	os.WriteFile(file, nil, 0o600)
	withDirs := func(p map[string]any, dirs ...string) map[string]any {
		p["additionalDirectories"] = dirs
		return p
	}
	for _, tc := range []struct {
		dirs []string
		says string
	}{
		{[]string{assets, "relative/dir"}, `additionalDirectories[1] "relative/dir" must be an absolute path`},
		{[]string{""}, `additionalDirectories[0] "" must be an absolute path`},
		{[]string{filepath.Join(lib, "missing")}, filepath.Join(lib, "missing")},
		{[]string{file}, file + ": not a folder"},
	} {
		m, _ := c.response(c.call("session/new", withDirs(newSessionParams(pkg), tc.dirs...)))
		msg, _ := m["error"].(map[string]any)["message"].(string)
		if errCode(m) != jsonrpc.CodeInvalidParams || !strings.Contains(msg, tc.says) {
			t.Errorf("session/new with additionalDirectories %q = %v, want %d naming %q", tc.dirs, m, jsonrpc.CodeInvalidParams, tc.says)
		}
	}
	if n := len(made()); n != 0 {
		t.Fatalf("%d backends made for refused opens", n)
	}

	c.request("session/new", withDirs(newSessionParams(pkg), assets+string(filepath.Separator), lib, assets))
	want := []string{assets, lib}
	if g := made(); len(g) != 1 || !slices.Equal(g[0], want) {
		t.Errorf("the backend's AddDirs = %q, want [%q]", g, want)
	}
	listed := func() any {
		res, _ := c.request("session/list", map[string]any{})
		for _, s := range res["sessions"].([]any) {
			if s := s.(map[string]any); s["sessionId"] == pkg {
				return s["additionalDirectories"]
			}
		}
		t.Fatalf("session/list %v lacks %s", res, pkg)
		return nil
	}
	if l := listed(); fmt.Sprint(l) != fmt.Sprint(want) {
		t.Errorf("session/list additionalDirectories = %v, want %q", l, want)
	}
	c.request("_spbridge/newConversation", map[string]any{"sessionId": pkg})
	if g := made(); len(g) != 2 || !slices.Equal(g[1], want) {
		t.Errorf("after New Conversation, AddDirs = %q, want %q", g, want)
	}

	// A load without the field activates none, and the list says so.
	c.request("session/close", map[string]any{"sessionId": pkg})
	c.request("session/load", map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg), "mcpServers": []any{}})
	if g := made(); len(g) != 3 || g[2] != nil {
		t.Errorf("load without additionalDirectories: AddDirs = %q, want none", g[len(g)-1])
	}
	if l := listed(); l != nil {
		t.Errorf("session/list after a load without folders = %v, want none", l)
	}
	// A resume gives a list of its own.
	c.request("session/close", map[string]any{"sessionId": pkg})
	c.request("session/resume", withDirs(map[string]any{"sessionId": pkg, "cwd": filepath.Dir(pkg)}, lib))
	if g := made(); len(g) != 4 || !slices.Equal(g[3], []string{lib}) {
		t.Errorf("resume with [%s]: AddDirs = %q", lib, g[len(g)-1])
	}
	if l := listed(); fmt.Sprint(l) != fmt.Sprint([]string{lib}) {
		t.Errorf("session/list after resume = %v, want [%s]", l, lib)
	}
}
