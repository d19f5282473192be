package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
)

// hangGuard bounds the wait for an exit that is expected: it is reached
// only when the command hangs.
const hangGuard = 2 * time.Minute

// fullPipe is a pipe whose buffer is already full: a process that writes
// to it blocks until the test reads.
func fullPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	fd := int(w.Fd()) // (Fd puts the file in blocking mode: once)
	syscall.SetNonblock(fd, true)
	chunk := make([]byte, 4096)
	for {
		if _, err := syscall.Write(fd, chunk); err != nil {
			break
		}
	}
	syscall.SetNonblock(fd, false)
	return r, w
}

// blockedWriting reports whether a thread of process pid waits to write to
// a pipe.
func blockedWriting(pid int) bool { return blockedIn(pid, "pipe_write") }

// blockedIn reports whether a thread of process pid waits in the kernel
// function named wchan (or one whose name holds it).
func blockedIn(pid int, wchan string) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name()))
		if strings.Contains(string(w), wchan) {
			return true
		}
	}
	return false
}

// TestInterruptRunReadingStdin: run reading its message from standard input
// (run PKG -) ends at once on SIGINT or SIGTERM; before, it went on waiting
// for the input's end.
func TestInterruptRunReadingStdin(t *testing.T) {
	bin := spbridgeBin(t)
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	pkg := newPackage(t)
	for _, sc := range signalCases {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", pkg, "-")
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stderr = r, &stderr
		s := start(t, cmd)
		r.Close()
		w.WriteString("Make the headline shorter") // and no end: the input stays open
		// The event: run waits for more of its input.
		for !blockedIn(cmd.Process.Pid, "pipe_read") && !s.ended() {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(sc.sig)
		if code := waitExit(t, s, "run - "+sc.sig.String()); code != sc.code || stderr.String() != sc.line {
			t.Errorf("run - %s: exit %d, stderr %q; want %d, %q", sc.sig, code, stderr.String(), sc.code, sc.line)
		}
		w.Close()
		if _, err := os.Lstat(filepath.Join(pkg, archive.AgentDir)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("run - %s: the package changed: %v", sc.sig, err)
		}
	}
}

// started is a command started, and closed when it has ended.
type started struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	cmd.Env = append(os.Environ(), "GORACE="+noExitSleep)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd, make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	return s
}

func (s *started) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitExit waits for the command to end and returns its exit code, failing
// the test when it does not end within hangGuard.
func waitExit(t *testing.T, s *started, what string) int {
	t.Helper()
	cmd, done := s.cmd, s.done
	select {
	case <-done:
	case <-time.After(hangGuard):
		cmd.Process.Kill()
		<-done
		t.Errorf("%s: still running %v after the signal", what, hangGuard)
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// signalCases are the signals spbridge ends on, with the exit code and the
// line it ends with.
var signalCases = []struct {
	sig  syscall.Signal
	code int
	line string
}{
	{syscall.SIGINT, 130, "spbridge: interrupted\n"},
	{syscall.SIGTERM, 143, "spbridge: terminated (SIGTERM)\n"},
}

// TestInterruptReadingCommands: every command that reads ends at once on
// SIGINT and on SIGTERM, with 130 or 143 and one line saying so, even while
// it waits to write its output (here to a pipe nobody reads). Before, it
// took the signal and went on, waiting forever.
func TestInterruptReadingCommands(t *testing.T) {
	bin := spbridgeBin(t)
	state := t.TempDir()
	cliStores(t)
	pkg := newPackage(t)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	u := archive.ItemFromMap(map[string]any{"id": "0D7E8C55-0F3A-4E7B-8D61-2B9A0C1D2E30", "type": archive.TypeUser, "text": "Make a card"})
	a := archive.ItemFromMap(map[string]any{"id": "A1", "type": archive.TypeAssistant, "text": "Made a card."})
	p.Conv.Items = append(p.Conv.Items, u, a)
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SPBRIDGE_STATE_DIR", state)
	log, _ := audit.Path(state, u.ID())
	if err := audit.Append(log, map[string]any{"user": "Make a card", "status": "completed"}); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"fsck", pkg},
		{"transcript", pkg},
		{"conversation", "show", pkg},
		{"conversation", "list", filepath.Dir(pkg)},
		{"conversation", "list", "--cli"},
		{"audit", "verify", pkg},
		{"audit", "show", pkg},
		{"audit", "head"},
		{"version"},
	}
	for _, args := range commands {
		for _, sc := range signalCases {
			what := strings.Join(args, " ") + " " + sc.sig.String()
			_, w := fullPipe(t)
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = w, &stderr
			s := start(t, cmd)
			// The event: the command has done its work and waits to
			// write its output.
			for !blockedWriting(cmd.Process.Pid) && !s.ended() {
				time.Sleep(time.Millisecond)
			}
			cmd.Process.Signal(sc.sig)
			if code := waitExit(t, s, what); code != sc.code || stderr.String() != sc.line {
				t.Errorf("%s: exit %d, stderr %q; want %d, %q", what, code, stderr.String(), sc.code, sc.line)
			}
		}
	}
}

