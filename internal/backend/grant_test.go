package backend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"spbridge/internal/itemmap"
)

// vocab is the tool vocabulary of the tests: Claude Code's and the Codex
// CLI's names, as their rows have them (clis' TestGrantVocabulary checks
// the rows).
var vocab = Tools{Commands: []string{"Bash", "Monitor", "PowerShell", "shell"}, Edits: []string{"Edit", "MultiEdit", "Write", "NotebookEdit"},
	Reads: []string{"Read"}, Patches: []string{"apply_patch"}}

// workDir is the folder the commands of the tests run in, unless they say.
const workDir = "/p/work"

func bashApproval(cmd string) itemmap.Approval {
	return bashIn(workDir, cmd)
}

// bashIn is a Bash request to run cmd in dir.
func bashIn(dir, cmd string) itemmap.Approval {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return itemmap.Approval{ToolName: "Bash", Input: in, Cwd: dir}
}

func fileApproval(tool, key, f string) itemmap.Approval {
	in, _ := json.Marshal(map[string]string{key: f})
	return itemmap.Approval{ToolName: tool, Input: in}
}

func mustGrant(t *testing.T, a itemmap.Approval) Grant {
	t.Helper()
	g, ok := GrantFor(a, vocab)
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
	codex := itemmap.Approval{ToolName: "shell", Input: json.RawMessage(`{"command":["git","status"]}`), Cwd: workDir}
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
		// A command whose folder is not known, or not absolute.
		bashIn("", "npm test"),
		bashIn("work", "rm -f *"),
		{ToolName: "shell", Input: json.RawMessage(`{"command":"rm -f *"}`)},
	} {
		if g, ok := GrantFor(a, vocab); ok {
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
	g, ok := EditsGrant(fileApproval("Edit", "file_path", filepath.Join(w, "a.go")), roots, vocab)
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
		if _, ok := EditsGrant(a, roots, vocab); ok {
			t.Errorf("all edits offered on %s %s", a.ToolName, a.Input)
		}
	}
	if _, ok := EditsGrant(fileApproval("Edit", "file_path", filepath.Join(w, "a.go")), nil, vocab); ok {
		t.Error("all edits offered with no folder")
	}
}

