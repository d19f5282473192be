package modelcache

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"spbridge/internal/backend"
)

// TestCache: the models kept for a program come back while it is the same
// file, not once it changed (another version), nor for another program
// or CLI; nothing is kept for an empty list or a name that is no name.
func TestCache(t *testing.T) {
	state := t.TempDir()
	prog := filepath.Join(t.TempDir(), "claude")
	os.WriteFile(prog, []byte("v1"), 0o755)
	c := New(state)
	models := []backend.Model{{ID: "default", Name: "Default"}, {ID: "opus", Name: "Opus", Efforts: []string{"low", "high"}, DefaultEffort: "high"}}
	if got := c.Load("claude", prog); got != nil {
		t.Errorf("Load before Store = %v", got)
	}
	if err := c.Store("claude", prog, models); err != nil {
		t.Fatal(err)
	}
	if got := c.Load("claude", prog); !backend.EqualModels(got, models) {
		t.Errorf("Load = %v, want %v", got, models)
	}
	if fi, err := os.Stat(filepath.Join(state, "models", "claude.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept file: %v, %v", fi, err)
	}
	if got := c.Load("codex", prog); got != nil {
		t.Errorf("another CLI's Load = %v", got)
	}
	if got := c.Load("claude", prog+"x"); got != nil {
		t.Errorf("another program's Load = %v", got)
	}
	// Another version of the program: the list is not trusted.
	os.WriteFile(prog, []byte("v2, longer"), 0o755)
	os.Chtimes(prog, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	if got := c.Load("claude", prog); got != nil {
		t.Errorf("Load after the program changed = %v", got)
	}
	for _, name := range []string{"", "../x", "a/b", "a.b"} {
		if err := c.Store(name, prog, models); err != nil || c.Load(name, prog) != nil {
			t.Errorf("Store(%q) kept something, or failed: %v", name, err)
		}
	}
	if err := c.Store("codex", prog, nil); err != nil || c.Load("codex", prog) != nil {
		t.Errorf("an empty list was kept: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(state, "models"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"claude.json"}) {
		t.Errorf("models/ holds %v", names)
	}
}
