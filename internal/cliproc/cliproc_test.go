//go:build linux

package cliproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"spbridge/internal/proctest"
	"spbridge/internal/supervise"
	"spbridge/internal/testbin"
)

// helperEnv names the environment variable that turns the test binary into
// the fake CLI; its value is the mode, and the arguments follow.
const helperEnv = "SPBRIDGE_CLIPROC_HELPER"

// unsupervisedEnv, set, makes a helper start its programs unsupervised.
const unsupervisedEnv = "SPBRIDGE_CLIPROC_UNSUPERVISED"

// The test binary is also the supervisor: TestMain calls supervise.Main, so
// Start supervises the programs it starts unless a test says otherwise
// (unsupervised).
func TestMain(m *testing.M) {
	supervise.Main()
	if os.Getenv(unsupervisedEnv) != "" {
		supervisorExe = noSupervisor
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[1:]))
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries
	// when their copy without the race detector could not be built.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if os.Getenv(unsupervisedEnv) == "" {
		supervisorExe = helperSupervisor
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// helperSupervisor is the supervisor the tests start: the helper binary,
// without the race detector (the tests start hundreds; internal/supervise's
// own tests run it with the detector).
func helperSupervisor() (string, error) {
	if _, err := supervise.Executable(); err != nil {
		return "", err
	}
	return testbin.Helper(), nil
}

// runHelper is the fake CLI. Each mode writes to stdout with one write per
// line, so that a line reaches the pipe as soon as it is made.
func runHelper(mode string, args []string) int {
	arg := func(i int) int {
		n, err := strconv.Atoi(args[i])
		if err != nil {
			panic(err)
		}
		return n
	}
	switch mode {
	case "echo": // copy stdin to stdout as it comes
		io.Copy(os.Stdout, os.Stdin)
		return 0
	case "echo-int": // echo line by line; exit 130 on SIGINT, and only then
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT)
		go func() {
			r := bufio.NewReader(os.Stdin)
			for {
				line, err := r.ReadBytes('\n')
				os.Stdout.Write(line)
				if err != nil {
					return
				}
			}
		}()
		<-sig
		return 130
	case "print": // print args[0] lines, two lines to stderr, exit args[1]
		for i := range arg(0) {
			fmt.Printf("line %d\n", i)
		}
		fmt.Fprint(os.Stderr, "first words\nlast words\n")
		return arg(1)
	case "big": // a line of args[0] bytes, then "after"
		os.Stdout.Write(append(bytes.Repeat([]byte{'x'}, arg(0)), '\n'))
		os.Stdout.WriteString("after\n")
		return 0
	case "burst": // args[0] MiB of numbered lines, a MiB a write
		var buf []byte
		for i := 0; len(buf) < arg(0)<<20; i++ {
			buf = fmt.Appendf(buf, "line %d\n", i)
		}
		for len(buf) > 0 {
			k := min(len(buf), 1<<20)
			os.Stdout.Write(buf[:k])
			buf = buf[k:]
		}
		return 0
	case "flood": // args[0] bytes to stderr, exit 3
		os.Stderr.Write(floodBytes(arg(0)))
		return 3
	case "ignore": // ignore SIGINT and SIGTERM, hang
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		fmt.Println("ready")
		hang()
	case "hang": // never reads stdin
		fmt.Println("ready")
		hang()
	case "grandchild":
		// Start a grandchild ("ignore" mode) sharing stdout, in our group or
		// (args[1] == "escape") in a group of its own; print its pid; then
		// exit (args[0] == "exit") or ignore SIGINT and SIGTERM and hang;
		// args[1] == "session" puts it in a session of its own.
		gc := helperCmd("ignore")
		gc.Stdout = os.Stdout
		switch args[1] {
		case "escape":
			gc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		case "session":
			gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := gc.Start(); err != nil {
			panic(err)
		}
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		if args[0] == "exit" {
			return 0
		}
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		hang()
	case "latency": // for each stdin line, print the wall clock in ns
		r := bufio.NewReader(os.Stdin)
		for {
			if _, err := r.ReadBytes('\n'); err != nil {
				return 0
			}
			os.Stdout.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
		}
	case "subreaper": // TestCloseAsSubreaper's scenario, run as a subreaper
		return subreaperScenario()
	case "parent": // start a "hang" child through cliproc, print its pid, hang
		p, err := Start(helperConfig("hang"))
		if err != nil {
			panic(err)
		}
		<-lineCh(p) // ready
		fmt.Printf("%d\n", p.Pid())
		hang()
	case "parent-gc": // start a "grandchild" through cliproc whose child left its session, print that child's pid, hang
		p, err := Start(helperConfig("grandchild", "hang", "session"))
		if err != nil {
			panic(err)
		}
		for l := range lineCh(p) {
			if s, ok := strings.CutPrefix(string(l.Data), "grandchild "); ok {
				inner, _ := strconv.Atoi(s)
				fmt.Println(outerPID(nil, p.Pid(), inner))
				break
			}
		}
		hang()
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

func noSupervisor() (string, error) { return "", supervise.ErrNoMain }

// unsupervised makes Start run programs without a supervisor until the end
// of the test.
func unsupervised(t *testing.T) {
	supervisorExe = noSupervisor
	t.Cleanup(func() { supervisorExe = helperSupervisor })
}

func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// floodBytes returns n bytes of numbered stderr lines.
func floodBytes(n int) []byte {
	b := make([]byte, 0, n+32)
	for i := 0; len(b) < n; i++ {
		b = append(b, "stderr line "...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b[:n]
}

// helperExe is the fake CLI's binary: this test binary, without the race
// detector.
func helperExe() string { return testbin.Helper() }

// helperEnviron is the fake CLI's environment. Under -race a program that
// exits with status 0 sleeps a second first (GORACE atexit_sleep_ms), which
// the fake CLI has no use for.
func helperEnviron(mode string) []string {
	return append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
}

func helperCmd(mode string, args ...string) *exec.Cmd {
	cmd := exec.Command(helperExe(), args...)
	cmd.Env = helperEnviron(mode)
	return cmd
}

func helperConfig(mode string, args ...string) Config {
	return Config{Path: helperExe(), Args: args, Env: helperEnviron(mode)}
}

func start(t testing.TB, cfg Config) *Proc {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Close(0) })
	return p
}

// collect receives every line until Lines is closed.
func collect(t testing.TB, p *Proc) []Line {
	t.Helper()
	var lines []Line
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lineCh(p):
			if !ok {
				return lines
			}
			lines = append(lines, l)
		case <-timeout:
			t.Fatalf("Lines not closed after 20s (%d lines so far)", len(lines))
		}
	}
}

