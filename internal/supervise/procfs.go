package supervise

import (
	"bytes"
	"strconv"
)

// parsePids parses a list of decimal pids separated by white space, as in
// /proc/PID/task/TID/children.
func parsePids(b []byte) []int {
	var pids []int
	for _, f := range bytes.Fields(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// statPpid returns the parent pid from the text of /proc/PID/stat, whose
// second field, the command in parentheses, may itself hold spaces and
// parentheses: the fields that follow start after the last ")".
func statPpid(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // state, ppid, ...
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
