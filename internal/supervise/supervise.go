// Package supervise makes sure that no process a CLI starts outlives the
// CLI's end or spbridge itself, including processes that detached from the
// CLI's process group (setsid, double forks, nohup … &).
//
// On Linux and macOS the CLI runs under a supervisor: this program's own
// binary re-executed in supervisor mode (see Main), which is the CLI's parent
// and holds a lifeline, a socket whose other end stays in spbridge. When the
// CLI exits, or the lifeline closes (spbridge called Lifeline.Close, or died,
// even by SIGKILL), the supervisor kills every descendant of the CLI with
// SIGKILL until none is left, then exits. What holds the descendants is the
// Layer:
//
//   - Linux, where the system lets this process create one (as root, or
//     through a user namespace of its own): a PID namespace whose init is the
//     supervisor, with a /proc of its own. The kernel kills every process in
//     it when the supervisor dies, so even SIGKILL to the supervisor, or to
//     spbridge and the supervisor at once, leaves nothing.
//   - Linux otherwise (or with NoNamespaceVar set): the supervisor is a child
//     subreaper, so detached descendants become its own children.
//   - macOS, which has neither: it walks the process table while the CLI
//     lives and at the end (see reap_darwin.go).
//
// On Windows the CLI runs in a Job Object that kills every process in it when
// its last handle closes, spbridge's included; there is no supervisor process.
//
// The parent's side, the same on every OS:
//
//	cmd, life, err := supervise.Command(exe, cli) // exe: os.Executable()
//	...
//	err = cmd.Start()       // on failure: life.Close()
//	pid, err := life.Started(cmd.Process) // the CLI's own pid, or why it did not start
//	...
//	life.Close()            // ends the CLI and everything it started, now
//	cmd.Wait()
//	ws := life.Status(cmd.ProcessState) // how the CLI ended
package supervise

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
)

// EnvVar is the environment variable through which Command tells the
// supervisor how to run. It does not make a supervisor by itself: Main enters
// supervisor mode only when the process's fd 3 is a lifeline that holds the
// secret its value names (see protocol.go), which only Command's caller can
// have set up. Main removes EnvVar from the process's environment in every
// case, so it never reaches the CLI, what the CLI starts, or any program a
// spbridge started with an inherited EnvVar runs.
const EnvVar = "SPBRIDGE_SUPERVISOR"

// Layer says what holds a supervised CLI and the processes it starts: Name
// is one of the Layer names below, OwnProc reports that the CLI sees a /proc
// of its own PID namespace (its pids, as getpid gives them), not the
// system's.
type Layer struct {
	Name    string
	OwnProc bool
}

// Layer names, from the strongest.
const (
	// PIDNamespace: a PID namespace whose init is the supervisor (Linux,
	// as root).
	PIDNamespace = "pid-namespace"
	// UserPIDNamespace: the same, inside a user namespace that maps only
	// the user's own uid and gid to themselves (Linux, unprivileged).
	UserPIDNamespace = "user+pid-namespace"
	// Subreaper: the supervisor is a child subreaper (Linux).
	Subreaper = "subreaper"
	// ProcessWalk: the supervisor walks the process table (macOS).
	ProcessWalk = "process-walk"
	// JobObject: a Job Object, no supervisor process (Windows).
	JobObject = "job-object"
	// CLIOnly: the supervisor reaches the CLI and nothing it started
	// (other Unix systems).
	CLIOnly = "cli-only"
)

func (l Layer) String() string {
	if l.OwnProc {
		return l.Name + ", own /proc"
	}
	return l.Name
}

// Guarantee says in a sentence what the layer guarantees.
func (l Layer) Guarantee() string {
	switch l.Name {
	case PIDNamespace, UserPIDNamespace:
		return "every process a CLI starts ends when the CLI ends, and when spbridge or the supervisor ends, however, even if every spbridge process is killed at once (the kernel empties the namespace when its init, the supervisor, dies)"
	case Subreaper:
		return "every process a CLI starts ends when the CLI ends, and when spbridge ends, even by kill -9; if the supervisor itself is killed by SIGKILL the CLI dies with it, but what the CLI detached from it survives"
	case ProcessWalk:
		return "every process a CLI starts that the supervisor's walks of the process table find ends when the CLI ends, and when spbridge ends, even by kill -9; a process that both leaves the CLI's tree between two walks and rebuilds its environment escapes, and if the supervisor itself is killed by SIGKILL what the CLI detached survives"
	case JobObject:
		return "every process a CLI starts ends when the CLI ends, and when spbridge ends, however (the system closes the Job Object with spbridge's last handle)"
	case CLIOnly:
		return "the CLI itself ends when spbridge ends; what it started may survive"
	}
	return "unknown"
}

// Exit statuses of the supervisor itself, from the range shells reserve, so
// that they are told apart from most CLIs' own.
const (
	// ExitSetup: the supervisor was started wrongly (no lifeline, bad
	// arguments) or could not set itself up; it says why on stderr.
	ExitSetup = 125
	// ExitNoStart: the CLI could not be started; Lifeline.Started returns
	// the error.
	ExitNoStart = 127
)

// ErrNoMain is returned by Executable in a binary that has not called Main.
var ErrNoMain = errors.New("supervise: this program did not call supervise.Main, so it cannot be a supervisor")

// mainCalled is set by Main when it returns (the binary is not a supervisor
// now, but can be one).
var mainCalled atomic.Bool

// Executable returns the path of this program's binary, for Command's exe,
// once Main has been called in this process, and ErrNoMain before: a binary
// that never calls Main (a test binary whose TestMain does not) would not act
// as a supervisor but run as itself. A caller that gets ErrNoMain should run
// the CLI without supervision.
func Executable() (string, error) {
	if !mainCalled.Load() {
		return "", ErrNoMain
	}
	return os.Executable()
}

// withoutVar returns env without the entries that set name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// NoNamespaceVar, set to any non-empty value in spbridge's environment,
// keeps CLIs out of a PID namespace on Linux: they run under the Subreaper
// layer, as they do where the system allows no namespace. A CLI in a PID
// namespace sees and signals only its own processes (so `kill` of a pid
// that `ps` outside showed fails), and in a user namespace set-user-ID
// programs such as sudo do not gain privileges.
const NoNamespaceVar = "SPBRIDGE_NO_NAMESPACE"
