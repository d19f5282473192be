package itemmap

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestClaudeCommandFolder: a shell tool's permission request (Bash,
// Monitor, PowerShell) of the main session carries the folder the process
// started in (its init's cwd: every command starts there, the claude
// backend sees to that), and whether it asked to run outside Claude Code's
// sandbox. A subagent's request (agent_id), any
// request before the init, and every request after a call that moves the
// session to another folder (EnterWorktree, asked about or not) carry no
// folder: spbridge cannot know it. The mapper of the session's next process
// is told so (ForgetFolder).
func TestClaudeCommandFolder(t *testing.T) {
	tool := func(id, name, input string) string {
		return fmt.Sprintf(`{"type":"assistant","message":{"id":"msg_%s","role":"assistant","model":"m1","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}]},"parent_tool_use_id":null}`, id, id, name, input)
	}
	ask := func(id, input, extra string) string {
		return fmt.Sprintf(`{"type":"control_request","request_id":"req_%s","request":{"subtype":"can_use_tool","tool_name":"Bash","input":%s,"tool_use_id":%q%s}}`, id, input, id, extra)
	}
	const rm = `{"command":"rm -f *"}`
	lines := []string{
		ask("early", rm, ""),
		`{"type":"system","subtype":"init","session_id":"s1","model":"m1","cwd":"/w/project"}`,
		tool("a", "Bash", rm), ask("a", rm, ""),
		tool("cd", "Bash", `{"command":"cd .."}`),
		tool("b", "Bash", rm), ask("b", rm, ""),
		tool("out", "Bash", `{"command":"rm -f *","dangerouslyDisableSandbox":true}`), ask("out", `{"command":"rm -f *","dangerouslyDisableSandbox":true}`, ""),
		strings.Replace(ask("mon", `{"command":"tail -f log"}`, ""), `"Bash"`, `"Monitor"`, 1),
		ask("sub", rm, `,"agent_id":"agent_1"`),
		tool("wt", "EnterWorktree", `{"name":"x"}`),
		tool("c", "Bash", rm), ask("c", rm, ""),
	}
	m := NewClaude(SequentialIDs())
	var got []string
	for _, line := range lines {
		r := m.Line([]byte(line))
		checkResult(t, r)
		for _, a := range r.Approvals {
			got = append(got, fmt.Sprintf("%s %q %v", a.ToolUseID, a.Cwd, a.Escalated))
		}
	}
	want := []string{`early "" false`, `a "/w/project" false`, `b "/w/project" false`, `out "/w/project" true`, `mon "/w/project" false`, `sub "" false`, `c "" false`}
	if !slices.Equal(got, want) {
		t.Errorf("approvals\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !m.FolderMoved() {
		t.Error("FolderMoved after EnterWorktree: false")
	}
	next := NewClaude(SequentialIDs())
	next.ForgetFolder()
	next.Line([]byte(lines[1]))
	r := next.Line([]byte(ask("d", rm, "")))
	if len(r.Approvals) != 1 || r.Approvals[0].Cwd != "" {
		t.Errorf("the next process's request after the session moved: %+v", r.Approvals)
	}
}

// TestClaudeSubagentCommandFolder: on the real Claude Code's stream, a
// background subagent's Bash request carries its agent_id, and so no
// folder.
func TestClaudeSubagentCommandFolder(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude", "tool_agent_background_permission.stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := NewClaude(SequentialIDs())
	var got []Approval
	for line := range bytes.Lines(data) {
		got = append(got, m.Line(bytes.TrimSuffix(line, []byte("\n"))).Approvals...)
	}
	if len(got) != 1 || got[0].ToolName != "Bash" || got[0].Cwd != "" {
		t.Errorf("approvals %+v, want the subagent's Bash with no folder", got)
	}
}
