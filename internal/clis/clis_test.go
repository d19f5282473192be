package clis

import (
	"slices"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/codex"
	"spbridge/internal/itemmap"
)

// TestTable: every CLI is whole, found by its name and nothing else, and
// each gives its own mapper and backend.
func TestTable(t *testing.T) {
	if got := Choices(); got != "claude or codex" {
		t.Errorf("Choices() = %q", got)
	}
	for _, c := range All {
		if c.Name == "" || c.Display == "" || c.Provider == "" || c.New == nil || c.Program == nil || c.AuthStatus == nil ||
			c.Logout == nil || c.Mapper == nil || len(c.LoginArgs) == 0 || len(c.Models) == 0 || c.History == nil {
			t.Errorf("%q is not whole: %+v", c.Name, c)
		}
		if c.History != nil && c.History.Name() != c.Name {
			t.Errorf("%s's store of sessions is named %q", c.Name, c.History.Name())
		}
		if got, ok := Lookup(c.Name); !ok || got.Name != c.Name {
			t.Errorf("Lookup(%q) = %q, %v", c.Name, got.Name, ok)
		}
		own, err := c.Own(nil)
		if err != nil {
			t.Fatal(err)
		}
		if be := c.New(backend.Options{Dir: t.TempDir()}, own); be.Name() != c.Name {
			t.Errorf("%s's backend is named %q", c.Name, be.Name())
		}
	}
	if _, ok := Lookup("Claude"); ok {
		t.Error("Lookup is not exact")
	}
	claude, _ := Lookup("claude")
	cx, _ := Lookup("codex")
	if _, ok := claude.Mapper(itemmap.SequentialIDs(), map[string]string{codex.SettingTransport: codex.TransportAppServer}).(*itemmap.Claude); !ok {
		t.Error("claude's mapper")
	}
	if _, ok := cx.Mapper(itemmap.SequentialIDs(), map[string]string{codex.SettingTransport: codex.TransportAppServer}).(*itemmap.CodexApp); !ok {
		t.Error("codex app-server's mapper")
	}
	if _, ok := cx.Mapper(itemmap.SequentialIDs(), map[string]string{codex.SettingTransport: codex.TransportExec}).(*itemmap.Codex); !ok {
		t.Error("codex exec's mapper")
	}
	if claude.LoginMethod() != "claude-login" || claude.Provider != "claude-code" || cx.Provider != "codex" {
		t.Errorf("ids: %q %q %q", claude.LoginMethod(), claude.Provider, cx.Provider)
	}
}

// TestRegister: a registered CLI is in the list, last, until undone.
func TestRegister(t *testing.T) {
	before := Names()
	undo := Register(backend.Plugin{Name: "third", Display: "Third CLI"})
	if c, ok := Lookup("third"); !ok || c.Display != "Third CLI" || !slices.Equal(Names(), append(slices.Clone(before), "third")) {
		t.Errorf("registered: %v, %v", Names(), ok)
	}
	undo()
	if _, ok := Lookup("third"); ok || !slices.Equal(Names(), before) {
		t.Errorf("after undo: %v", Names())
	}
}
