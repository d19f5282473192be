package supervise

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"testing"
)

func TestMode(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		got, err := decodeMode(encodeMode(n))
		if err != nil || got != n {
			t.Errorf("decodeMode(encodeMode(%d)) = %d, %v, want %d, nil", n, got, err, n)
		}
	}
	for _, v := range []string{"", "1", "1:", "2:0", "1:-1", "1:x", "1:100000"} {
		if n, err := decodeMode(v); err == nil {
			t.Errorf("decodeMode(%q) = %d, nil, want an error", v, n)
		}
	}
}

func TestStartMessage(t *testing.T) {
	pid, err := decodeStart(encodeStart(4321, nil), "/bin/x")
	if pid != 4321 || err != nil {
		t.Errorf("decodeStart(ok 4321) = %d, %v, want 4321, nil", pid, err)
	}

	_, err = decodeStart(encodeStart(0, &fs.PathError{Op: "fork/exec", Path: "/no/such", Err: syscall.ENOENT}), "/no/such")
	var se *StartError
	if !errors.As(err, &se) || se.Path != "/no/such" || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("decodeStart(ENOENT) = %v, want a *StartError for /no/such matching fs.ErrNotExist", err)
	}

	_, err = decodeStart(encodeStart(0, errors.New("odd\nfailure")), "/bin/x")
	if !errors.As(err, &se) || se.Err.Error() != "odd failure" {
		t.Errorf("decodeStart(no errno) = %v, want a *StartError saying %q", err, "odd failure")
	}

	for _, msg := range []string{"", "ok 12", "ok x\n", "ok 0\n", "ok -3\n", "hello\n", "err x y\n"} {
		if pid, err := decodeStart([]byte(msg), "/bin/x"); !errors.Is(err, errNoReport) {
			t.Errorf("decodeStart(%q) = %d, %v, want errNoReport", msg, pid, err)
		}
	}
}

func TestWithoutVar(t *testing.T) {
	env := []string{"A=1", EnvVar + "=1:0", "B=2", EnvVar + "=x", EnvVar + "X=3", "NOEQUALS"}
	got := withoutVar(env, EnvVar)
	want := []string{"A=1", "B=2", EnvVar + "X=3", "NOEQUALS"}
	if !slices.Equal(got, want) {
		t.Errorf("withoutVar(%q) = %q, want %q", env, got, want)
	}
}

func TestStatPpid(t *testing.T) {
	for _, tc := range []struct {
		stat string
		ppid int
		ok   bool
	}{
		{"1234 (bash) S 77 1234 1234 0 -1", 77, true},
		{"1234 (a) b) (c) R 9 1 1", 9, true},
		{"1234 (x", 0, false},
		{"1234 (x) S", 0, false},
		{"1234 (x) S y", 0, false},
	} {
		ppid, ok := statPpid([]byte(tc.stat))
		if ppid != tc.ppid || ok != tc.ok {
			t.Errorf("statPpid(%q) = %d, %v, want %d, %v", tc.stat, ppid, ok, tc.ppid, tc.ok)
		}
	}
}

func TestParsePids(t *testing.T) {
	if got := parsePids([]byte("12 345 6 \n")); !slices.Equal(got, []int{12, 345, 6}) {
		t.Errorf("parsePids = %v, want [12 345 6]", got)
	}
	if got := parsePids(nil); len(got) != 0 {
		t.Errorf("parsePids(nil) = %v, want none", got)
	}
}

func TestDescendants(t *testing.T) {
	byParent := map[int][]int{
		1:  {10, 20},
		10: {11, 12},
		12: {13},
		20: {21},
		13: {10}, // a cycle, as a table read while it changes may show
	}
	got := descendants(byParent, 10)
	slices.Sort(got)
	if want := []int{11, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("descendants(10) = %v, want %v", got, want)
	}
	if got := descendants(byParent, 99); len(got) != 0 {
		t.Errorf("descendants(99) = %v, want none", got)
	}
}

func procargs(argc uint32, parts ...string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, argc)
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
	}
	return b
}

func TestProcargsHasEnv(t *testing.T) {
	const kv = TagVar + "=abc"
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"in env", procargs(2, "/bin/x", "", "", "x", "-a", "A=1", kv, "", "apple=1"), true},
		{"no padding", procargs(1, "/bin/x", "x", kv, ""), true},
		{"absent", procargs(1, "/bin/x", "x", "A=1", "", kv), false},
		{"in argv only", procargs(2, "/bin/x", "x", kv, "A=1", ""), false},
		{"other value", procargs(1, "/bin/x", "x", kv+"d", ""), false},
		{"truncated", procargs(3, "/bin/x", "x"), false},
		{"short", []byte{1, 0}, false},
	} {
		if got := procargsHasEnv(tc.b, kv); got != tc.want {
			t.Errorf("procargsHasEnv(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