// TestGrantToCLI: what a CLI may be told of a grant: WholeTool only for a
// whole tool that is no command, file or patch tool (codex's
// TestExactCommand: what codex may be told of an exact command).
func TestGrantToCLI(t *testing.T) {
	for _, a := range []itemmap.Approval{
		bashApproval("rm -f *"),
		bashApproval("npm test"),
		fileApproval("Edit", "file_path", "/p/a.go"),
		fileApproval("Read", "file_path", "/p/*.go"),
	} {
		if g, ok := GrantFor(a, vocab); ok {
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
}

// TestGrantFolder: a command's grant covers it in the folder it was
// granted in (links resolved, the path cleaned), not in another folder,
// a subfolder or the parent, nor where the folder is not known; and
// outside the sandbox only when it was granted there. A rejection inside
// the sandbox rejects outside it too. The option names the folder.
func TestGrantFolder(t *testing.T) {
	w, other := t.TempDir(), t.TempDir()
	build := filepath.Join(w, "work", "build")
	os.MkdirAll(filepath.Join(build, "sub"), 0o700)
	link := filepath.Join(other, "to-build")
	os.Symlink(build, link)
	escalated := func(a itemmap.Approval) itemmap.Approval { a.Escalated = true; return a }
	codex := func(dir, cmd string) itemmap.Approval {
		in, _ := json.Marshal(map[string]any{"command": cmd, "cwd": dir})
		return itemmap.Approval{ToolName: "shell", Input: in, Cwd: dir}
	}
	for _, granted := range []itemmap.Approval{bashIn(build, "rm -f *"), codex(build, "rm -f *")} {
		g := mustGrant(t, granted)
		for _, tc := range []struct {
			a    itemmap.Approval
			want bool
		}{
			{bashIn(build, "rm -f *"), granted.ToolName == "Bash"},
			{codex(build, "rm -f *"), granted.ToolName == "shell"},
			{codex(build+"/", "rm -f *"), granted.ToolName == "shell"},
			{codex(filepath.Join(build, "sub", ".."), "rm -f *"), granted.ToolName == "shell"},
			{codex(link, "rm -f *"), granted.ToolName == "shell"},
			{codex(filepath.Join(build, "sub"), "rm -f *"), false},
			{codex(filepath.Join(w, "work"), "rm -f *"), false},
			{codex(other, "rm -f *"), false},
			{codex("", "rm -f *"), false},
			{codex("work/build", "rm -f *"), false},
			{escalated(codex(build, "rm -f *")), false},
			{escalated(bashIn(build, "rm -f *")), false},
		} {
			if got := g.Allows(tc.a); got != tc.want {
				t.Errorf("%s grant in %s: Allows(%s in %q, escalated %v) = %v, want %v", granted.ToolName, build, tc.a.ToolName, tc.a.Cwd, tc.a.Escalated, got, tc.want)
			}
		}
	}
	// Claude Code's other shell tools are commands too: never the whole
	// tool, in their folder only.
	for _, tool := range []string{"Monitor", "PowerShell"} {
		in := json.RawMessage(`{"command":"tail -f build.log","description":"watch"}`)
		g := mustGrant(t, itemmap.Approval{ToolName: tool, Input: in, Cwd: build})
		if _, whole := g.WholeTool(); whole || g.Exact != "tail -f build.log" || g.Allows(itemmap.Approval{ToolName: tool, Input: in, Cwd: other}) ||
			!g.Allows(itemmap.Approval{ToolName: tool, Input: in, Cwd: link}) || g.Allows(itemmap.Approval{ToolName: tool, Input: json.RawMessage(`{"command":"curl x"}`), Cwd: build}) {
			t.Errorf("%s: %+v", tool, g)
		}
	}
	if g, ok := GrantFor(itemmap.Approval{ToolName: "Monitor", Input: json.RawMessage(`{"ws":{"url":"ws://127.0.0.1:1"}}`), Cwd: build}, vocab); ok {
		t.Errorf("a Monitor of no command: %+v", g)
	}
	// A prefix grant, the same way.
	npm := mustGrant(t, bashIn(build, "npm test"))
	if !npm.Allows(bashIn(link, "npm test -- --watch")) || npm.Allows(bashIn(other, "npm test")) || npm.Allows(bashIn(w, "npm test")) {
		t.Errorf("npm test in %s: %+v", build, npm)
	}
	// Outside the sandbox: granted there, it covers both.
	out := mustGrant(t, escalated(codex(build, "git clean -fdx")))
	if !out.Escalated || !out.Allows(escalated(codex(build, "git clean -fdx"))) || !out.Allows(codex(build, "git clean -fdx")) || out.Allows(escalated(codex(other, "git clean -fdx"))) {
		t.Errorf("an escalated grant: %+v", out)
	}
	// A rejection in the sandbox rejects the same outside it, in its folder.
	rej := mustGrant(t, codex(build, "git clean -fdx"))
	if !rej.Rejects(escalated(codex(build, "git clean -fdx"))) || rej.Rejects(codex(other, "git clean -fdx")) {
		t.Errorf("a rejection: %+v", rej)
	}
	for _, tc := range []struct {
		g    Grant
		want string
	}{
		{mustGrant(t, codex(build, "rm -f *")), "`rm -f *` in work/build"},
		{mustGrant(t, codex(w, "npm test")), "`npm test …` in the working folder"},
		{mustGrant(t, codex(other, "rm -f *")), "`rm -f *` in " + mustResolve(t, other)},
		{mustGrant(t, escalated(codex(build, "git clean -fdx"))), "`git clean …` in work/build, also outside the sandbox"},
		{mustGrant(t, fileApproval("Edit", "file_path", "/p/a.go")), "Edit of /p/a.go"},
	} {
		if got := tc.g.Describe(w); got != tc.want {
			t.Errorf("Describe = %q, want %q", got, tc.want)
		}
	}
}

func mustResolve(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
