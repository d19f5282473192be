package secretfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// writerEnv makes the test binary a writer: it writes a file in the state
// folder the variable names, prints the file's path and waits for its
// stdin to close.
const writerEnv = "SPBRIDGE_SECRETFILE_WRITER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(writerEnv); dir != "" {
		f, err := Write(dir, "mcp.json", []byte(`{"token":"s3cret"}`))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(f.Path)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// writer starts a process that wrote a file in state and holds it; it
// returns the process and the file's path, once written.
func writer(t *testing.T, state string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+state)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	path, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the writer printed no path: %v", err)
	}
	return cmd, strings.TrimSpace(path)
}

// deadPID is the pid of a process that ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestWrite: the file holds the data, is private in a private folder, is
// named by this process's pid, and Remove removes it (twice is fine).
func TestWrite(t *testing.T) {
	state := t.TempDir()
	// A run folder that exists already, open to all, is made private.
	if err := os.Mkdir(filepath.Join(state, Folder), 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := Write(state, "mcp.json", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(f.Path); err != nil || string(data) != "secret" {
		t.Fatalf("read %s: %q, %v", f.Path, data, err)
	}
	base := filepath.Base(f.Path)
	if filepath.Dir(f.Path) != filepath.Join(state, Folder) || !strings.HasPrefix(base, strconv.Itoa(os.Getpid())+"-") || !strings.HasSuffix(base, "-mcp.json") {
		t.Errorf("path %s: want %s/<pid>-…-mcp.json", f.Path, filepath.Join(state, Folder))
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{f.Path: 0o600, filepath.Dir(f.Path): 0o700} {
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v, %v; want %v", path, st.Mode().Perm(), err, want)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(f.Path))
	if len(entries) != 1 {
		t.Errorf("run folder holds %d files, want the one", len(entries))
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if exists(f.Path) {
		t.Error("the file outlived Remove")
	}
	if err := f.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestSweep: the files of a process that ended go, half-written ones too;
// the files of processes that run stay (this one's, another writer's and
// one being written), and so do files spbridge did not name.
func TestSweep(t *testing.T) {
	state := t.TempDir()
	run := filepath.Join(state, Folder)
	if n, err := Sweep(state); n != 0 || err != nil {
		t.Fatalf("Sweep of no run folder = %d, %v", n, err)
	}
	mine, err := Write(state, "mcp.json", []byte("mine"))
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Remove()
	_, theirs := writer(t, state)
	dead := strconv.Itoa(deadPID(t))
	live := strconv.Itoa(os.Getppid())
	put := func(name string) string {
		path := filepath.Join(run, name)
		if err := os.WriteFile(path, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gone := []string{put(dead + "-aaaa-mcp.json"), put("." + dead + "-bbbb-mcp.json")}
	kept := []string{mine.Path, theirs, put("notes.txt"), put("x-mcp.json"), put("." + live + "-cccc-mcp.json")}
	// A whole file of a live pid that nobody holds: the pid was used
	// again after its writer ended. Only Unix can tell.
	reused := put(live + "-dddd-mcp.json")
	if runtime.GOOS == "windows" {
		kept = append(kept, reused)
	} else {
		gone = append(gone, reused)
	}
	n, err := Sweep(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gone {
		if exists(p) {
			t.Errorf("%s was kept", filepath.Base(p))
		}
	}
	for _, p := range kept {
		if !exists(p) {
			t.Errorf("%s was removed", filepath.Base(p))
		}
	}
	if n != len(gone) {
		t.Errorf("Sweep = %d, want %d", n, len(gone))
	}
}

// TestSweepKilled: the file of a writer killed with SIGKILL (which removes
// nothing) is kept while the writer runs and removed by the next Sweep.
func TestSweepKilled(t *testing.T) {
	state := t.TempDir()
	cmd, path := writer(t, state)
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "s3cret") {
		t.Fatalf("the writer's file: %q, %v", data, err)
	}
	if n, err := Sweep(state); n != 0 || err != nil || !exists(path) {
		t.Fatalf("Sweep while the writer runs = %d, %v; file there: %v", n, err, exists(path))
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !exists(path) {
		t.Fatal("the killed writer's file is gone before any Sweep: the test shows nothing")
	}
	if n, err := Sweep(state); n != 1 || err != nil {
		t.Errorf("Sweep after the kill = %d, %v; want 1", n, err)
	}
	if exists(path) {
		t.Error("the killed writer's file outlived the Sweep")
	}
}

// TestSweepKillCycles: writers killed with SIGKILL at any point, before,
// while or after they write (half of them once their file is whole), leave
// nothing that the next Sweep does not remove.
func TestSweepKillCycles(t *testing.T) {
	const cycles = 200
	state := t.TempDir()
	whole := 0
	for i := range cycles {
		var cmd *exec.Cmd
		if i%2 == 0 {
			cmd, _ = writer(t, state)
			whole++
		} else {
			cmd = exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), writerEnv+"="+state)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if _, err := Sweep(state); err != nil {
			t.Fatal(err)
		}
		if entries, _ := os.ReadDir(filepath.Join(state, Folder)); len(entries) != 0 {
			t.Fatalf("cycle %d: %d files left after the Sweep, first %s", i, len(entries), entries[0].Name())
		}
	}
	t.Logf("%d writers killed, %d of them once their file was whole", cycles, whole)
}
