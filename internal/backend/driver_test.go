package backend

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
	"spbridge/internal/supervise"
)

// echoEnv turns the test binary into a CLI that prints back each line of
// its input as it comes and, at the input's end, exits with the status the
// variable gives.
const echoEnv = "SPBRIDGE_DRIVER_ECHO"

func TestMain(m *testing.M) {
	supervise.Main() // the CLIs the tests start run under this binary as supervisor
	if code := os.Getenv(echoEnv); code != "" {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadString('\n')
			os.Stdout.WriteString(line)
			if err != nil {
				n, _ := strconv.Atoi(code)
				os.Exit(n)
			}
		}
	}
	os.Exit(m.Run())
}

// startEcho starts the echo CLI, exiting with code at its input's end.
func startEcho(t *testing.T, code, maxLine int) *cliproc.Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := cliproc.Start(cliproc.Config{Path: exe, Env: append(os.Environ(), echoEnv+"="+strconv.Itoa(code)), MaxLine: maxLine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.CloseStdin()                 // it exits at its input's end
		p.Close(50 * time.Millisecond) // its last lines may be left unread
	})
	return p
}

// scriptConn is a protocol whose CLI (the echo CLI) prints what it is
// sent: "ask:ID" is a permission request, "end" the turn's end, "settle"
// settles it; every other line is a line of the turn. It records what the
// driver asks of it, in order.
type scriptConn struct {
	p           *cliproc.Proc
	settled     bool
	began       bool                        // Finish closes a turn the CLI began
	escalations int                         // the steps Escalate takes
	onAnswer    func(id string, d Decision) // run after an answer is recorded
	onInterrupt func()

	mu    sync.Mutex
	calls []string
}

func (c *scriptConn) record(format string, args ...any) {
	c.mu.Lock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *scriptConn) said() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.calls, " | ")
}

func (c *scriptConn) Line(data []byte, h Host) ([]itemmap.Approval, *itemmap.TurnEnd) {
	line := string(data)
	c.record("line %s", line)
	c.began = true
	switch {
	case strings.HasPrefix(line, "ask:"):
		return []itemmap.Approval{{RequestID: strings.TrimPrefix(line, "ask:"), ToolName: "Bash"}}, nil
	case line == "end":
		return nil, &itemmap.TurnEnd{Status: itemmap.TurnCompleted}
	case line == "settle":
		c.settled = true
	default:
		Notice(nil, h, line)
	}
	return nil, nil
}

func (c *scriptConn) Answer(id string, d Decision, _ Host) {
	c.record("answer %s %v %q", id, d.Allow, d.Message)
	if c.onAnswer != nil {
		c.onAnswer(id, d)
	}
}

func (c *scriptConn) Written(err error) error {
	c.record("written %v", err)
	c.p.CloseStdin()
	return nil
}

func (c *scriptConn) Interrupt() {
	c.record("interrupt")
	if c.onInterrupt != nil {
		c.onInterrupt()
	}
}

func (c *scriptConn) Escalate(n int) bool {
	c.record("escalate %d", n)
	return n <= c.escalations
}

func (c *scriptConn) Settled() bool { return c.settled }

func (c *scriptConn) Ended(end *itemmap.TurnEnd, interrupted bool, _ Host) *itemmap.TurnEnd {
	c.record("ended %s %v", end.Status, interrupted)
	return end
}

func (c *scriptConn) Drained(h Host) { c.record("drained") }

func (c *scriptConn) Finish(interrupted bool, text, detail string) itemmap.Result {
	c.record("finish %v %q %q", interrupted, text, detail)
	if !c.began {
		return itemmap.Result{}
	}
	status := itemmap.TurnFailed
	if interrupted {
		status = itemmap.TurnInterrupted
	}
	return itemmap.Result{End: &itemmap.TurnEnd{Status: status}}
}

func (c *scriptConn) Reap() string {
	c.record("reap")
	c.p.Close(50 * time.Millisecond)
	return "the tail"
}

