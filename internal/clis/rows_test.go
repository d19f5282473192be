package clis

import (
	"reflect"
	"slices"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
)

// optional are the fields of a row a CLI may leave empty: it has no
// settings of its own.
var optional = map[string]bool{"Settings": true, "StreamSettings": true}

// TestRowsComplete: every row sets every field (a field added to
// backend.Plugin is set by every CLI, or named here as optional); names,
// log-in methods, providers and setting flags are unique; a CLI's tool
// vocabulary gives each name one scope, and no two CLIs give one name
// different scopes or kinds.
func TestRowsComplete(t *testing.T) {
	if len(All) == 0 || Default() != All[0].Name {
		t.Fatalf("Default() = %q with %d rows", Default(), len(All))
	}
	seen := map[string]string{}
	unique := func(what, v, cli string) {
		if other, ok := seen[what+" "+v]; ok {
			t.Errorf("%s %q of %s is %s's too", what, v, cli, other)
		}
		seen[what+" "+v] = cli
	}
	scopes := map[string]string{} // tool name → scope, across the CLIs
	kinds := map[string]string{}  // tool name → kind, across the CLIs
	validKinds := []string{itemmap.KindRead, itemmap.KindEdit, itemmap.KindDelete, itemmap.KindMove, itemmap.KindSearch,
		itemmap.KindExecute, itemmap.KindThink, itemmap.KindFetch}
	for _, c := range All {
		v := reflect.ValueOf(c)
		for i := range v.NumField() {
			if f := v.Type().Field(i); !optional[f.Name] && v.Field(i).IsZero() {
				t.Errorf("%s: %s is not set", c.Name, f.Name)
			}
		}
		if len(c.Tools.Commands) == 0 || len(c.Tools.Kinds) == 0 {
			t.Errorf("%s: its tool vocabulary names no command or no kind: %+v", c.Name, c.Tools)
		}
		if c.Trust.Name != c.Name || c.Trust.Who == "" || c.Trust.Record == nil || c.Trust.Files == nil || c.Trust.LeftOut == "" ||
			c.Trust.RunsWith == "" {
			t.Errorf("%s: what trust weighs of it is not whole: %+v", c.Name, c.Trust)
		}
		unique("name", c.Name, c.Name)
		unique("trust's name", c.Trust.Who, c.Name)
		unique("display name", c.Display, c.Name)
		unique("provider", c.Provider, c.Name)
		unique("log-in method", c.LoginMethod(), c.Name)
		for _, s := range c.Settings {
			unique("flag", c.Flag(s), c.Name)
			if s.Values != nil && !slices.Contains(s.Values, s.Default) && s.Default != "" {
				t.Errorf("%s: setting %s's default %q is not one of its values", c.Name, s.Name, s.Default)
			}
		}
		own := map[string]string{} // this CLI's: each name one scope
		for scope, names := range map[string][]string{"command": c.Tools.Commands, "edit": c.Tools.Edits, "read": c.Tools.Reads,
			"patch": c.Tools.Patches} {
			for _, n := range names {
				if other, ok := own[n]; ok {
					t.Errorf("%s: %s is both a %s and a %s", c.Name, n, other, scope)
				}
				own[n] = scope
				if other, ok := scopes[n]; ok && other != scope {
					t.Errorf("%s: %s is a %s, another CLI's a %s", c.Name, n, scope, other)
				}
				scopes[n] = scope
			}
		}
		for _, n := range c.Tools.AskedOutside {
			if own[n] != "command" && own[n] != "patch" {
				t.Errorf("%s: %s, asked about only outside the sandbox, is no command or file change", c.Name, n)
			}
		}
		for n, k := range c.Tools.Kinds {
			if !slices.Contains(validKinds, k) {
				t.Errorf("%s: %s's kind %q is no kind", c.Name, n, k)
			}
			if other, ok := kinds[n]; ok && other != k {
				t.Errorf("%s: %s is of kind %s, another CLI's of %s", c.Name, n, k, other)
			}
			kinds[n] = k
		}
	}
}

// TestOwnSettings: a row checks its own settings: each one it declares,
// with a value it takes; those not given take their defaults.
func TestOwnSettings(t *testing.T) {
	p := backend.Plugin{Name: "x", Settings: []backend.Setting{{Name: "mode", Values: []string{"a", "b"}, Default: "a"}, {Name: "dir"}}}
	if own, err := p.Own(nil); err != nil || own["mode"] != "a" || own["dir"] != "" || len(own) != 2 {
		t.Errorf("Own(nil) = %v, %v", own, err)
	}
	if own, err := p.Own(map[string]string{"mode": "b", "dir": "/d"}); err != nil || own["mode"] != "b" || own["dir"] != "/d" {
		t.Errorf("Own(b, /d) = %v, %v", own, err)
	}
	if _, err := p.Own(map[string]string{"mode": "c"}); err == nil || err.Error() != `unknown x mode "c" (want a or b)` {
		t.Errorf("Own(c): %v", err)
	}
	if _, err := p.Own(map[string]string{"size": "1"}); err == nil {
		t.Error("Own took a setting it does not declare")
	}
}

// TestNotLoggedInAndContinue: each CLI tells its own not-logged-in
// failures from others (as acp's one test of both did), and says the
// command that continues one of its sessions (as acp and conversation
// show wrote it).
func TestNotLoggedInAndContinue(t *testing.T) {
	cl, _ := Lookup("claude")
	cx, _ := Lookup("codex")
	for _, tc := range []struct {
		cli     backend.Plugin
		failure string
		want    bool
	}{
		{cl, itemmap.ClaudeNotLoggedIn, true},
		{cx, itemmap.CodexNotLoggedIn, true},
		{cx, itemmap.CodexKeyUnset("OPENAI_API_KEY"), true},
		{cl, "API Error: 500 overloaded", false},
		{cx, "API Error: 500 overloaded", false},
		{cl, "", false},
		{cx, "", false},
	} {
		if got := tc.cli.NotLoggedIn(tc.failure); got != tc.want {
			t.Errorf("%s.NotLoggedIn(%q) = %v", tc.cli.Name, tc.failure, got)
		}
	}
	const id = "06c063d3-5368-41f8-87b9-778f42872b06"
	if got := cl.Continue(id); got != "claude --resume "+id {
		t.Errorf("claude: %q", got)
	}
	if got := cx.Continue(id); got != "codex resume "+id {
		t.Errorf("codex: %q", got)
	}
}

// TestRegisterKinds: a registered CLI's tool kinds are known until its
// undo, and the CLIs already listed keep theirs.
func TestRegisterKinds(t *testing.T) {
	undo := Register(backend.Plugin{Name: "x", Tools: backend.Tools{Kinds: map[string]string{"x_run": itemmap.KindExecute, "Read": itemmap.KindEdit}}})
	if ToolKind("x_run") != itemmap.KindExecute || ToolKind("Read") != itemmap.KindRead {
		t.Errorf("registered: x_run %q, Read %q", ToolKind("x_run"), ToolKind("Read"))
	}
	undo()
	if ToolKind("x_run") != itemmap.KindOther || len(All) != 2 {
		t.Errorf("undone: x_run %q, %d CLIs", ToolKind("x_run"), len(All))
	}
}
