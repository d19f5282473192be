package proctest

import (
	"bytes"
	"os"
	"strconv"
)

// find returns the live processes, other than the caller, whose /proc file
// (environ or cmdline) matches, and whose environment this process may read.
// Only a process that matches has its other files read: a scan reads every
// process's file, and tests scan often.
func find(file string, match func([]byte) bool) ([]Proc, error) {
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
		b, err := os.ReadFile(dir + "/" + file)
		if err != nil || !match(b) {
			continue // gone, not ours to read, or no match
		}
		if file != "environ" {
			if _, err := os.ReadFile(dir + "/environ"); err != nil {
				continue // not ours to read
			}
		}
		raw, _ := os.ReadFile(dir + "/cmdline")
		start, ok := started(pid)
		if !ok {
			continue
		}
		out = append(out, Proc{PID: pid, Argv: string(argv(raw)), start: start})
	}
	return out, nil
}

// argv joins the NUL-separated arguments of a cmdline file with spaces.
func argv(raw []byte) []byte {
	return bytes.ReplaceAll(bytes.TrimRight(raw, "\x00"), []byte{0}, []byte{' '})
}

// started returns when process pid started (its starttime field), and
// false when it is gone or has exited and waits to be reaped.
func started(pid int) (string, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || len(stat) <= i+2 || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return "", false
	}
	// After "pid (comm)": state is the 3rd field, starttime the 22nd.
	f := bytes.Fields(stat[i+1:])
	if len(f) < 20 {
		return "", false
	}
	return string(f[19]), true
}

func splitNUL(b []byte) [][]byte { return bytes.Split(b, []byte{0}) }

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
