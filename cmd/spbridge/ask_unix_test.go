//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/creack/pty"

	"spbridge/internal/archive"
)

// TestRunAsksOnTerminal: spbridge run at a terminal asks before a tool
// runs, and the answer reaches the CLI.
func TestRunAsksOnTerminal(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			exe, _ := os.Executable()
			pkg := newPackage(t)
			cmd := exec.Command(spbridgeBin(t), "run", pkg, "clean up")
			cmd.Env = append(os.Environ(), fakeAskEnv+"=1", "SPBRIDGE_CLAUDE="+exe, "SPBRIDGE_STATE_DIR="+t.TempDir(), "GORACE=atexit_sleep_ms=0")
			master, err := pty.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer master.Close()
			var out bytes.Buffer
			readUntil(t, master, &out, "[y/a/N] ")
			if !strings.Contains(out.String(), "Allow Bash?") || !strings.Contains(out.String(), "`rm -rf build`") {
				t.Errorf("the question: %q", out.String())
			}
			master.Write([]byte(answer + "\r"))
			want := map[string]string{"y": "answer was allow", "n": "answer was deny"}[answer]
			readUntil(t, master, &out, want)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit %d: %q", code, out.String())
			}
			p, _ := archive.Open(pkg, archive.KindDocument, true)
			status := map[string]string{"y": archive.StatusSucceeded, "n": archive.StatusDenied}[answer]
			var got []string
			for _, it := range p.Conv.Items {
				got = append(got, fmt.Sprint(it.Type(), ":", it.String("status")))
			}
			if !strings.Contains(strings.Join(got, " "), "tool:"+status) {
				t.Errorf("items %q, want the tool %s", got, status)
			}
		})
	}
}