// send makes the echo CLI print lines.
func (c *scriptConn) send(lines ...string) {
	c.p.Send([]byte(strings.Join(lines, "\n") + "\n"))
}

// askHost is a host whose Approve reports each request on asked and
// answers with what answer gives, or a denial once its context ends
// (reported on withdrawn).
type askHost struct {
	mu        sync.Mutex
	items     []archive.Item
	idles     int
	asked     chan string
	answer    func(ctx context.Context) (Decision, bool)
	withdrawn chan string
}

func (h *askHost) Change(c itemmap.Change) {
	h.mu.Lock()
	h.items = append(h.items, c.Item)
	h.mu.Unlock()
}

func (h *askHost) Idle() { h.idles++ }

func (h *askHost) Approve(ctx context.Context, a itemmap.Approval) Decision {
	if h.asked != nil {
		h.asked <- a.RequestID
	}
	if h.answer != nil {
		if d, ok := h.answer(ctx); ok {
			return d
		}
	} else {
		<-ctx.Done()
	}
	if h.withdrawn != nil {
		h.withdrawn <- a.RequestID
	}
	return Decision{}
}

func (h *askHost) texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, it := range h.items {
		out = append(out, it.Type()+": "+it.String("text"))
	}
	return out
}

// testOpts are the options of a test's turn: the idle timeout given, and a
// grace no test waits out unless it sets one (an interrupt's escalation
// would otherwise race the CLI's answer on a busy machine).
func testOpts(idle time.Duration) Options {
	return Options{IdleTimeout: idle, Grace: time.Hour}.withDefaults()
}

// waitUp waits until the echo CLI is up and reading: one line there and
// back (a busy machine may take longer than a test's idle timeout to start
// it).
func waitUp(c *scriptConn) {
	c.send("up")
	for got := ""; got != "up"; {
		<-c.p.Ready()
		if l, ok := c.p.Next(); ok {
			got = string(l.Data)
		}
	}
}

// TestDriverApproval: a request is asked of the host, its answer reaches
// the CLI, and the end the CLI reports ends the turn.
func TestDriverApproval(t *testing.T) {
	p := startEcho(t, 0, 0)
	c := &scriptConn{p: p, settled: true}
	c.onAnswer = func(string, Decision) { c.send("after", "end") }
	h := &askHost{answer: func(context.Context) (Decision, bool) { return Decision{Allow: true}, true }}
	c.send("before", "ask:1")
	end := (&Driver{Conn: c, Proc: p, Opts: testOpts(time.Hour), Who: "Fake"}).Run(context.Background(), h)
	if end.Status != itemmap.TurnCompleted {
		t.Errorf("end %+v", end)
	}
	want := `line before | line ask:1 | answer 1 true "" | line after | line end | ended completed false`
	if got := c.said(); got != want {
		t.Errorf("calls\n %s\nwant\n %s", got, want)
	}
	if got := h.texts(); strings.Join(got, ",") != "notice: before,notice: after" {
		t.Errorf("items %q", got)
	}
	if h.idles == 0 {
		t.Error("the host never heard Idle")
	}
}

// TestDriverIdleWaitsForHost: the idle timeout does not end a turn while
// a request waits for the host, however long the host takes; the
// turn goes on once it answered.
func TestDriverIdleWaitsForHost(t *testing.T) {
	const idle = 50 * time.Millisecond
	p := startEcho(t, 0, 0)
	c := &scriptConn{p: p, settled: true}
	c.onAnswer = func(string, Decision) { c.send("end") }
	// The user takes ten times the idle timeout to answer: that is what is
	// tested, not a wait for an event.
	h := &askHost{answer: func(context.Context) (Decision, bool) { time.Sleep(10 * idle); return Decision{Allow: true}, true }}
	waitUp(c)
	c.send("ask:1")
	end := (&Driver{Conn: c, Proc: p, Opts: testOpts(idle), Who: "Fake"}).Run(context.Background(), h)
	if end.Status != itemmap.TurnCompleted || strings.Contains(c.said(), "reap") {
		t.Errorf("end %+v, calls %s", end, c.said())
	}
}

