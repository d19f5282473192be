package claude

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/proctest"
	"spbridge/internal/restore"
)

// markedBackend is a fake backend whose processes carry a marker of their
// own in their environment, so that a test can find them in /proc.
func markedBackend(t *testing.T, mode string, opts Options) (*Backend, string) {
	t.Helper()
	b := fakeBackend(t, mode, opts)
	marker := "SPBRIDGE_TEST_MARKER=" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(os.Getpid())
	b.Opts.Env = append(b.Opts.Env, marker)
	return b, marker
}

// markedProcs returns the processes whose environment holds marker.
func markedProcs(t *testing.T, marker string) []int {
	t.Helper()
	ps, err := proctest.WithEnv(marker)
	if err != nil {
		t.Skip(err)
	}
	return proctest.PIDs(ps)
}

// bigMessage is larger than a pipe holds: a CLI that does not read its
// stdin blocks its write.
var bigMessage = backend.Message{Text: strings.Repeat("x", 1<<20)}

// TestMessageNotRead: a CLI that never reads its stdin, sent 1 MB, fails the
// turn at the idle timeout, and leaves no process.
func TestMessageNotRead(t *testing.T) {
	b, marker := markedBackend(t, "deaf", Options{IdleTimeout: 300 * time.Millisecond})
	rec := &recorder{}
	end := b.Turn(context.Background(), bigMessage, rec)
	if end == nil || end.Status != itemmap.TurnFailed || !end.NotStarted {
		t.Fatalf("end = %+v, want a failed turn not started", end)
	}
	if got := rec.texts(); len(got) != 1 || !strings.Contains(got[0], "did not read the message for 300ms") {
		t.Errorf("items %q", got)
	}
	if pids := markedProcs(t, marker); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
}