// TestAuditVerifyHeadsFIFORefused: --heads naming a FIFO that nobody writes
// to is refused at once as not a regular file (before, the open waited for
// a writer forever), and so is a device; and run's --image.
func TestAuditVerifyHeadsFIFORefused(t *testing.T) {
	bin := spbridgeBin(t)
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	fifo := filepath.Join(t.TempDir(), "heads")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, heads := range []string{fifo, "/dev/zero"} {
		cmd := exec.Command(bin, "audit", "verify", "--heads", heads)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if code := waitExit(t, start(t, cmd), "audit verify --heads "+heads); code != 1 || !strings.Contains(stderr.String(), "not a regular file") {
			t.Errorf("--heads %s: exit %d, stderr %q", heads, code, stderr.String())
		}
	}
	// So is an image for run: its read waited as well.
	cmd := exec.Command(bin, "run", newPackage(t), "Describe it", "--image", fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code := waitExit(t, start(t, cmd), "run --image FIFO"); code != 1 || !strings.Contains(stderr.String(), "not a regular file (a FIFO)") {
		t.Errorf("run --image FIFO: exit %d, stderr %q", code, stderr.String())
	}
}

// bigClaudeSession writes a Claude Code session file of n user messages of
// size bytes each, in a folder of its own.
func bigClaudeSession(t *testing.T, n, size int) string {
	t.Helper()
	const sid = "5d0c6a54-5b1e-4b8e-9a57-1f0f3c1e2d3a"
	path := filepath.Join(t.TempDir(), sid+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := strings.Repeat("All work and no play. ", size/22)
	fmt.Fprintf(f, `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-12-02T05:37:37.603Z","sessionId":"%s","content":"0"}`+"\n", sid)
	parent := "null"
	for i := range n {
		uuid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		fmt.Fprintf(f, `{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":"%d %s"},"uuid":"%s","timestamp":"2026-12-02T05:37:37.694Z","cwd":"/work/project","sessionId":"%s","version":"2.1.328"}`+"\n",
			parent, i, text, uuid, sid)
		parent = `"` + uuid + `"`
	}
	return path
}

// TestInterruptImportLeavesNoConversation: SIGINT or SIGTERM while import
// writes the package ends it with 130 or 143, and the package is as it was:
// no agent folder, no image, no temporary file. (Before, import went on
// and wrote the conversation.)
func TestInterruptImportLeavesNoConversation(t *testing.T) {
	bin := spbridgeBin(t)
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	session := bigClaudeSession(t, 60, 1<<20)
	for _, sc := range signalCases {
		pkg := newPackage(t)
		before := snapshotDir(t, pkg)
		cmd := exec.Command(bin, "import", session, pkg)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		s := start(t, cmd)
		// The event: the conversation's temporary file appears (the
		// session has been read; the package is being written).
		agent := filepath.Join(pkg, archive.AgentDir)
		for !writingTemp(agent) && !s.ended() {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(sc.sig)
		code := waitExit(t, s, "import "+sc.sig.String())
		if code != sc.code || !strings.Contains(stderr.String(), sc.line[len("spbridge: "):len(sc.line)-1]+"; "+pkg+" is as it was") {
			t.Errorf("import %s: exit %d, stderr %q, stdout %q", sc.sig, code, stderr.String(), stdout.String())
		}
		if _, err := os.Lstat(agent); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("import %s: %s is left (%v): %v", sc.sig, agent, err, snapshotDir(t, pkg))
		}
		if after := snapshotDir(t, pkg); len(after) != len(before) {
			t.Errorf("import %s: the package changed: %v", sc.sig, after)
		}
	}
}

// writingTemp reports whether a temporary file of a save is in dir.
func writingTemp(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".spbridge-tmp-") {
			return true
		}
	}
	return false
}

// TestInterruptSaveLeavesOldConversation: SIGINT or SIGTERM while save
// rewrites a large conversation ends it with 130 or 143, and the
// conversation is the one the package held, byte for byte, with no
// temporary file left. (Before, save went on and wrote the new one.)
func TestInterruptSaveLeavesOldConversation(t *testing.T) {
	bin := spbridgeBin(t)
	t.Setenv("SPBRIDGE_STATE_DIR", t.TempDir())
	pkg := newPackage(t)
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("All work and no play. ", 1<<20/22)
	for i := range 60 {
		p.Conv.Items = append(p.Conv.Items, archive.ItemFromMap(map[string]any{"id": fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "type": archive.TypeUser, "text": fmt.Sprint(i, text)}))
		p.Conv.History = append(p.Conv.History, archive.Message{Role: "user", Content: []archive.Block{archive.NewTextBlock(fmt.Sprint(i, text))}})
	}
	if _, err := p.Save(true); err != nil {
		t.Fatal(err)
	}
	p = nil
	// A space after the JSON: the same conversation, not in canonical
	// form, which save rewrites.
	conv := filepath.Join(pkg, archive.AgentDir, archive.ConversationFile)
	f, err := os.OpenFile(conv, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" ")
	f.Close()
	for _, sc := range signalCases {
		before := snapshotDir(t, pkg)
		cmd := exec.Command(bin, "save", pkg)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		s := start(t, cmd)
		// The event: the new conversation's temporary file appears.
		agent := filepath.Join(pkg, archive.AgentDir)
		for !writingTemp(agent) && !s.ended() {
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(sc.sig)
		code := waitExit(t, s, "save "+sc.sig.String())
		if code != sc.code || !strings.Contains(stderr.String(), sc.line[len("spbridge: "):len(sc.line)-1]+"; "+pkg+" is as it was") {
			t.Errorf("save %s: exit %d, stderr %q, stdout %q", sc.sig, code, stderr.String(), stdout.String())
		}
		after := snapshotDir(t, pkg)
		if len(after) != len(before) || after[conv] != before[conv] {
			t.Errorf("save %s: the package changed (%d files, was %d; conversation.json the same: %v)", sc.sig, len(after), len(before), after[conv] == before[conv])
		}
	}
}
