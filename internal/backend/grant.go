package backend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"spbridge/internal/itemmap"
)

// A Grant is what an "always" answer to a permission request covers for
// the rest of the session, and nothing more. Which of a CLI's tools are
// commands, edits, reads and file changes is its vocabulary (Tools, in its
// row). A command (Claude's Bash, Monitor and PowerShell, Codex's shell)
// is covered by its program and first argument, so
// "always" on `npm test` covers `npm test -- --watch` but neither `npm
// publish` nor `rm`; a command whose first argument is an option (`rm -rf
// build`) or that uses the shell's operators, pipes, redirections, globs
// or substitutions is covered only as exactly that command. A command is
// covered only in the folder it was granted in (Dir: the request's
// working folder, links resolved; not its subfolders nor its parent), and
// outside the CLI's sandbox only when it was granted there (Escalated); a
// request whose folder is not known gets no grant, and no grant covers
// it. An edit or a
// read of a file (Claude's Edit, MultiEdit, Write, NotebookEdit, Read) is
// covered for that tool and that file; a Codex file change for the files
// it changes. Any other tool (an MCP tool, say) is covered by its name.
//
// AllEdits covers the edits of the session, and only those: the edit
// tools' requests (Claude's Edit, MultiEdit, Write and NotebookEdit,
// Codex's file changes) whose every file lies inside one of Roots (the
// session's working folder and additional folders, links resolved).
//
// spbridge answers each later request a grant covers itself; the CLI is
// told a grant only where its own rule means exactly the same (WholeTool,
// ExactCommand: each backend decides).
type Grant struct {
	Tool     string
	Prefix   []string // the command's leading words
	Exact    string   // the whole command, when covered only as itself
	File     string   // the file of an edit or read
	Files    []string // the files of a Codex file change
	AllEdits bool     // every edit inside Roots
	Roots    []string // AllEdits: the session's folders
	// Dir is a command's folder, absolute, clean and with its links
	// resolved.
	Dir string
	// Escalated: a command's grant covers it outside the sandbox too.
	Escalated bool

	whole bool  // covers the tool whole, by its name
	tools Tools // AllEdits: which tools are edits and file changes
}

// Tools is a CLI's tool vocabulary: which of its tool names are commands,
// edits and reads of one file, and file changes (what an "always" answer
// is scoped by), and the kind an editor shows each call as.
type Tools struct {
	Commands []string // run a command: scoped by their input's "command"
	Edits    []string // edit a file: scoped by their input's "file_path" or "notebook_path"
	Reads    []string // read a file: scoped likewise
	Patches  []string // change files: scoped by the files their view names
	// AskedOutside are the tools the CLI asks about only when they would
	// act outside its sandbox (a question about one says so).
	AskedOutside []string
	// Kinds are the tools' kinds as an editor shows them (itemmap's
	// Kind constants); a tool not here is itemmap.KindOther.
	Kinds map[string]string
	// SummaryFiles are the tools whose item's summary is the one file
	// they read or change: a restored item shows it as the call's
	// location.
	SummaryFiles []string
}

// shellSpecial are the characters that make a command more than a program
// and its arguments.
const shellSpecial = ";&|<>`$()\n\\*?{}[]~"

// GrantFor is the grant an "always" answer to a gives, a request of a CLI
// whose vocabulary is tools; false when a has nothing to scope one by (a
// blank command, an edit that names no file, a file change that asks for
// a whole folder), so that no "always" is offered.
func GrantFor(a itemmap.Approval, tools Tools) (Grant, bool) {
	switch {
	case a.ToolName == "" || a.ToolName == itemmap.QuestionsTool:
		return Grant{}, false
	case slices.Contains(tools.Commands, a.ToolName):
		cmd := ApprovalCommand(a)
		words := strings.Fields(cmd)
		dir, ok := commandDir(a)
		switch {
		case len(words) == 0 || !ok:
			return Grant{}, false
		case strings.ContainsAny(cmd, shellSpecial) || len(words) < 2 || strings.HasPrefix(words[1], "-"):
			return Grant{Tool: a.ToolName, Exact: strings.Join(words, " "), Dir: dir, Escalated: a.Escalated}, true
		}
		return Grant{Tool: a.ToolName, Prefix: words[:2], Dir: dir, Escalated: a.Escalated}, true
	case slices.Contains(tools.Edits, a.ToolName) || slices.Contains(tools.Reads, a.ToolName):
		f := approvalFile(a)
		return Grant{Tool: a.ToolName, File: f}, f != ""
	case slices.Contains(tools.Patches, a.ToolName):
		files := patchFiles(a)
		if len(files) == 0 || grantsRoot(a) {
			return Grant{}, false
		}
		return Grant{Tool: a.ToolName, Files: files}, true
	}
	return Grant{Tool: a.ToolName, whole: true}, true
}

