package supervise

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// The supervisor mode's value of EnvVar is modeVersion, ":", and the number
// of files the CLI gets after its stderr (its ExtraFiles). The supervisor's
// own fd 3 is the lifeline; the CLI's extra files follow it, at 4 onwards,
// and the supervisor hands them to the CLI at 3 onwards. The supervisor's
// arguments are the CLI's path, then the CLI's argv (argv[0] first).
const modeVersion = "1"

func encodeMode(extra int) string { return modeVersion + ":" + strconv.Itoa(extra) }

// decodeMode returns the number of extra files a mode value announces.
func decodeMode(v string) (extra int, err error) {
	n, ok := strings.CutPrefix(v, modeVersion+":")
	if !ok {
		return 0, fmt.Errorf("%s=%q: not supervisor mode %s", EnvVar, v, modeVersion)
	}
	extra, err = strconv.Atoi(n)
	if err != nil || extra < 0 || extra > 1000 {
		return 0, fmt.Errorf("%s=%q: bad count of extra files", EnvVar, v)
	}
	return extra, nil
}

// The supervisor's first and only message on the lifeline says whether the
// CLI started: "ok PID\n", or "err ERRNO TEXT\n" (ERRNO 0 when the error
// carried none). maxStartMsg bounds it.
const maxStartMsg = 1024

func encodeStart(pid int, err error) []byte {
	if err == nil {
		return []byte("ok " + strconv.Itoa(pid) + "\n")
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	text := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(text) > maxStartMsg/2 {
		text = text[:maxStartMsg/2]
	}
	return []byte("err " + strconv.Itoa(int(errno)) + " " + text + "\n")
}

// errNoReport is returned by decodeStart for a message that is not one the
// supervisor writes, or none at all (the supervisor died or is not one).
var errNoReport = errors.New("supervisor did not report the start")

// decodeStart reads the supervisor's message: the CLI's pid, or why the CLI
// at path did not start, as an *os.PathError-shaped *StartError whose Err is
// the syscall.Errno when there was one.
func decodeStart(msg []byte, path string) (int, error) {
	s, ok := strings.CutSuffix(string(msg), "\n")
	if !ok {
		return 0, errNoReport
	}
	if rest, ok := strings.CutPrefix(s, "ok "); ok {
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 {
			return 0, errNoReport
		}
		return pid, nil
	}
	rest, ok := strings.CutPrefix(s, "err ")
	if !ok {
		return 0, errNoReport
	}
	num, text, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, errNoReport
	}
	if n != 0 {
		return 0, &StartError{Path: path, Err: syscall.Errno(n)}
	}
	return 0, &StartError{Path: path, Err: errors.New(text)}
}

// StartError is why the supervisor could not start the CLI at Path. Err is a
// syscall.Errno when the system gave one (errors.Is(err, fs.ErrNotExist)
// holds for a missing program).
type StartError struct {
	Path string
	Err  error
}

func (e *StartError) Error() string { return "start " + e.Path + " under supervisor: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }
