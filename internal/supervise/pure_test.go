package supervise

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestMode(t *testing.T) {
	secret := newSecret()
	for _, m := range []mode{{0, "", secret}, {1, "um", secret}, {7, "P", newSecret()}} {
		got, err := decodeMode(encodeMode(m))
		if err != nil || got != m {
			t.Errorf("decodeMode(encodeMode(%v)) = %v, %v, want it back", m, got, err)
		}
	}
	if a, b := newSecret(), newSecret(); a == b || len(a) != secretLen {
		t.Errorf("newSecret() = %q then %q, want %d hex digits, different", a, b, secretLen)
	}
	for _, v := range []string{"", "1", "1:0", "2:0", "2:0:", "2:0::", "2:0::" + secret[1:], "2:0::" + secret + "0",
		"2:0::" + strings.ToUpper(secret), "2:0:x:" + secret, "2:-1::" + secret, "2:x::" + secret, "2:100000::" + secret,
		"3:0::" + secret, "2:0::" + secret + ":"} {
		if m, err := decodeMode(v); err == nil {
			t.Errorf("decodeMode(%q) = %v, nil, want an error", v, m)
		}
	}
}

func TestStartMessage(t *testing.T) {
	for _, layer := range []Layer{{PIDNamespace, true}, {Subreaper, false}} {
		pid, got, err := decodeStart(encodeStart(4321, layer, nil), "/bin/x")
		if pid != 4321 || got != layer || err != nil {
			t.Errorf("decodeStart(ok 4321 %v) = %d, %v, %v, want 4321, the layer, nil", layer, pid, got, err)
		}
	}

	_, _, err := decodeStart(encodeStart(0, Layer{}, &fs.PathError{Op: "fork/exec", Path: "/no/such", Err: syscall.ENOENT}), "/no/such")
	var se *StartError
	if !errors.As(err, &se) || se.Path != "/no/such" || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("decodeStart(ENOENT) = %v, want a *StartError for /no/such matching fs.ErrNotExist", err)
	}

	_, _, err = decodeStart(encodeStart(0, Layer{}, errors.New("odd\nfailure")), "/bin/x")
	if !errors.As(err, &se) || se.Err.Error() != "odd failure" {
		t.Errorf("decodeStart(no errno) = %v, want a *StartError saying %q", err, "odd failure")
	}

	for _, msg := range []string{"", "ok 12", "ok x\n", "ok 0\n", "ok 12 subreaper\n", "ok 12  -\n", "ok -3 subreaper -\n",
		"ok 12 subreaper maybe\n", "hello\n", "err x y\n"} {
		if pid, _, err := decodeStart([]byte(msg), "/bin/x"); !errors.Is(err, errNoReport) {
			t.Errorf("decodeStart(%q) = %d, %v, want errNoReport", msg, pid, err)
		}
	}
}

func TestEndMessage(t *testing.T) {
	for _, ws := range []uint32{0, 7 << 8, 9, 0xffffffff} {
		if got, ok := decodeEnd(encodeEnd(ws)); !ok || got != ws {
			t.Errorf("decodeEnd(encodeEnd(%#x)) = %#x, %v", ws, got, ok)
		}
	}
	for _, msg := range []string{"", "end 1", "end x\n", "end 1\nend 2\n", "end 4294967296\n", "ok 1\n"} {
		if got, ok := decodeEnd([]byte(msg)); ok {
			t.Errorf("decodeEnd(%q) = %d, true, want false", msg, got)
		}
	}
}

func TestWithoutVar(t *testing.T) {
	env := []string{"A=1", EnvVar + "=2:0::x", "B=2", EnvVar + "=x", EnvVar + "X=3", "NOEQUALS"}
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
