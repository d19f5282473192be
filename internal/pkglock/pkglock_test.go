package pkglock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"spbridge/internal/statedir"
)

// helperEnv names the environment variable that turns the test binary into a
// helper process holding the lock on the folder it names.
const helperEnv = "SPBRIDGE_PKGLOCK_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	// Holder records go to a state folder of the tests' own (inherited by
	// the helper processes).
	state, err := os.MkdirTemp("", "pkglock-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(statedir.EnvVar, state)
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// runHelper takes the lock on dir, prints "locked", and holds the lock until
// stdin reaches EOF.
func runHelper(dir string) int {
	l, err := Acquire(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := l.Unlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// mustAcquire takes the lock on dir and releases it when the test ends.
func mustAcquire(t *testing.T, dir string) *Lock {
	t.Helper()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", dir, err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
	return l
}

// heldError checks that err is a *HeldError for dir matching ErrLocked and
// returns it.
func heldError(t *testing.T, err error, dir string) *HeldError {
	t.Helper()
	if err == nil {
		t.Fatalf("Acquire(%q) succeeded while the lock was held", dir)
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Acquire(%q) = %v, want an error matching ErrLocked", dir, err)
	}
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire(%q) = %T %v, want *HeldError", dir, err, err)
	}
	if held.Path != dir {
		t.Errorf("HeldError.Path = %q, want %q", held.Path, dir)
	}
	return held
}

func TestAcquireTwiceInProcess(t *testing.T) {
	dir := t.TempDir()
	mustAcquire(t, dir)

	l, err := Acquire(dir)
	if l != nil {
		t.Errorf("second Acquire returned a lock")
		_ = l.Unlock()
	}
	held := heldError(t, err, dir)
	if held.PID != os.Getpid() {
		t.Errorf("HeldError.PID = %d, want our pid %d", held.PID, os.Getpid())
	}
	if exe := filepath.Base(os.Args[0]); !strings.Contains(held.Command, exe) {
		t.Errorf("HeldError.Command = %q, want it to contain %q", held.Command, exe)
	}
	want := fmt.Sprintf("package %s is in use by pid %d (", dir, os.Getpid())
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q, want prefix %q", err, want)
	}
}

func TestAcquireHeldByOtherProcess(t *testing.T) {
	dir := t.TempDir()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
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
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "locked\n" {
			t.Fatalf("helper said %q, want %q", s, "locked\n")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("helper did not report holding the lock")
	}

	_, err = Acquire(dir)
	held := heldError(t, err, dir)
	if held.PID != cmd.Process.Pid {
		t.Errorf("HeldError.PID = %d, want helper pid %d", held.PID, cmd.Process.Pid)
	}
	if exe := filepath.Base(os.Args[0]); !strings.Contains(held.Command, exe) {
		t.Errorf("HeldError.Command = %q, want it to contain %q", held.Command, exe)
	}

	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	waited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	mustAcquire(t, dir)
}

func TestUnlock(t *testing.T) {
	dir := t.TempDir()
	l := mustAcquire(t, dir)
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	l2 := mustAcquire(t, dir)
	if err := l2.Unlock(); err != nil {
		t.Fatalf("Unlock after reacquiring: %v", err)
	}
	var nilLock *Lock
	if err := nilLock.Unlock(); err != nil {
		t.Fatalf("Unlock of nil Lock: %v", err)
	}
}

func TestLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "document.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		t.Helper()
		var names []string
		err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
			names = append(names, path)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := list()

	l := mustAcquire(t, dir)
	if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v, want ErrLocked", err)
	}
	if during := list(); !slices.Equal(during, before) {
		t.Errorf("while locked the package holds %q, want %q", during, before)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if after := list(); !slices.Equal(after, before) {
		t.Errorf("after Unlock the package holds %q, want %q", after, before)
	}
}

func TestAcquireBadPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "Poster.silverpoint")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want error
	}{
		{"regular file", file, errNotDir},
		{"missing", filepath.Join(dir, "missing.silverpoint"), fs.ErrNotExist},
		{"under a file", filepath.Join(file, "agent"), errNotDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Acquire(tt.path)
			if err == nil {
				_ = l.Unlock()
				t.Fatalf("Acquire(%q) succeeded", tt.path)
			}
			if errors.Is(err, ErrLocked) {
				t.Errorf("Acquire(%q) = %v, which matches ErrLocked", tt.path, err)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Acquire(%q) = %v, want an error matching %v", tt.path, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name %q", err, tt.path)
			}
		})
	}
}

func TestFormatCommand(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"empty", nil, ""},
		{"args", []string{"spbridge", "serve", "--port", "8080"}, "spbridge serve --port 8080"},
		{"long", []string{strings.Repeat("a", 150), strings.Repeat("é", 100)}, strings.Repeat("a", 150) + " " + strings.Repeat("é", 24) + "..."},
		{"invalid utf-8", []string{"a\xffb"}, "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatCommand(tt.in); got != tt.want {
				t.Errorf("formatCommand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRecord checks the holder record: written in the state folder while the
// lock is held, keyed by the package's real path (a link to the package
// finds it), removed at Unlock.
func TestRecord(t *testing.T) {
	state := os.Getenv(statedir.EnvVar)
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link.silverpoint")
	if err := os.Symlink(dir, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	l := mustAcquire(t, dir)
	records, _ := filepath.Glob(filepath.Join(state, "locks", "*.json"))
	if len(records) != 1 {
		t.Fatalf("records while locked = %q, want one", records)
	}
	r, ok := readRecord(records[0])
	if !ok || r.PID != os.Getpid() || r.Package == "" {
		t.Errorf("record = %+v, %v; want our pid and the package", r, ok)
	}
	_, err := Acquire(link)
	if held := heldError(t, err, link); held.PID != os.Getpid() {
		t.Errorf("through a link: HeldError.PID = %d, want %d", held.PID, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if records, _ := filepath.Glob(filepath.Join(state, "locks", "*.json")); len(records) != 0 {
		t.Errorf("records after Unlock = %q, want none", records)
	}
}

// TestStaleRecord checks that a record left by a process that is gone names
// nobody, and that the next holder replaces it.
func TestStaleRecord(t *testing.T) {
	state := os.Getenv(statedir.EnvVar)
	dir := t.TempDir()
	key, real, err := packageKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A pid that is not running: a child that has been reaped.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	locks := filepath.Join(state, "locks")
	path := filepath.Join(locks, key+".json")
	if err := writeRecord(locks, path, record{PID: dead, Command: "spbridge serve", Package: real}); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, dir)
	if r, ok := readRecord(path); !ok || r.PID != os.Getpid() {
		t.Errorf("record after Acquire = %+v, want ours (the stale one replaced)", r)
	}
	// Held, but by a process whose record is stale: unknown holder.
	if err := writeRecord(locks, path, record{PID: dead, Command: "spbridge serve", Package: real}); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if held := heldError(t, err, dir); held.PID != 0 || held.Command != "" {
		t.Errorf("HeldError with a stale record = %+v, want no pid and no command", held)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestHeldErrorMessage(t *testing.T) {
	tests := []struct {
		err  HeldError
		want string
	}{
		{HeldError{Path: "/x/Poster.silverpoint", PID: 1234, Command: "spbridge serve"}, "package /x/Poster.silverpoint is in use by pid 1234 (spbridge serve)"},
		{HeldError{Path: "/x", PID: 1234}, "package /x is in use by pid 1234"},
		{HeldError{Path: "/x"}, "package /x is in use by another process"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(&tt.err, ErrLocked) {
			t.Errorf("%q does not match ErrLocked", tt.want)
		}
		if errors.Is(&tt.err, fs.ErrExist) {
			t.Errorf("%q matches fs.ErrExist", tt.want)
		}
	}
}
