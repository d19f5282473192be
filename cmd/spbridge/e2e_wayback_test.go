package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EShowWayBack: after a turn with the real claude, conversation show
// names the CLI session the conversation ran on and the command that
// continues it in a terminal, in its folder (--json too, as
// lastCLISession); that command continues the same session: the real
// claude, run as it says, gets the earlier messages.
func TestE2EShowWayBack(t *testing.T) {
	t.Parallel()
	e := newE2E(t,
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "First answer."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Answered in the terminal."}}},
	)
	e.run(nil, "first words")
	show := func(args ...string) string {
		cmd := exec.Command(spbridgeBin(t), append([]string{"conversation", "show", e.pkg}, args...)...)
		cmd.Env = e.env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("conversation show: %v\n%s", err, out)
		}
		return string(out)
	}
	text := show()
	_, line, ok := strings.Cut(text, "\nLast ran on claude session ")
	id, cmdLine, ok2 := strings.Cut(strings.TrimSpace(line), "; continue it in a terminal: ")
	work := filepath.Dir(e.pkg)
	if !ok || !ok2 || cmdLine != "cd "+shellQuote(work)+" && claude --resume "+id {
		t.Fatalf("conversation show:\n%s", text)
	}
	var v struct {
		Last wayBack `json:"lastCLISession"`
	}
	if err := json.Unmarshal([]byte(show("--json")), &v); err != nil || v.Last != (wayBack{Backend: "claude", ID: id, Cwd: work, Held: true, ContinueCommand: "claude --resume " + id}) {
		t.Errorf("--json: %+v %v", v.Last, err)
	}
	// The command continues the session: claude, run in that folder
	// with --resume ID (and -p, as a script runs it), sends the earlier
	// turn with the new message.
	cmd := exec.Command(fakeapi.ClaudePath(t), "--resume", id, "-p", "and from the terminal")
	cmd.Env, cmd.Dir = e.env, work
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Answered in the terminal.") {
		t.Fatalf("claude --resume: %v\n%s", err, out)
	}
	reqs := e.srv.Requests()
	sent := strings.Join(userTexts(reqs[len(reqs)-1].Body), "\n")
	if !strings.Contains(sent, "first words") || !strings.Contains(sent, "and from the terminal") {
		t.Errorf("claude --resume sent %q", sent)
	}
}
