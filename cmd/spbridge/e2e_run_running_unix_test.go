//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"spbridge/internal/fakeapi"
)

// TestE2ERunCommandShown runs spbridge run on terminals 40 and 101 columns
// wide with the real claude (Bash allowed by --allow-tool) and the real
// codex (a command its sandbox runs without asking), each running a
// command right after the model's text: the status line names the tool
// and counts the command's time while it runs, its [running] line comes
// once it ran a second, and the screen at the end holds no row wider than
// the terminal and no row of a status line.
func TestE2ERunCommandShown(t *testing.T) {
	t.Parallel()
	for _, cli := range []string{"claude", "codex"} {
		for _, width := range []int{40, 101} {
			t.Run(cli+"/"+strconv.Itoa(width), func(t *testing.T) {
				t.Parallel()
				// The command waits on a FIFO, so it runs until the test
				// has seen what it shows.
				fifo := filepath.Join(t.TempDir(), "go.fifo")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Fatal(err)
				}
				if cli == "claude" {
					e := newE2E(t,
						fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Waiting for the build."}, {Type: "tool_use", ID: "toolu_wait", Name: "Bash", Input: map[string]any{"command": "cat " + fifo, "description": "Wait for the build"}}}},
						fakeapi.Reply{Blocks: []fakeapi.Block{{Text: "Built."}}})
					runShown(t, e, width, fifo, "Bash", "--allow-tool", "Bash")
					return
				}
				e, _ := newCodexE2E(t,
					fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Waiting for the build."), fakeapi.ExecCommandCall("cat " + fifo)}},
					fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Built.")}})
				runShown(t, e, width, fifo, "shell", "--backend", "codex")
			})
		}
	}
}

// runShown runs the turn of TestE2ERunCommandShown on a terminal width
// columns wide and checks what it shows.
func runShown(t *testing.T, e *e2e, width int, fifo, tool string, args ...string) {
	t.Helper()
	cmd := exec.Command(spbridgeBin(t), append(append([]string{"run", e.pkg}, args...), "build it")...)
	cmd.Env = append(e.env, "NO_COLOR=1")
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: uint16(width)})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	var out bytes.Buffer
	readUntil(t, master, &out, "Waiting for the build.")
	status := regexp.MustCompile("… running " + tool + " [^\r\n]*\\(\\d+s\\)")
	readUntilMatch(t, master, &out, status)
	readUntil(t, master, &out, "[running]")
	readUntilMatch(t, master, &out, status, out.Len())
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("go\n"))
	w.Close()
	readUntil(t, master, &out, "Built.")
	readUntil(t, master, &out, "── turn")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%q", err, out.String())
	}
	rows := screen(out.String(), width)
	checkRows(t, rows, width)
	joined := strings.Join(rows, "")
	if !strings.Contains(joined, "[succeeded]") || !strings.Contains(joined, "[running]") {
		t.Errorf("screen:\n%s", strings.Join(rows, "\n"))
	}
}