// TestMessageNotReadInterrupt: Interrupt (or a cancelled context) ends a
// turn whose message the CLI does not read, well before the idle timeout,
// and leaves no process.
func TestMessageNotReadInterrupt(t *testing.T) {
	for _, how := range []string{"Interrupt", "context"} {
		b, marker := markedBackend(t, "deaf", Options{IdleTimeout: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *itemmap.TurnEnd)
		go func() { done <- b.Turn(ctx, bigMessage, &recorder{}) }()
		waitWriting(t, b)
		if how == "Interrupt" {
			b.Interrupt()
		} else {
			cancel()
		}
		end := <-done
		cancel()
		if end == nil || end.Status != itemmap.TurnInterrupted || !end.NotStarted {
			t.Errorf("%s: end = %+v, want interrupted, not started", how, end)
		}
		if pids := markedProcs(t, marker); len(pids) > 0 {
			t.Errorf("%s: processes left: %v", how, pids)
		}
	}
}

// TestMessageNotReadClose: Close during a turn whose message the CLI does
// not read returns, ends the turn and leaves no process.
func TestMessageNotReadClose(t *testing.T) {
	b, marker := markedBackend(t, "deaf", Options{IdleTimeout: time.Hour})
	done := make(chan *itemmap.TurnEnd)
	go func() { done <- b.Turn(context.Background(), bigMessage, &recorder{}) }()
	waitWriting(t, b)
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	end := <-done
	if end == nil || end.Status != itemmap.TurnFailed || !end.NotStarted {
		t.Errorf("end = %+v, want failed, not started", end)
	}
	if pids := markedProcs(t, marker); len(pids) > 0 {
		t.Errorf("processes left: %v", pids)
	}
}

// waitWriting waits until the first turn of a new backend has a process
// (its interrupt channel is set before): the message is being written from
// then on.
func waitWriting(t *testing.T, b *Backend) {
	t.Helper()
	for {
		if b.Proc() != nil {
			return
		}
		time.Sleep(time.Millisecond) // polling a state, not timing an event
	}
}

// TestSilentCLI: a CLI that takes the message and prints nothing until the
// idle timeout gives a failure item and a non-nil TurnEnd.
func TestSilentCLI(t *testing.T) {
	b := fakeBackend(t, "silent", Options{IdleTimeout: 300 * time.Millisecond})
	rec := &recorder{}
	end := b.Turn(context.Background(), backend.Message{Text: "x"}, rec)
	if end == nil || end.Status != itemmap.TurnFailed || !end.NotStarted {
		t.Fatalf("end = %+v, want a failed turn not started", end)
	}
	if got := rec.texts(); len(got) != 1 || got[0] != "failure: Claude Code printed nothing for 300ms; it was stopped." {
		t.Errorf("items %q", got)
	}
}

// TestStderrPrivacy: the stderr of a CLI that dies goes into the failure's
// detail only, with its credentials masked and the "# Conversation so far"
// prefix it echoed cut out; StderrTail (for the audit log) says the same.
func TestStderrPrivacy(t *testing.T) {
	b := fakeBackend(t, "leak", Options{})
	rec := &recorder{}
	secret := "the secret launch code is 0000"
	msg := backend.Message{Context: restore.Heading + "User: " + secret + "\n\nAssistant: noted\n\n", Text: "what now?"}
	end := b.Turn(context.Background(), msg, rec)
	if end == nil || end.Status != itemmap.TurnFailed {
		t.Fatalf("end = %+v", end)
	}
	f := rec.items[len(rec.items)-1]
	text, detail := f.String("text"), f.String("detail")
	if text != "Claude Code exited before the turn ended (exit status 3)." {
		t.Errorf("failure text %q", text)
	}
	for _, s := range []string{detail, b.StderrTail()} {
		if strings.Contains(s, "launch code") || strings.Contains(s, "Conversation so far") ||
			strings.Contains(s, "secretsecret") || strings.Contains(s, "efghijklmnop") {
			t.Errorf("leaked: %q", s)
		}
		if !strings.Contains(s, "debug: got") || !strings.Contains(s, "ANTHROPIC_API_KEY=sk-ant-api0****") ||
			!strings.Contains(s, "Bearer abcd****") {
			t.Errorf("not what stderr said, masked: %q", s)
		}
	}
}

// TestDiesBeforeTakingMessage: a CLI that exits without reading its stdin
// fails the turn as not started, with what it said on stderr (masked) as
// the failure's detail.
func TestDiesBeforeTakingMessage(t *testing.T) {
	for _, msg := range []backend.Message{{Text: "hello"}, bigMessage} {
		t.Run(strconv.Itoa(len(msg.Text)), func(t *testing.T) {
			b := fakeBackend(t, "dies-unread", Options{})
			rec := &recorder{}
			end := b.Turn(context.Background(), msg, rec)
			if end == nil || end.Status != itemmap.TurnFailed || !end.NotStarted {
				t.Fatalf("end = %+v, want a failed turn not started", end)
			}
			if len(rec.items) != 1 {
				t.Fatalf("items %q, want one failure", rec.texts())
			}
			f := rec.items[0]
			text, detail := f.String("text"), f.String("detail")
			if !strings.Contains(detail, "fake claude: cannot start: bad configuration") {
				t.Errorf("failure %q, detail %q: want the CLI's stderr in the detail", text, detail)
			}
			if strings.Contains(detail, "secretsecret") || strings.Contains(text, "secretsecret") {
				t.Errorf("credential not masked: %q", detail)
			}
			// The write fails (broken pipe, or stdin closed when the exit
			// came first); the text says how the CLI ended.
			if len(msg.Text) > 1<<16 && (!strings.HasPrefix(text, "Claude Code did not take the message: ") || !strings.HasSuffix(text, " (exit status 2).")) {
				t.Errorf("failure text %q", text)
			}
			if strings.Contains(text, "bad configuration") {
				t.Errorf("stderr in the failure's text: %q", text)
			}
		})
	}
}

// TestRestartDiesBeforeTakingMessage: a CLI that ended between turns is
// started again (resuming); when that one exits without reading the
// message, the failure's detail is its stderr, masked.
func TestRestartDiesBeforeTakingMessage(t *testing.T) {
	b := fakeBackend(t, "exit-after-turn", Options{})
	rec := &recorder{}
	if end := b.Turn(context.Background(), backend.Message{Text: "hello"}, rec); end.Status != itemmap.TurnCompleted {
		t.Fatalf("turn 1 = %+v", end)
	}
	p := b.Proc()
	<-p.Done() // it exited after its turn: the next message finds its stdin closed
	rec = &recorder{}
	end := b.Turn(context.Background(), bigMessage, rec)
	if end.Status != itemmap.TurnFailed || !end.NotStarted || len(rec.items) != 1 {
		t.Fatalf("turn 2 = %+v, items %q", end, rec.texts())
	}
	f := rec.items[0]
	if detail := f.String("detail"); !strings.Contains(detail, "fake claude: cannot start: bad configuration") ||
		!strings.Contains(detail, "ANTHROPIC_API_KEY=sk-ant-api0****") || strings.Contains(detail, "secretsecret") {
		t.Errorf("failure %q, detail %q: want the restarted CLI's stderr, masked", f.String("text"), detail)
	}
}