// EditsGrant is the "allow all edits" grant for a session whose folders
// are roots, on a CLI whose vocabulary is tools, offered on a's request;
// false when a is not an edit, or not one inside those folders (the grant
// would not cover a itself).
func EditsGrant(a itemmap.Approval, roots []string, tools Tools) (Grant, bool) {
	g := Grant{AllEdits: true, Roots: slices.DeleteFunc(slices.Clone(roots), func(r string) bool { return r == "" }), tools: tools}
	return g, len(g.Roots) > 0 && g.Allows(a)
}

// Allows reports whether g covers a.
func (g Grant) Allows(a itemmap.Approval) bool {
	return g.covers(a, true)
}

// Rejects reports whether g, an "always reject", covers a: as Allows, but
// a command rejected inside the sandbox is rejected outside it too.
func (g Grant) Rejects(a itemmap.Approval) bool {
	return g.covers(a, false)
}

// covers reports whether g covers a; sandbox: a command that may run
// outside the sandbox is covered only by a grant given for one.
func (g Grant) covers(a itemmap.Approval, sandbox bool) bool {
	if g.AllEdits {
		if !slices.Contains(g.tools.Edits, a.ToolName) && !slices.Contains(g.tools.Patches, a.ToolName) || grantsRoot(a) {
			return false
		}
		files := editFiles(a, g.tools)
		return len(files) > 0 && !slices.ContainsFunc(files, func(f string) bool { return !insideAny(f, g.Roots) })
	}
	if a.ToolName != g.Tool || a.ToolName == "" {
		return false
	}
	switch {
	case g.File != "":
		return approvalFile(a) == g.File
	case g.Files != nil:
		files := patchFiles(a)
		return len(files) > 0 && !grantsRoot(a) && !slices.ContainsFunc(files, func(f string) bool { return !slices.Contains(g.Files, f) })
	case g.Exact != "":
		return strings.Join(strings.Fields(ApprovalCommand(a)), " ") == g.Exact && g.coversDir(a, sandbox)
	case g.Prefix != nil:
		cmd := ApprovalCommand(a)
		words := strings.Fields(cmd)
		return !strings.ContainsAny(cmd, shellSpecial) && len(words) >= len(g.Prefix) && slices.Equal(words[:len(g.Prefix)], g.Prefix) &&
			g.coversDir(a, sandbox)
	}
	// The whole tool: never one of those scoped by their input.
	return g.whole
}

// coversDir reports whether a command's grant g covers a's folder (the
// same, links resolved; a grant or request with none is covered by
// nothing) and a's sandbox (sandbox: a command that may run outside it
// only by a grant given for one). Checked after the command, which is
// cheaper.
func (g Grant) coversDir(a itemmap.Approval, sandbox bool) bool {
	dir, ok := commandDir(a)
	return ok && g.Dir != "" && dir == g.Dir && (!sandbox || !a.Escalated || g.Escalated)
}

// String says what g covers: "`npm test …`", "`rm -rf x`", "Edit of
// a.go", "every mcp__s__t request".
func (g Grant) String() string {
	switch {
	case g.AllEdits:
		return "all edits"
	case g.File != "":
		return g.Tool + " of " + g.File
	case g.Files != nil:
		return "changes to " + strings.Join(g.Files, ", ")
	case g.Exact != "":
		return "`" + g.Exact + "`"
	case g.Prefix != nil:
		return "`" + strings.Join(g.Prefix, " ") + " …`"
	}
	return "every " + g.Tool + " request"
}

// Describe says what g covers, a command with its folder: relative to
// root (the session's folder) when inside it, "the working folder" when
// it is root, else absolute; and "outside the sandbox" when it covers
// that: "`rm -f *` in work/build", "`make …` in the working folder,
// also outside the sandbox".
func (g Grant) Describe(root string) string {
	s := g.String()
	if g.Dir == "" {
		return s
	}
	where := g.Dir
	if r, ok := resolved(root); ok {
		switch rel, err := filepath.Rel(r, g.Dir); {
		case err != nil || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		case rel == ".":
			where = "the working folder"
		default:
			where = filepath.ToSlash(rel)
		}
	}
	s += " in " + where
	if g.Escalated {
		s += ", also outside the sandbox"
	}
	return s
}

