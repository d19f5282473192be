// Package supervise makes sure that no process a CLI starts outlives the
// CLI's end or spbridge itself, including processes that detached from the
// CLI's process group (setsid, double forks, nohup … &).
//
// On Linux and macOS the CLI runs under a supervisor: this program's own
// binary re-executed in supervisor mode (see Main), which is the CLI's parent
// and holds a lifeline, a socket whose other end stays in spbridge. When the
// CLI exits, or the lifeline closes (spbridge called Lifeline.Close, or died,
// even by SIGKILL), the supervisor kills every descendant of the CLI with
// SIGKILL until none is left, then exits with the CLI's status. On Linux the
// supervisor is a child subreaper, so detached descendants become its own
// children; on macOS, which has no subreaper, it walks the process table
// while the CLI lives and at the end (see reap_darwin.go).
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
package supervise

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
)

// EnvVar is the environment variable that puts a binary that calls Main into
// supervisor mode. Command sets it for the supervisor; the supervisor removes
// it from the CLI's environment, so it never reaches the CLI or what the CLI
// starts (a spbridge run by a tool is not a supervisor).
const EnvVar = "SPBRIDGE_SUPERVISOR"

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
