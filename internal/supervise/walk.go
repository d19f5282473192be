package supervise

import "bytes"

// TagVar is the environment variable through which, on macOS, the supervisor
// recognises the CLI's descendants at the end: the CLI gets it with a value
// unique to its supervisor, and whatever it starts inherits it unless it
// rebuilds its environment.
const TagVar = "SPBRIDGE_SUPERVISOR_TAG"

// descendants returns the pids below root in a parent → children map,
// breadth first. A cycle (impossible in a consistent table, but the table is
// read while it changes) is not followed twice.
func descendants(byParent map[int][]int, root int) []int {
	var out []int
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range byParent[p] {
			if seen[c] {
				continue
			}
			seen[c] = true
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procargsHasEnv reports whether a kern.procargs2 buffer (macOS: a 32-bit
// argc in host order, the executable's path, NUL padding, argc arguments,
// then the environment, each NUL-terminated, the environment ending at an
// empty string) holds the environment entry kv.
func procargsHasEnv(b []byte, kv string) bool {
	if len(b) < 4 {
		return false
	}
	// argc is little-endian on every Mac (amd64, arm64).
	argc := int(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
	b = b[4:]
	next := func() (string, bool) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", false
		}
		s := string(b[:i])
		b = b[i+1:]
		return s, true
	}
	if _, ok := next(); !ok { // the executable's path
		return false
	}
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	for range argc {
		if _, ok := next(); !ok {
			return false
		}
	}
	for {
		s, ok := next()
		if !ok || s == "" {
			return false
		}
		if s == kv {
			return true
		}
	}
}