func recvLine(t testing.TB, p *Proc) Line {
	t.Helper()
	select {
	case l, ok := <-lineCh(p):
		if !ok {
			t.Fatal("Lines closed early")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line after 10s")
	}
	panic("unreachable")
}

func waitDone(t testing.TB, p *Proc, limit time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(limit):
		t.Fatalf("Done not closed after %v", limit)
	}
}

// procStat is what /proc/<pid>/stat says of a process.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

func allProcs(t testing.TB) []procStat {
	t.Helper()
	procs, err := scanProcs()
	if err != nil {
		t.Fatal(err)
	}
	return procs
}

func scanProcs() ([]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ")".
		i := bytes.LastIndexByte(data, ')')
		f := strings.Fields(string(data[i+1:]))
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return out, nil
}

// checkNothingLeft fails if a process of group pgid exists or a child of the
// test process is a zombie.
func checkNothingLeft(t testing.TB, pgid int) {
	t.Helper()
	self := os.Getpid()
	for _, p := range allProcs(t) {
		if p.pgrp == pgid {
			t.Errorf("process %d (state %c, parent %d) is still in group %d", p.pid, p.state, p.ppid, pgid)
		}
		if p.ppid == self && p.state == 'Z' {
			t.Errorf("zombie child %d", p.pid)
		}
	}
}

func TestLinesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 2, 3, 100, 4095, 4096, 4097, 65535, 65536, 65537, 131072, 1 << 20, 3<<20 + 5, 5 << 20, 1, 0}
	var input bytes.Buffer
	var want []string
	for i, n := range sizes {
		line := make([]byte, n)
		for j := range line {
			line[j] = byte(rng.IntN(255)) // 0..254 ...
			if line[j] == '\n' {
				line[j] = 255 // ... and never a newline
			}
		}
		if i%3 == 1 { // a CRLF line: the "\r" is kept
			line = append(line, '\r')
		}
		want = append(want, string(line))
		input.Write(line)
		input.WriteByte('\n')
	}
	want = append(want, "last line without newline")
	input.WriteString("last line without newline")

	cfg := helperConfig("echo")
	cfg.MaxLine = 8 << 20
	p := start(t, cfg)
	go func() {
		data := input.Bytes()
		for len(data) > 0 { // in uneven chunks, so lines straddle writes
			k := min(len(data), 1+rng.IntN(200<<10))
			if err := p.Write(data[:k]); err != nil {
				t.Errorf("Write: %v", err)
				return
			}
			data = data[k:]
		}
		p.CloseStdin()
	}()
	lines := collect(t, p)
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l.Oversize != 0 || l.Data == nil || string(l.Data) != want[i] {
			t.Errorf("line %d: %d bytes (oversize %d), want %d bytes", i, len(l.Data), l.Oversize, len(want[i]))
		}
	}
	waitDone(t, p, 5*time.Second)
	if err := p.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
}

// TestBatchesGrow checks that a program that writes faster than it is read
// is read in larger reads (its batches' buffers grow to maxBatchSize), and
// that every line still comes whole and in order.
func TestBatchesGrow(t *testing.T) {
	p := start(t, helperConfig("burst", "3"))
	lines := collect(t, p)
	for i, l := range lines {
		if want := fmt.Sprintf("line %d", i); string(l.Data) != want {
			t.Fatalf("line %d = %q, want %q", i, l.Data, want)
		}
	}
	if len(lines) < 3<<20/12 {
		t.Errorf("%d lines, want the whole 3 MiB", len(lines))
	}
	p.qmu.Lock()
	size := p.batchSize
	p.qmu.Unlock()
	if size != maxBatchSize {
		t.Errorf("batch size %d after 3 MiB written a MiB at a time, want %d", size, maxBatchSize)
	}
}

func TestOversizeLine(t *testing.T) {
	cfg := helperConfig("big", strconv.Itoa(3<<20))
	cfg.MaxLine = 1 << 20
	p := start(t, cfg)
	lines := collect(t, p)
	want := []Line{{Oversize: 3 << 20}, {Data: []byte("after")}}
	if !slices.EqualFunc(lines, want, func(a, b Line) bool {
		return a.Oversize == b.Oversize && bytes.Equal(a.Data, b.Data)
	}) {
		t.Errorf("lines = %v, want %v", summarize(lines), summarize(want))
	}
}

func summarize(lines []Line) []string {
	var out []string
	for _, l := range lines {
		if l.Oversize > 0 {
			out = append(out, fmt.Sprintf("oversize %d", l.Oversize))
		} else {
			out = append(out, fmt.Sprintf("%.20q (%d bytes)", l.Data, len(l.Data)))
		}
	}
	return out
}

