//go:build linux

package codex

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
	"spbridge/internal/proctest"
)

// cmdlineProcs returns the processes whose command line holds marker.
func cmdlineProcs(t *testing.T, marker string) []int {
	t.Helper()
	ps, err := proctest.WithArg(marker)
	if err != nil {
		t.Skip(err)
	}
	return proctest.PIDs(ps)
}

// TestE2EInterruptStopsCommand: an interrupt while a command runs (on
// app-server, one the host approved to run outside the sandbox) stops the
// command: its processes are gone when the turn has ended, so what it
// would have done afterwards never happens. Also when codex left it running
// in the background (its yield time passed) and went on with the turn.
func TestE2EInterruptStopsCommand(t *testing.T) {
	for _, tr := range []string{TransportAppServer, TransportExec} {
		for _, background := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/background=%v", tr, background), func(t *testing.T) {
				testInterruptStopsCommand(t, tr, background)
			})
		}
	}
}

func testInterruptStopsCommand(t *testing.T, tr string, background bool) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	args := map[string]any{"cmd": "sleep 30; touch " + marker}
	if tr == TransportAppServer {
		args["sandbox_permissions"], args["justification"] = "require_escalated", "Run it outside?"
	}
	if background {
		args["yield_time_ms"] = 250
	}
	replies := []fakeapi.ResponsesReply{{Items: []fakeapi.OutputItem{{Type: "function_call", Name: "exec_command", Arguments: args}}}}
	if background {
		// The command goes on in the background while the model streams
		// its reply.
		replies = append(replies, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem(strings.Repeat("waiting ", 400))},
			ChunkDelay: 20 * time.Millisecond})
	}
	replies = append(replies, fakeapi.ResponsesReply{Items: []fakeapi.OutputItem{fakeapi.MessageItem("Done.")}})
	b, _ := realCodex(t, tr, replies...)
	b.Opts.Dir = dir
	h := &approver{streaming: make(chan struct{})}
	done := make(chan *itemmap.TurnEnd)
	go func() { done <- b.Turn(context.Background(), backend.Message{Text: "run it"}, h) }()
	if background {
		<-h.streaming
		if len(cmdlineProcs(t, marker)) == 0 {
			t.Fatal("the command is not running in the background")
		}
	} else {
		for len(cmdlineProcs(t, marker)) == 0 {
			time.Sleep(10 * time.Millisecond) // waiting for the command to start, not timing it
		}
	}
	b.Interrupt()
	end := <-done
	if pids := cmdlineProcs(t, marker); len(pids) > 0 {
		t.Errorf("the command still runs: %v", pids)
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL) // the test's own command, left over
		}
	}
	if end.Status != itemmap.TurnInterrupted {
		t.Errorf("status %s", end.Status)
	}
}
