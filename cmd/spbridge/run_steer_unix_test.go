//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"spbridge/internal/fakeapi"
)

// TestE2ERunSteer runs spbridge run on a terminal with the real claude: a
// line typed while the turn runs steers it (the model gets it with the
// turn's next request, after the command's result), and a line starting
// with > is queued and runs as the next turn; the saved conversation holds
// both in order.
func TestE2ERunSteer(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	work := filepath.Dir(e.pkg)
	fifo := filepath.Join(work, "go.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Checking."}, {Type: "tool_use", ID: "toolu_wait", Name: "Bash", Input: map[string]any{"command": "cat " + fifo, "description": "Wait for the go"}}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Blue it is."}}},
		fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Then this."}}})
	cmd := exec.Command(spbridgeBin(t), "run", e.pkg, "--allow-tool", "Bash", "paint it")
	cmd.Env = e.env
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	var out bytes.Buffer
	readUntil(t, master, &out, "Checking.")
	master.Write([]byte("use blue\r"))
	readUntil(t, master, &out, "steered the turn: use blue")
	master.Write([]byte("> and then this\r"))
	readUntil(t, master, &out, "queued: and then this")
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	readUntil(t, master, &out, "Then this.")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	items, history := steerItems(e.conv())
	want := []string{"user: paint it", "assistant: Checking.", "tool", "user: use blue", "assistant: Blue it is.", "user: and then this", "assistant: Then this."}
	if !slices.Equal(items, want) {
		t.Errorf("saved items %q, want %q", items, want)
	}
	if !slices.Contains(history, "user: use blue") {
		t.Errorf("history %q", history)
	}
	var second string
	for _, r := range e.srv.Requests() {
		if strings.Contains(string(r.Body), "toolu_wait") && !strings.Contains(string(r.Body), "and then this") {
			second = strings.Join(userTexts(r.Body), "|") + string(r.Body)
		}
	}
	if !strings.Contains(second, "use blue") {
		t.Error("the request after the command does not carry the steered line")
	}
}