// WholeTool is the tool g covers whole, by its name: a grant with no
// command, file or folder to it, of a tool that is neither a command, a
// file nor a patch tool in its CLI's vocabulary (an MCP tool, a web fetch
// and the like); false for every other grant. A CLI may be told such a
// grant as a rule of its own when its rule for a tool's name means
// exactly that tool.
func (g Grant) WholeTool() (string, bool) {
	if !g.whole || g.AllEdits || g.File != "" || g.Files != nil || g.Exact != "" || g.Prefix != nil || g.Tool == "" {
		return "", false
	}
	return g.Tool, true
}

// ApprovalCommand is the command a permission request is about, "" when
// it is not about a command.
func ApprovalCommand(a itemmap.Approval) string {
	var in struct {
		Command json.RawMessage `json:"command"`
	}
	if json.Unmarshal(a.Input, &in) != nil || len(in.Command) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(in.Command, &s) == nil {
		return strings.TrimSpace(s)
	}
	var argv []string
	if json.Unmarshal(in.Command, &argv) == nil {
		return strings.TrimSpace(strings.Join(argv, " "))
	}
	return ""
}

// commandDir is the folder a command's request runs it in, absolute,
// clean and with its links resolved; false when the request does not say
// (Approval.Cwd), or the folder is not absolute or cannot be resolved.
func commandDir(a itemmap.Approval) (string, bool) {
	if a.Cwd == "" || !filepath.IsAbs(a.Cwd) {
		return "", false
	}
	return resolved(a.Cwd)
}

// approvalFile is the file an edit's or read's request is about, "" when
// none.
func approvalFile(a itemmap.Approval) string {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	if json.Unmarshal(a.Input, &in) != nil {
		return ""
	}
	if f := strings.TrimSpace(in.FilePath); f != "" {
		return filepath.Clean(f)
	}
	if f := strings.TrimSpace(in.NotebookPath); f != "" {
		return filepath.Clean(f)
	}
	return ""
}

// patchFiles are the files a Codex file change's request is about, as its
// view names them (sorted, each once); nil when none is known.
func patchFiles(a itemmap.Approval) []string {
	if a.Tool == nil {
		return nil
	}
	var files []string
	for _, d := range a.Tool.Diffs {
		files = append(files, d.Path)
	}
	for _, l := range a.Tool.Locations {
		files = append(files, l.Path)
	}
	for i, f := range files {
		files[i] = strings.TrimSpace(f)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "" })
	slices.Sort(files)
	return slices.Compact(files)
}

// editFiles are the files an edit's request changes, as the request
// names them.
func editFiles(a itemmap.Approval, tools Tools) []string {
	if slices.Contains(tools.Patches, a.ToolName) {
		return patchFiles(a)
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	if json.Unmarshal(a.Input, &in) != nil {
		return nil
	}
	for _, f := range []string{in.FilePath, in.NotebookPath} {
		if f = strings.TrimSpace(f); f != "" {
			return []string{f}
		}
	}
	return nil
}

// grantsRoot reports whether a Codex file change asks for more than its
// files: writes under a whole folder for the rest of the session.
func grantsRoot(a itemmap.Approval) bool {
	var in struct {
		GrantRoot string `json:"grantRoot"`
	}
	return json.Unmarshal(a.Input, &in) == nil && in.GrantRoot != ""
}

// insideAny reports whether file lies inside one of roots (or is one),
// after following the links of both that exist. A relative file is taken
// against the first root (the working folder). A path with a ".." in it
// is never inside: a link before the ".." would lead elsewhere than its
// text says.
func insideAny(file string, roots []string) bool {
	if len(roots) == 0 || slices.Contains(strings.FieldsFunc(filepath.ToSlash(file), func(r rune) bool { return r == '/' }), "..") {
		return false
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(roots[0], file)
	}
	f, ok := resolved(file)
	if !ok {
		return false
	}
	for _, r := range roots {
		root, ok := resolved(r)
		if !ok {
			continue
		}
		rel, err := filepath.Rel(root, f)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// resolved is the absolute path with the links of its longest existing
// part followed (a file an edit creates does not exist yet; its folder
// may be a link); false when it is not absolute or a part that exists
// cannot be followed (a loop, no permission).
func resolved(path string) (string, bool) {
	if !filepath.IsAbs(path) {
		return "", false
	}
	path = filepath.Clean(path)
	var rest []string
	for p := path; ; {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), true
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return "", false
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path, true
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}
