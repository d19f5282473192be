package itemmap

import (
	"bytes"
	"os"
	"testing"
)

func TestCodexRefusal(t *testing.T) {
	for _, c := range []struct {
		out, reason string
		ok          bool
	}{
		{"exec_command failed: CreateProcess { message: \"Rejected(\\\"`/bin/bash -lc 'rm -f gone.txt'` rejected: policy forbids commands starting with `rm`\\\")\" }", "policy forbids commands starting with `rm`", true},
		{"exec_command failed: CreateProcess { message: \"Rejected(\\\"approval required by policy, but AskForApproval is set to Never\\\")\" }", "approval required by policy, but AskForApproval is set to Never", true},
		{"shell failed: CreateProcess { message: \"Rejected(\\\"say \\\\\\\"no\\\\\\\"\\\\nnow \\\\u{e9}\\\")\" }", "say \"no\"\nnow é", true},
		{"approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never", "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never", true},
		{"patch rejected: writing outside of the project; rejected by user approval settings", "writing outside of the project; rejected by user approval settings", true},
		// Not refusals: a command that ran, output that only mentions one,
		// a message that is cut.
		{"Chunk ID: 27275a\nProcess exited with code 1\nOutput:\ntouch: cannot touch 'x': Read-only file system\n", "", false},
		{"Output:\nexec_command failed: CreateProcess { message: \"Rejected(\\\"x\\\")\" }", "", false},
		{"exec_command failed: CreateProcess { message: \"Rejected(\\\"x", "", false},
		{"exec_command failed: CreateProcess { message: \"No such file\" }", "", false},
		{"unsupported call: shell_command", "", false},
	} {
		reason, ok := CodexRefusal(c.out)
		if ok != c.ok || reason != c.reason {
			t.Errorf("CodexRefusal(%q) = %q, %v; want %q, %v", c.out, reason, ok, c.reason, c.ok)
		}
	}
}

// TestCodexExecLogTimings: however far codex's log is ahead of what codex
// exec printed, the refused calls show in the turn's order, as when the log
// is read whole first (the golden); a log read only at the turn's end
// still shows each of them, after what codex exec printed.
func TestCodexExecLogTimings(t *testing.T) {
	stream, err := os.ReadFile("../../testdata/codex/exec/refused_commands.stdout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile("../../testdata/codex/exec/refused_commands.rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := runCodex(t, bytes.NewReader(stream), false, log).golden()
	lines := bytes.Split(bytes.TrimSpace(stream), []byte("\n"))
	logLines := bytes.Split(bytes.TrimSpace(log), []byte("\n"))
	// What the log holds at the least when codex exec prints a line: up
	// to the model's call of a command it runs, everything before the
	// turn's end; a message may be printed before it is logged.
	index := func(marker string) int {
		for i, l := range logLines {
			if bytes.Contains(l, []byte(marker)) {
				return i
			}
		}
		t.Fatalf("no log line has %s", marker)
		return 0
	}
	least := map[int]int{
		2: index(`"output_text","text":"Cleaning up first."`),
		3: index(`"call_id":"call_ls"`) + 1,
		5: index(`"output_text","text":"Three of them were refused."`),
		6: len(logLines),
	}
	for _, ahead := range []int{0, 1, 2, 5, len(logLines)} {
		m := NewCodex(SequentialIDs())
		p := &panel{}
		next := 0
		for i, line := range lines {
			for next < min(max(least[i], next)+ahead, len(logLines)) && (ahead > 0 || next < least[i]) {
				p.apply(t, m.ExecLog(logLines[next]))
				next++
			}
			p.apply(t, m.Line(line))
		}
		if got := p.golden(); !bytes.Equal(got, want) {
			t.Errorf("the log %d lines ahead: items differ from the golden:\n%s", ahead, got)
		}
	}
	// The whole log only before turn.completed.
	m := NewCodex(SequentialIDs())
	p := &panel{}
	for i, line := range lines {
		if i == len(lines)-1 {
			for _, l := range logLines {
				p.apply(t, m.ExecLog(l))
			}
		}
		p.apply(t, m.Line(line))
	}
	var denied []string
	for _, it := range p.items {
		if it.String("status") == "denied" {
			denied = append(denied, it.String("summary"))
		}
	}
	if len(denied) != 3 || p.items[len(p.items)-1].String("status") != "denied" {
		t.Errorf("a late log: denied %q, last item %v", denied, p.items[len(p.items)-1].Map())
	}
}