// TestDriverInterrupt: an interrupt takes back the request that waits
// (denied, the host's context ended), asks the CLI to stop, denies a
// request that comes after it at once, and the turn ends interrupted.
func TestDriverInterrupt(t *testing.T) {
	p := startEcho(t, 0, 0)
	c := &scriptConn{p: p, settled: true}
	c.onInterrupt = func() { c.send("ask:2", "end") }
	h := &askHost{asked: make(chan string, 2), withdrawn: make(chan string, 2)}
	interrupt := make(chan struct{}, 1)
	c.send("ask:1")
	go func() {
		<-h.asked
		interrupt <- struct{}{}
	}()
	end := (&Driver{Conn: c, Proc: p, Opts: testOpts(time.Hour), Who: "Fake", Interrupt: interrupt}).Run(context.Background(), h)
	if end.Status != itemmap.TurnCompleted { // what the CLI reported; the Conn says more
		t.Errorf("end %+v", end)
	}
	want := `line ask:1 | answer 1 false "The turn was interrupted." | interrupt | line ask:2 | answer 2 false "The turn was interrupted." | line end | ended completed true`
	if got := c.said(); got != want {
		t.Errorf("calls\n %s\nwant\n %s", got, want)
	}
	if id := <-h.withdrawn; id != "1" {
		t.Errorf("withdrawn %q", id)
	}
	if len(h.asked) != 0 {
		t.Errorf("the host was asked after the interrupt: %q", <-h.asked)
	}
}

// TestDriverSettles: an end the CLI reports waits until the Conn is
// settled, and the lines between are the turn's.
func TestDriverSettles(t *testing.T) {
	p := startEcho(t, 0, 0)
	c := &scriptConn{p: p}
	c.send("end", "more", "settle")
	end := (&Driver{Conn: c, Proc: p, Opts: testOpts(time.Hour), Who: "Fake"}).Run(context.Background(), &askHost{})
	want := `line end | line more | line settle | ended completed false`
	if got := c.said(); end.Status != itemmap.TurnCompleted || got != want {
		t.Errorf("end %+v, calls\n %s\nwant\n %s", end, got, want)
	}
}

// TestDriverExited: a CLI that exits without a word of the turn ends it
// not started: failed, with how it ended and its stderr's tail, or
// interrupted; an end it reported before it exited is the turn's.
func TestDriverExited(t *testing.T) {
	for _, tt := range []struct {
		name        string
		interrupted bool
		lines       []string
		want        string
	}{
		{"silent", false, nil, "failure: Fake exited before the turn ended (exit status 3)."},
		{"interrupted", true, nil, "notice: Interrupted."},
		{"reported", false, []string{"end"}, ""},
	} {
		p := startEcho(t, 3, 0)
		c := &scriptConn{p: p}
		if tt.lines != nil {
			c.send(tt.lines...)
		}
		d := &Driver{Conn: c, Proc: p, Opts: testOpts(time.Hour), Who: "Fake"}
		if tt.interrupted {
			interrupt := make(chan struct{}, 1)
			interrupt <- struct{}{}
			d.Interrupt = interrupt
			c.onInterrupt = func() { p.CloseStdin() }
		} else {
			d.Sent = p.Send(nil) // Written closes the input
		}
		h := &askHost{}
		end := d.Run(context.Background(), h)
		got := strings.Join(h.texts(), ",")
		switch {
		case tt.want == "":
			if end.Status != itemmap.TurnCompleted || end.NotStarted || !strings.HasSuffix(c.said(), "ended completed false") {
				t.Errorf("%s: end %+v, calls %s", tt.name, end, c.said())
			}
		case !end.NotStarted || got != tt.want:
			t.Errorf("%s: end %+v, items %q, want %q", tt.name, end, got, tt.want)
		case !tt.interrupted && h.items[0].String("detail") != "the tail":
			t.Errorf("%s: detail %q", tt.name, h.items[0].String("detail"))
		}
	}
}