func TestStderrTail(t *testing.T) {
	const flood = 10_000_000
	for _, keep := range []int{0, 1000, 1 << 20} {
		t.Run(strconv.Itoa(keep), func(t *testing.T) {
			cfg := helperConfig("flood", strconv.Itoa(flood))
			cfg.StderrTail = keep
			p := start(t, cfg)
			collect(t, p)
			waitDone(t, p, 10*time.Second)
			if keep == 0 {
				keep = DefaultStderrTail
			}
			all := floodBytes(flood)
			want := all[len(all)-keep:]
			if got := p.StderrTail(); !bytes.Equal(got, want) {
				t.Errorf("StderrTail() = %d bytes ending %q, want the last %d bytes ending %q",
					len(got), got[max(0, len(got)-30):], keep, want[len(want)-30:])
			}
			var ee *ExitError
			if !errors.As(p.Err(), &ee) || ee.Code != 3 || !bytes.Equal(ee.Stderr, want) {
				t.Errorf("Err() = %v, want an *ExitError with code 3 and the tail", p.Err())
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	p := start(t, helperConfig("print", "5", "3"))
	lines := collect(t, p)
	waitDone(t, p, 5*time.Second)
	if len(lines) != 5 || string(lines[4].Data) != "line 4" {
		t.Errorf("lines = %v, want line 0 to line 4", summarize(lines))
	}
	if got := p.ExitCode(); got != 3 {
		t.Errorf("ExitCode() = %d, want 3", got)
	}
	var ee *ExitError
	if err := p.Err(); !errors.As(err, &ee) || ee.Code != 3 || ee.Signal != 0 {
		t.Fatalf("Err() = %#v, want *ExitError{Code: 3}", err)
	}
	if got, want := ee.Error(), "exit status 3"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if err := p.Close(time.Second); !errors.As(err, &ee) {
		t.Errorf("Close() = %v, want the *ExitError", err)
	}

	p = start(t, helperConfig("print", "0", "0"))
	waitDone(t, p, 5*time.Second)
	if p.ExitCode() != 0 || p.Err() != nil {
		t.Errorf("ExitCode(), Err() = %d, %v, want 0, nil", p.ExitCode(), p.Err())
	}
}

func TestKilledBySignal(t *testing.T) {
	p := start(t, helperConfig("hang"))
	recvLine(t, p) // ready
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	collect(t, p)
	waitDone(t, p, 5*time.Second)
	var ee *ExitError
	if err := p.Err(); !errors.As(err, &ee) || ee.Signal != syscall.SIGTERM || ee.Code != -1 {
		t.Fatalf("Err() = %#v, want *ExitError{Code: -1, Signal: SIGTERM}", err)
	}
	if got, want := ee.Error(), "killed by signal 15 (terminated)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if p.ExitCode() != -1 {
		t.Errorf("ExitCode() = %d, want -1", p.ExitCode())
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("Signal after exit = %v, want os.ErrProcessDone", err)
	}
}

func TestInterruptExits130(t *testing.T) {
	p := start(t, helperConfig("echo-int"))
	p.Write([]byte("hello\n"))
	if l := recvLine(t, p); string(l.Data) != "hello" {
		t.Fatalf("line = %q, want hello", l.Data)
	}
	begin := time.Now()
	p.Signal(syscall.SIGINT)
	var ee *ExitError
	if err := p.Close(5 * time.Second); !errors.As(err, &ee) || ee.Code != 130 {
		t.Errorf("Close() = %v, want exit status 130", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Close took %v after SIGINT, want it prompt", d)
	}
	checkNothingLeft(t, p.Pid())
}

func TestStartMissing(t *testing.T) {
	for _, tc := range []struct {
		path string
		want error
	}{
		{"spbridge-cliproc-no-such-program", exec.ErrNotFound},
		{"/nonexistent/spbridge-cliproc", fs.ErrNotExist},
	} {
		p, err := Start(Config{Path: tc.path})
		if p != nil || !errors.Is(err, tc.want) {
			t.Errorf("Start(%q) = %v, %v, want an error matching %v", tc.path, p, err, tc.want)
		}
		var se *StartError
		if !errors.As(err, &se) || se.Path != tc.path {
			t.Errorf("Start(%q) error %#v is not a *StartError for the path", tc.path, err)
		}
	}
}

func TestWriteAfterCloseAndExit(t *testing.T) {
	p := start(t, helperConfig("echo"))
	if err := p.Write([]byte("x\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	p.CloseStdin()
	if err := p.Write([]byte("y\n")); !errors.Is(err, ErrStdinClosed) {
		t.Errorf("Write after CloseStdin = %v, want ErrStdinClosed", err)
	}

	p = start(t, helperConfig("print", "0", "0"))
	collect(t, p)
	waitDone(t, p, 5*time.Second)
	if err := p.Write([]byte("y\n")); !errors.Is(err, ErrStdinClosed) {
		t.Errorf("Write after exit = %v, want ErrStdinClosed", err)
	}
	if err := p.CloseStdin(); err != nil {
		t.Errorf("CloseStdin after exit = %v, want nil", err)
	}
}

func TestCloseEscalates(t *testing.T) {
	const grace = 100 * time.Millisecond
	p := start(t, helperConfig("ignore"))
	recvLine(t, p) // ready: the signals are ignored from here on
	begin := time.Now()
	err := p.Close(grace)
	d := time.Since(begin)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("Close() = %v, want killed by SIGKILL", err)
	}
	if d < 3*grace || d > 3*grace+time.Second {
		t.Errorf("Close took %v, want about %v", d, 3*grace)
	}
	t.Logf("Close(%v) of a program ignoring SIGINT and SIGTERM took %v", grace, d)
	checkNothingLeft(t, p.Pid())
}

func TestCloseConcurrent(t *testing.T) {
	p := start(t, helperConfig("hang"))
	recvLine(t, p)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { p.Close(100 * time.Millisecond) })
	}
	wg.Go(func() { <-p.Done() })
	wg.Wait()
	if p.Close(time.Second) == nil {
		t.Error("Close() = nil for a killed program")
	}
}

// TestCloseAbandonsReceiver: a receiver that does not take lines does not
// keep Close from returning.
func TestCloseAbandonsReceiver(t *testing.T) {
	p := start(t, helperConfig("print", "1000", "0"))
	begin := time.Now()
	p.Close(50 * time.Millisecond)
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	if n := len(collect(t, p)); n != 0 {
		t.Errorf("%d lines left after Close gave up on the receiver, want none", n)
	}
}

// TestDiscard: a receiver that will take no more lines says so, and the
// program still writes all it has to (4 MiB, more than the queue holds),
// exits by itself and is closed without a wait for the receiver: with a
// grace of a minute, a Close that waited for it would end the program by
// SIGINT a minute later.
func TestDiscard(t *testing.T) {
	p := start(t, helperConfig("burst", "4"))
	if _, open := <-p.Ready(); !open {
		t.Fatal("stdout ended before a line")
	}
	if l, ok := p.Next(); !ok || string(l.Data) != "line 0" {
		t.Fatalf("first line %q (%v), want line 0", l.Data, ok)
	}
	p.Discard()
	p.CloseStdin()
	if err := p.Close(time.Minute); err != nil {
		t.Fatalf("Close = %v, want the program's own exit 0", err)
	}
	if l, ok := p.Next(); ok {
		t.Errorf("Next after Discard = %q, want no line", l.Data)
	}
	for range p.Ready() {
		// a value poked before it was closed
	}
}

// recvGrandchild reads lines until the helper names its grandchild: the
// grandchild shares stdout, so its own "ready" may come first.
func recvGrandchild(t *testing.T, p *Proc) int {
	t.Helper()
	for {
		l := recvLine(t, p)
		if bytes.HasPrefix(l.Data, []byte("grandchild ")) {
			return grandchildPid(t, l)
		}
	}
}

func grandchildPid(t *testing.T, l Line) int {
	t.Helper()
	s, ok := strings.CutPrefix(string(l.Data), "grandchild ")
	if !ok {
		t.Fatalf("line = %q, want grandchild <pid>", l.Data)
	}
	pid, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestGrandchildAfterLeaderExit: the leader exits, leaving a grandchild that
// ignores SIGINT and SIGTERM in its group and holding stdout; the group is
// killed and nothing is left.
func TestGrandchildAfterLeaderExit(t *testing.T) {
	p := start(t, helperConfig("grandchild", "exit", "group"))
	var gc int
	for _, l := range collect(t, p) { // ends only when the grandchild is gone
		if strings.HasPrefix(string(l.Data), "grandchild ") {
			gc = grandchildPid(t, l)
		}
	}
	waitDone(t, p, 5*time.Second)
	if err := p.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	begin := time.Now()
	p.Close(time.Second)
	t.Logf("Close waited %v for the killed grandchild %d to be reaped by its new parent", time.Since(begin), gc)
	checkNothingLeft(t, p.Pid())
}

// TestGrandchildWithHangingLeader: Close escalates to SIGKILL and kills the
// grandchild with its leader.
func TestGrandchildWithHangingLeader(t *testing.T) {
	p := start(t, helperConfig("grandchild", "hang", "group"))
	recvGrandchild(t, p)
	begin := time.Now()
	p.Close(50 * time.Millisecond)
	t.Logf("Close took %v", time.Since(begin))
	checkNothingLeft(t, p.Pid())
}

// TestEscapedGrandchildSupervised: a grandchild that left the group and
// holds stdout is killed by the supervisor when the program exits, so Done
// closes without the WaitDelay cut.
func TestEscapedGrandchildSupervised(t *testing.T) {
	for i, how := range []string{"escape", "session"} {
		cfg := helperConfig("grandchild", "exit", how)
		cfg.WaitDelay = time.Hour
		// The grandchild's pid is one of its PID namespace, if it has one
		// of its own: it is found by a marker in its environment instead.
		mark := fmt.Sprintf("SPBRIDGE_CLIPROC_MARK=%d-%s-%d", os.Getpid(), t.Name(), i)
		cfg.Env = append(cfg.Env, mark)
		p := start(t, cfg)
		recvGrandchild(t, p)
		collect(t, p) // ends only when the grandchild is gone
		waitDone(t, p, 20*time.Second)
		if err := p.Err(); err != nil {
			t.Errorf("%s: Err() = %v, want nil", how, err)
		}
		if left, _ := proctest.WithEnv(mark); len(left) > 0 {
			t.Errorf("%s: %v outlived the program", how, left)
			for _, q := range left {
				syscall.Kill(q.PID, syscall.SIGKILL)
			}
		}
	}
}

// TestEscapedGrandchild: unsupervised, a grandchild that left the group and
// holds stdout cannot keep Done from closing longer than WaitDelay.
func TestEscapedGrandchild(t *testing.T) {
	unsupervised(t)
	cfg := helperConfig("grandchild", "exit", "escape")
	cfg.WaitDelay = 200 * time.Millisecond
	p := start(t, cfg)
	gc := recvGrandchild(t, p)
	defer syscall.Kill(gc, syscall.SIGKILL) // we started it, through the helper
	begin := time.Now()
	collect(t, p)
	waitDone(t, p, 5*time.Second)
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Done took %v, want about WaitDelay", d)
	}
	if err := p.Err(); !errors.Is(err, ErrWaitDelay) {
		t.Errorf("Err() = %v, want ErrWaitDelay", err)
	}
}

// TestCloseAsSubreaper runs the grandchild scenario in a helper process that
// is a child subreaper: the killed grandchild becomes its child, and Close
// reaps it at once instead of waiting for init.
func TestCloseAsSubreaper(t *testing.T) {
	out, err := helperCmd("subreaper").CombinedOutput()
	if err != nil {
		t.Fatalf("subreaper helper: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

func subreaperScenario() int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Println(err)
		return 1
	}
	p, err := Start(helperConfig("grandchild", "exit", "group"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for range lineCh(p) {
	}
	<-p.Done()
	begin := time.Now()
	p.Close(time.Second)
	d := time.Since(begin)
	procs, err := scanProcs()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for _, q := range procs {
		if q.pgrp == p.Pid() || (q.ppid == os.Getpid() && q.state == 'Z') {
			fmt.Printf("process %d (state %c) left\n", q.pid, q.state)
			return 1
		}
	}
	fmt.Printf("as a subreaper, Close reaped the grandchild in %v\n", d)
	if d > 500*time.Millisecond {
		return 1
	}
	return 0
}

// TestPdeathsig: unsupervised, when the process that started the program
// dies without Close, the kernel kills the program.
func TestPdeathsig(t *testing.T) {
	parent := helperCmd("parent")
	parent.Env = append(parent.Env, unsupervisedEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		parent.Wait()
		t.Fatalf("parent helper: %v", err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(line))
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			return // gone, and reaped
		}
		if i := bytes.LastIndexByte(data, ')'); i > 0 && bytes.HasPrefix(data[i:], []byte(") Z")) {
			return // dead, waiting for init to reap it
		}
		if time.Now().After(deadline) {
			t.Fatalf("program %d still runs 5s after its parent died: %s", child, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStressInterrupt starts the fake CLI, exchanges a line, interrupts the
// group and closes, 200 times; after each, nothing of the group and no
// zombie may be left.
func TestStressInterrupt(t *testing.T) {
	const cycles = 200
	begin := time.Now()
	for i := range cycles {
		p, err := Start(helperConfig("echo-int"))
		if err != nil {
			t.Fatalf("cycle %d: Start: %v", i, err)
		}
		msg := fmt.Sprintf("ping %d\n", i)
		if err := p.Write([]byte(msg)); err != nil {
			t.Fatalf("cycle %d: Write: %v", i, err)
		}
		if l := recvLine(t, p); string(l.Data)+"\n" != msg {
			t.Fatalf("cycle %d: line = %q, want %q", i, l.Data, msg)
		}
		if err := p.Signal(syscall.SIGINT); err != nil {
			t.Fatalf("cycle %d: Signal: %v", i, err)
		}
		var ee *ExitError
		if err := p.Close(5 * time.Second); !errors.As(err, &ee) || ee.Code != 130 {
			t.Fatalf("cycle %d: Close() = %v, want exit status 130", i, err)
		}
		checkNothingLeft(t, p.Pid())
		if t.Failed() {
			t.Fatalf("cycle %d left processes behind", i)
		}
	}
	d := time.Since(begin)
	t.Logf("%d cycles in %v (%v each)", cycles, d, d/cycles)
}

// latencies measures, n times, the delay from the fake CLI writing a line
// (it prints the wall clock just before) to this process receiving it.
func latencies(t testing.TB, n int) []time.Duration {
	p := start(t, helperConfig("latency"))
	out := make([]time.Duration, 0, n)
	for range n {
		if err := p.Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		l := recvLine(t, p)
		now := time.Now().UnixNano()
		ts, err := strconv.ParseInt(string(l.Data), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Duration(now-ts))
	}
	slices.Sort(out)
	return out
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func TestLineLatency(t *testing.T) {
	lat := latencies(t, 1000)
	p50, p99 := percentile(lat, 0.50), percentile(lat, 0.99)
	t.Logf("write-to-receive latency over %d lines: p50 %v, p99 %v, max %v", len(lat), p50, p99, lat[len(lat)-1])
	// Generous, for loaded machines and -race; a batching timer would show
	// as milliseconds in the median.
	if p50 > 2*time.Millisecond {
		t.Errorf("median latency %v, want well under a millisecond", p50)
	}
}

// BenchmarkLineLatency reports the write-to-receive latency of stdout lines;
// run it with -benchtime=1000x for 1,000 lines.
func BenchmarkLineLatency(b *testing.B) {
	lat := latencies(b, b.N)
	b.ReportMetric(float64(percentile(lat, 0.50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 0.99).Nanoseconds()), "p99-ns")
}

// TestParentKilled: supervised, when the process that started the program is
// killed with SIGKILL, the program's child that left its session dies too.
func TestParentKilled(t *testing.T) {
	parent := helperCmd("parent-gc")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		parent.Wait()
		t.Fatalf("parent helper: %v", err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	if !alive(gc) {
		t.Fatalf("grandchild %d not running", gc)
	}
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for alive(gc) {
		if time.Now().After(deadline) {
			syscall.Kill(gc, syscall.SIGKILL)
			t.Fatalf("grandchild %d still runs 20s after the parent was killed", gc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSupervised: in this test binary, which called supervise.Main, the
// program runs under a supervisor that leads its group: its parent is Pid.
func TestSupervised(t *testing.T) {
	p := start(t, helperConfig("ignore"))
	recvLine(t, p)
	if p.life == nil {
		t.Fatal("the program runs unsupervised")
	}
	var kids []int
	for _, q := range allProcs(t) {
		if q.ppid == p.Pid() {
			kids = append(kids, q.pid)
			if q.pgrp != p.Pid() {
				t.Errorf("the program %d is in group %d, want the supervisor's %d", q.pid, q.pgrp, p.Pid())
			}
		}
	}
	if len(kids) != 1 {
		t.Errorf("the supervisor %d has children %v, want the program", p.Pid(), kids)
	}
	var ee *ExitError
	if err := p.Close(0); !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("Close(0) = %v, want killed by SIGKILL", err)
	}
	checkNothingLeft(t, p.Pid())
}
