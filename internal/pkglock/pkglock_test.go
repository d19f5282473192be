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

	"golang.org/x/sys/unix"
)

// helperEnv names the environment variable that turns the test binary into a
// helper process holding the lock on the folder it names.
const helperEnv = "SPBRIDGE_PKGLOCK_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	os.Exit(m.Run())
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
		{"regular file", file, unix.ENOTDIR},
		{"missing", filepath.Join(dir, "missing.silverpoint"), fs.ErrNotExist},
		{"under a file", filepath.Join(file, "agent"), unix.ENOTDIR},
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

func TestFlockHolder(t *testing.T) {
	const locks = `1: POSIX  ADVISORY  WRITE 111 fd:01:5678901 0 EOF
1: -> FLOCK  ADVISORY  WRITE 222 fd:01:5678901 0 EOF
2: FLOCK  ADVISORY  READ 333 fd:01:42 0 EOF
3: OFDLCK ADVISORY  WRITE -1 fd:01:77 0 EOF
4: FLOCK  ADVISORY  WRITE 444 103:1a:5678901 0 EOF
5: FLOCK  ADVISORY  WRITE 12345 fd:01:5678901 0 EOF
6: FLOCK  ADVISORY  WRITE 0 fd:01:99 0 EOF
garbage
7: FLOCK  ADVISORY  WRITE 555 zz:01:5678901 0 EOF
8: LEASE  ACTIVE    READ 666 fd:01:88 0 EOF
`
	tests := []struct {
		name         string
		major, minor uint32
		ino          uint64
		want         int
	}{
		{"holder after posix and waiter lines", 0xfd, 0x01, 5678901, 12345},
		{"other device", 0x103, 0x1a, 5678901, 444},
		{"read lock only", 0xfd, 0x01, 42, 0},
		{"ofd lock only", 0xfd, 0x01, 77, 0},
		{"lease only", 0xfd, 0x01, 88, 0},
		{"pid outside namespace", 0xfd, 0x01, 99, 0},
		{"unknown inode", 0xfd, 0x01, 1, 0},
		{"unknown device", 0xfd, 0x02, 5678901, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := flockHolder(strings.NewReader(locks), tt.major, tt.minor, tt.ino)
			if got != tt.want {
				t.Errorf("flockHolder(%x:%x:%d) = %d, want %d", tt.major, tt.minor, tt.ino, got, tt.want)
			}
		})
	}
}

func TestFormatCmdline(t *testing.T) {
	long := strings.Repeat("a", 150) + "\x00" + strings.Repeat("é", 100) + "\x00"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"args", "spbridge\x00serve\x00--port\x008080\x00", "spbridge serve --port 8080"},
		{"no trailing nul", "spbridge", "spbridge"},
		{"long", long, strings.Repeat("a", 150) + " " + strings.Repeat("é", 24) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatCmdline([]byte(tt.in)); got != tt.want {
				t.Errorf("formatCmdline(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
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
