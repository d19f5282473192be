//go:build unix

package claude

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestProjectCommandsSkipFIFO: a FIFO among a folder's .claude/commands
// (a folder nobody trusted yet may hold one) is skipped at once; before,
// reading it waited for a writer forever, and the session with it.
func TestProjectCommandsSkipFIFO(t *testing.T) {
	dir := t.TempDir()
	cmds := filepath.Join(dir, ".claude", "commands")
	os.MkdirAll(cmds, 0o755)
	os.WriteFile(filepath.Join(cmds, "fix.md"), []byte("Fix the build\n"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(cmds, "stall.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() { got <- len(ProjectCommands(dir)) }()
	select {
	case n := <-got:
		if n != 1 {
			t.Errorf("%d commands, want fix alone", n)
		}
	case <-time.After(time.Minute): // only when it hangs
		t.Fatal("ProjectCommands waits on the FIFO")
	}
}
