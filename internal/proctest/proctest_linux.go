package proctest

import (
	"bytes"
	"os"
	"strconv"
)

func find(match func(env, argv []byte) bool) ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, ErrUnsupported
	}
	self := os.Getpid()
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name()
		env, err := os.ReadFile(dir + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		raw, _ := os.ReadFile(dir + "/cmdline")
		argv := bytes.ReplaceAll(bytes.TrimRight(raw, "\x00"), []byte{0}, []byte{' '})
		if !match(env, argv) || zombie(dir) {
			continue
		}
		out = append(out, Proc{PID: pid, Argv: string(argv)})
	}
	return out, nil
}

// zombie reports whether the process has exited and waits to be reaped
// (or is gone).
func zombie(dir string) bool {
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || len(stat) <= i+2 || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

func splitNUL(b []byte) [][]byte { return bytes.Split(b, []byte{0}) }

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
