package supervise

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// The supervisor mode's value of EnvVar is modeVersion, then, separated by
// ":", the number of files the CLI gets after its stderr (its ExtraFiles),
// the options (letters from optUser, optProc and optProbe, or none) and a
// secret of secretLen hex digits. The supervisor's own fd 3 is the
// lifeline, on which the parent has written hello(secret) before the start;
// the CLI's extra files follow it, at 4 onwards, and the supervisor hands
// them to the CLI at 3 onwards. The supervisor's arguments are the CLI's
// path, then the CLI's argv (argv[0] first).
//
// The value alone does not make a supervisor: a process whose fd 3 is not a
// socket holding hello with the same secret runs as itself (see Main), so an
// EnvVar inherited from an editor's environment, or copied from a
// supervisor's, stops nothing.
const modeVersion = "2"

// Options of the mode.
const (
	optUser  = 'u' // the supervisor runs in a user namespace of its own: it drops its capabilities before starting the CLI
	optProc  = 'm' // the supervisor runs in a mount namespace of its own: it mounts a /proc of its PID namespace
	optProbe = 'P' // start no CLI: report the layer (see Probe) and exit
)

const secretLen = 32 // hex digits, 128 bits

// mode is what the supervisor is told through EnvVar.
type mode struct {
	extra  int    // the CLI's extra files
	opts   string // option letters
	secret string
}

func (m mode) has(opt byte) bool { return strings.IndexByte(m.opts, opt) >= 0 }

func newSecret() string {
	var b [secretLen / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func encodeMode(m mode) string {
	return modeVersion + ":" + strconv.Itoa(m.extra) + ":" + m.opts + ":" + m.secret
}

// decodeMode parses a value of EnvVar.
func decodeMode(v string) (mode, error) {
	f := strings.Split(v, ":")
	if len(f) != 4 || f[0] != modeVersion {
		return mode{}, fmt.Errorf("%s=%q: not supervisor mode %s", EnvVar, v, modeVersion)
	}
	extra, err := strconv.Atoi(f[1])
	if err != nil || extra < 0 || extra > 1000 {
		return mode{}, fmt.Errorf("%s=%q: bad count of extra files", EnvVar, v)
	}
	if strings.Trim(f[2], string([]byte{optUser, optProc, optProbe})) != "" {
		return mode{}, fmt.Errorf("%s=%q: unknown options", EnvVar, v)
	}
	if len(f[3]) != secretLen || strings.Trim(f[3], "0123456789abcdef") != "" {
		return mode{}, fmt.Errorf("%s=%q: bad secret", EnvVar, v)
	}
	return mode{extra: extra, opts: f[2], secret: f[3]}, nil
}

// hello is what the parent writes on the lifeline before it starts the
// supervisor, and what the supervisor must read there first.
func hello(secret string) []byte { return []byte("spbridge supervisor " + secret + "\n") }

// The supervisor's first message on the lifeline says whether the CLI
// started: "ok PID LAYER PROC\n" (PID is the CLI's pid as the supervisor sees
// it, LAYER a Layer's Name, PROC "proc" when the CLI has a /proc of its own,
// else "-"), or "err ERRNO TEXT\n" (ERRNO 0 when the error carried none).
// After the CLI's end, and the end of everything it started, the last
// message is "end STATUS\n", the CLI's wait status as a decimal number.
// maxStartMsg bounds a message.
const maxStartMsg = 1024

func encodeStart(pid int, layer Layer, err error) []byte {
	if err == nil {
		proc := "-"
		if layer.OwnProc {
			proc = "proc"
		}
		return []byte("ok " + strconv.Itoa(pid) + " " + layer.Name + " " + proc + "\n")
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

// decodeStart reads the supervisor's message: the CLI's pid and the layer
// that holds it, or why the CLI at path did not start, as an
// *os.PathError-shaped *StartError whose Err is the syscall.Errno when there
// was one. A probe reports pid 0.
func decodeStart(msg []byte, path string) (int, Layer, error) {
	s, ok := strings.CutSuffix(string(msg), "\n")
	if !ok {
		return 0, Layer{}, errNoReport
	}
	if rest, ok := strings.CutPrefix(s, "ok "); ok {
		f := strings.Split(rest, " ")
		if len(f) != 3 || f[1] == "" || f[2] != "proc" && f[2] != "-" {
			return 0, Layer{}, errNoReport
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid < 0 {
			return 0, Layer{}, errNoReport
		}
		return pid, Layer{Name: f[1], OwnProc: f[2] == "proc"}, nil
	}
	rest, ok := strings.CutPrefix(s, "err ")
	if !ok {
		return 0, Layer{}, errNoReport
	}
	num, text, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, Layer{}, errNoReport
	}
	if n != 0 {
		return 0, Layer{}, &StartError{Path: path, Err: syscall.Errno(n)}
	}
	return 0, Layer{}, &StartError{Path: path, Err: errors.New(text)}
}

func encodeEnd(status uint32) []byte {
	return []byte("end " + strconv.FormatUint(uint64(status), 10) + "\n")
}

// decodeEnd finds the end message in what followed the start message.
func decodeEnd(msg []byte) (uint32, bool) {
	line, rest, ok := bytes.Cut(msg, []byte("\n"))
	if !ok || len(rest) != 0 {
		return 0, false
	}
	n, ok := bytes.CutPrefix(line, []byte("end "))
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(string(n), 10, 32)
	return uint32(v), err == nil
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
