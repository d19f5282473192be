package backend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/itemmap"
)

func bashApproval(cmd string) itemmap.Approval {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return itemmap.Approval{ToolName: "Bash", Input: in}
}

func fileApproval(tool, key, f string) itemmap.Approval {
	in, _ := json.Marshal(map[string]string{key: f})
	return itemmap.Approval{ToolName: tool, Input: in}
}

func mustGrant(t *testing.T, a itemmap.Approval) Grant {
	t.Helper()
	g, ok := GrantFor(a)
	if !ok {
		t.Fatalf("GrantFor(%s %s): no grant", a.ToolName, a.Input)
	}
	return g
}

// TestGrant: what an "always" answer covers.
func TestGrant(t *testing.T) {
	for _, tc := range []struct {
		granted, asked string
		want           bool
	}{
		{"npm test", "npm test", true},
		{"npm test", "npm  test -- --watch", true},
		{"npm test", "npm publish", false},
		{"npm test", "npm test && rm -rf /", false},
		{"go test ./...", "go test -run X ./cmd", true},
		{"rm -rf build", "rm -rf build", true},
		{"rm -rf build", "rm -rf /", false},
		{"rm -f *", "rm -f *", true},
		{"rm -f *", "rm -f keep/precious", false},
		{"ls", "ls", true},
		{"ls", "ls /etc", false},
		{"cat a | wc", "cat a | wc", true},
		{"cat a | wc", "cat a", false},
	} {
		g := mustGrant(t, bashApproval(tc.granted))
		if got := g.Allows(bashApproval(tc.asked)); got != tc.want {
			t.Errorf("GrantFor(%q).Allows(%q) = %v, want %v", tc.granted, tc.asked, got, tc.want)
		}
	}
	edit := func(f string) itemmap.Approval { return fileApproval("Edit", "file_path", f) }
	if g := mustGrant(t, edit("/p/a.go")); !g.Allows(edit("/p/./a.go")) || g.Allows(edit("/p/b.go")) || g.Allows(bashApproval("ls")) ||
		g.Allows(fileApproval("Write", "file_path", "/p/a.go")) || g.Allows(fileApproval("mcp__fs__edit", "file_path", "/p/a.go")) {
		t.Errorf("GrantFor(Edit) = %v: want the Edits of /p/a.go and nothing else", g)
	}
	mcp := itemmap.Approval{ToolName: "mcp__s__t", Input: json.RawMessage(`{"q":1,"file_path":"/p/a.go"}`)}
	if g := mustGrant(t, mcp); !g.Allows(itemmap.Approval{ToolName: "mcp__s__t"}) || g.Allows(itemmap.Approval{ToolName: "mcp__s__u"}) || g.String() != "every mcp__s__t request" {
		t.Errorf("GrantFor(mcp) = %v", g)
	}
	codex := itemmap.Approval{ToolName: "shell", Input: json.RawMessage(`{"command":["git","status"]}`)}
	if g := mustGrant(t, codex); g.String() != "`git status …`" || g.Allows(bashApproval("git status")) {
		t.Errorf("GrantFor(%s) = %v", codex.Input, g)
	}
	patch := func(grantRoot string, files ...string) itemmap.Approval {
		v := &itemmap.ToolView{}
		for _, f := range files {
			v.Diffs = append(v.Diffs, itemmap.Diff{Path: f})
		}
		in, _ := json.Marshal(map[string]string{"grantRoot": grantRoot})
		return itemmap.Approval{ToolName: "apply_patch", Input: in, Tool: v}
	}
	if g := mustGrant(t, patch("", "/w/b.go", "/w/a.go", "/w/a.go")); g.String() != "changes to /w/a.go, /w/b.go" ||
		!g.Allows(patch("", "/w/a.go")) || g.Allows(patch("", "/w/a.go", "/w/c.go")) || g.Allows(patch("/w", "/w/a.go")) || g.Allows(patch("")) {
		t.Errorf("GrantFor(apply_patch) = %v: want changes to a.go and b.go only", g)
	}
}

// TestGrantUnscoped: a request with nothing to scope a grant by (a blank
// command, an edit or read naming no file, a file change of no known file
// or one that asks for a whole folder) has no grant, so no "always" is
// offered.
func TestGrantUnscoped(t *testing.T) {
	for _, a := range []itemmap.Approval{
		bashApproval(""),
		bashApproval(" \t\n "),
		{ToolName: "Bash", Input: json.RawMessage(`{"description":"x"}`)},
		{ToolName: "Bash", Input: json.RawMessage(`{"command":["  "]}`)},
		{ToolName: "shell", Input: json.RawMessage(`{"command":[]}`)},
		fileApproval("Edit", "file_path", "  "),
		{ToolName: "Write", Input: json.RawMessage(`{"content":"x"}`)},
		{ToolName: "Read", Input: json.RawMessage(`{}`)},
		{ToolName: "NotebookEdit", Input: json.RawMessage(`{"notebook_path":""}`)},
		{ToolName: "apply_patch", Input: json.RawMessage(`{}`)},
		{ToolName: "apply_patch", Input: json.RawMessage(`{"grantRoot":"/"}`), Tool: &itemmap.ToolView{Diffs: []itemmap.Diff{{Path: "/w/a.go"}}}},
		{ToolName: "", Input: json.RawMessage(`{}`)},
		{ToolName: itemmap.QuestionsTool, Input: json.RawMessage(`{}`)},
	} {
		if g, ok := GrantFor(a); ok {
			t.Errorf("GrantFor(%q %s) = %v, want none", a.ToolName, a.Input, g)
		}
	}
	// A whole-tool grant never covers the tools scoped by their input.
	if (Grant{Tool: "Bash"}).Allows(bashApproval("rm -rf /")) || (Grant{Tool: "Write"}).Allows(fileApproval("Write", "file_path", "/etc/passwd")) {
		t.Error("a whole-tool grant covers a scoped tool")
	}
}

// TestEditsGrant: "allow all edits" covers the edit tools' requests inside
// the session's folders, and nothing else.
func TestEditsGrant(t *testing.T) {
	w, extra, out := t.TempDir(), t.TempDir(), t.TempDir()
	os.Symlink(out, filepath.Join(w, "link"))
	os.Mkdir(filepath.Join(w, "sub"), 0o700)
	roots := []string{w, extra}
	g, ok := EditsGrant(fileApproval("Edit", "file_path", filepath.Join(w, "a.go")), roots)
	if !ok || g.String() != "all edits" {
		t.Fatalf("EditsGrant on an Edit inside the folder: %v, %v", g, ok)
	}
	patch := func(files ...string) itemmap.Approval {
		v := &itemmap.ToolView{}
		for _, f := range files {
			v.Diffs = append(v.Diffs, itemmap.Diff{Path: f})
		}
		return itemmap.Approval{ToolName: "apply_patch", Input: json.RawMessage(`{}`), Tool: v}
	}
	for _, tc := range []struct {
		a    itemmap.Approval
		want bool
	}{
		{fileApproval("Edit", "file_path", filepath.Join(w, "b.go")), true},
		{fileApproval("Write", "file_path", filepath.Join(w, "sub", "new", "c.go")), true},
		{fileApproval("MultiEdit", "file_path", filepath.Join(extra, "d.go")), true},
		{fileApproval("NotebookEdit", "notebook_path", filepath.Join(w, "n.ipynb")), true},
		{fileApproval("Write", "file_path", "rel.go"), true}, // against the working folder
		{patch(filepath.Join(w, "a.go"), filepath.Join(extra, "b.go")), true},
		{patch(filepath.Join(w, "a.go"), filepath.Join(out, "b.go")), false},
		{patch(), false},
		{fileApproval("Read", "file_path", filepath.Join(w, "a.go")), false},
		{fileApproval("mcp__fs__write_file", "file_path", filepath.Join(w, "a.go")), false},
		{bashApproval("touch " + filepath.Join(w, "a.go")), false},
		{fileApproval("Write", "file_path", filepath.Join(out, "x.go")), false},
		{fileApproval("Write", "file_path", filepath.Join(w, "link", "x.go")), false}, // a link out of the folder
		{fileApproval("Write", "file_path", filepath.Join(w, "sub", "..", "..", "x.go")), false},
		{fileApproval("Write", "file_path", w+"-sibling/x.go"), false},
		{fileApproval("Write", "file_path", "/etc/passwd"), false},
		{fileApproval("Write", "file_path", ""), false},
	} {
		if got := g.Allows(tc.a); got != tc.want {
			t.Errorf("all edits of %v: Allows(%s %s %v) = %v, want %v", roots, tc.a.ToolName, tc.a.Input, tc.a.Tool, got, tc.want)
		}
	}
	for _, a := range []itemmap.Approval{
		fileApproval("Read", "file_path", filepath.Join(w, "a.go")),
		fileApproval("Write", "file_path", filepath.Join(out, "a.go")),
		bashApproval("ls"),
	} {
		if _, ok := EditsGrant(a, roots); ok {
			t.Errorf("all edits offered on %s %s", a.ToolName, a.Input)
		}
	}
	if _, ok := EditsGrant(fileApproval("Edit", "file_path", filepath.Join(w, "a.go")), nil); ok {
		t.Error("all edits offered with no folder")
	}
}

// TestGrantToCLI: what a CLI may be told of a grant: WholeTool only for a
// whole tool that is no command, file or patch tool; ExactCommand only for
// one exact shell command.
func TestGrantToCLI(t *testing.T) {
	for _, a := range []itemmap.Approval{
		bashApproval("rm -f *"),
		bashApproval("npm test"),
		fileApproval("Edit", "file_path", "/p/a.go"),
		fileApproval("Read", "file_path", "/p/*.go"),
	} {
		if g, ok := GrantFor(a); ok {
			if tool, whole := g.WholeTool(); whole {
				t.Errorf("GrantFor(%s %s) is the whole tool %s", a.ToolName, a.Input, tool)
			}
		}
	}
	if _, whole := (Grant{AllEdits: true, Roots: []string{"/w"}}).WholeTool(); whole {
		t.Error("all edits is a whole tool")
	}
	for _, name := range []string{"mcp__srv__write_file", "WebFetch"} {
		g := mustGrant(t, itemmap.Approval{ToolName: name, Input: json.RawMessage(`{}`)})
		if tool, whole := g.WholeTool(); !whole || tool != name {
			t.Errorf("GrantFor(%s).WholeTool() = %q, %v", name, tool, whole)
		}
	}
	shell := func(cmd string) itemmap.Approval {
		in, _ := json.Marshal(map[string]any{"command": cmd})
		return itemmap.Approval{ToolName: "shell", Input: in}
	}
	if !mustGrant(t, shell("rm -rf build")).ExactCommand() || mustGrant(t, shell("npm test")).ExactCommand() ||
		mustGrant(t, bashApproval("rm -rf build")).ExactCommand() || (Grant{AllEdits: true}).ExactCommand() {
		t.Error("ExactCommand: want exact shell commands only")
	}
}