// TestDriverSilent: a CLI that prints nothing for the idle timeout is
// reaped and the turn fails, saying whether it read the message.
func TestDriverSilent(t *testing.T) {
	const idle = 30 * time.Millisecond
	for _, written := range []bool{true, false} {
		p := startEcho(t, 0, 0)
		c := &scriptConn{p: p}
		d := &Driver{Conn: c, Proc: p, Opts: testOpts(idle), Who: "Fake", Process: "fake server"}
		want := "failure: Fake printed nothing for 30ms; it was stopped."
		if !written {
			d.Sent = make(chan error) // a write that never ends
			want = "failure: fake server did not read the message for 30ms; it was stopped."
		}
		h := &askHost{}
		end := d.Run(context.Background(), h)
		if got := strings.Join(h.texts(), ","); end.Status != itemmap.TurnFailed || !end.NotStarted || got != want || !strings.Contains(c.said(), "reap") {
			t.Errorf("written %v: end %+v, items %q, calls %s", written, end, got, c.said())
		}
	}
}

// TestDriverSilentAfterEnd: a CLI that reported the turn's end and then
// neither settles nor exits is reaped at the idle timeout, and the turn
// is the one it reported, not a failure that takes the user's message back.
func TestDriverSilentAfterEnd(t *testing.T) {
	p := startEcho(t, 0, 0)
	c := &scriptConn{p: p}
	waitUp(c)
	c.send("said", "end")
	h := &askHost{}
	end := (&Driver{Conn: c, Proc: p, Opts: testOpts(time.Second), Who: "Fake"}).Run(context.Background(), h)
	want := `line said | line end | drained | reap | ended completed false`
	if got := c.said(); end.Status != itemmap.TurnCompleted || end.NotStarted || got != want {
		t.Errorf("end %+v, calls\n %s\nwant\n %s", end, got, want)
	}
	if got := strings.Join(h.texts(), ","); got != "notice: said" {
		t.Errorf("items %q", got)
	}
}

// TestDriverEscalates: a CLI that does not stop when asked gets the
// Conn's further steps, one a grace, and is then closed; the turn ends
// interrupted.
func TestDriverEscalates(t *testing.T) {
	p := startEcho(t, 0, 0)
	c := &scriptConn{p: p, escalations: 1, began: true}
	interrupt := make(chan struct{}, 1)
	interrupt <- struct{}{}
	opts := testOpts(time.Hour)
	opts.Grace = 20 * time.Millisecond // the CLI never answers: each step is taken
	end := (&Driver{Conn: c, Proc: p, Opts: opts, Who: "Fake", Interrupt: interrupt}).Run(context.Background(), &askHost{})
	got := c.said()
	if end.Status != itemmap.TurnInterrupted || !strings.Contains(got, "interrupt | escalate 1 | escalate 2 | drained | reap | finish true") {
		t.Errorf("end %+v, calls %s", end, got)
	}
}

// TestDriverOversize: a line over the limit is a notice, and the turn goes
// on.
func TestDriverOversize(t *testing.T) {
	p := startEcho(t, 0, 16)
	c := &scriptConn{p: p, settled: true}
	c.send(strings.Repeat("x", 40), "end")
	h := &askHost{}
	end := (&Driver{Conn: c, Proc: p, Opts: Options{MaxLine: 16}.withDefaults(), Who: "Fake"}).Run(context.Background(), h)
	if got := h.texts(); end.Status != itemmap.TurnCompleted || len(got) != 1 || got[0] != "notice: Skipped a line of 40 bytes from Fake: longer than the 16-byte limit." {
		t.Errorf("end %+v, items %q", end, got)
	}
}
