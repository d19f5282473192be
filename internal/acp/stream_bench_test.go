package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/cliproc"
	"spbridge/internal/sessionindex"
)

// streamFakeEnv names the stream a fake claude plays, one turn of it per
// user message (the turns end at the offsets listed in FILE.turns, one a
// line); control requests get an empty success.
const streamFakeEnv = "SPBRIDGE_ACP_FAKE_STREAM"

// fakeStreamClaude is the CLI of BenchmarkServeStream: it writes the next
// turn of the stream file for each user message it reads, and answers each
// control request with success.
func fakeStreamClaude(path string) {
	if slices.Contains(os.Args[1:], "--version") {
		fmt.Println("2.1.328 (Claude Code)")
		return
	}
	ends := streamTurns(path)
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	turn := 0
	for {
		line, err := in.ReadBytes('\n')
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(line, &m) == nil {
			switch m.Type {
			case "control_request":
				fmt.Fprintf(os.Stdout, `{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{}}}`+"\n", m.RequestID)
			case "user":
				t := turn % len(ends)
				var start int64
				if t > 0 {
					start = ends[t-1]
				}
				io.Copy(os.Stdout, io.NewSectionReader(f, start, ends[t]-start))
				turn++
			}
		}
		if err != nil {
			return
		}
	}
}

// streamTurns reads the offsets where the stream's turns end.
func streamTurns(path string) []int64 {
	data, err := os.ReadFile(path + ".turns")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ends []int64
	for l := range strings.Lines(string(data)) {
		if f := strings.Fields(l); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			ends = append(ends, n)
		}
	}
	return ends
}

// benchStream is the stream the perf harness builds (100 MB of Claude
// Code lines from the recorded fixtures), from SPBRIDGE_PERF_STREAM or the
// harness's cache in the repository's .tools/perf.
func benchStream(b *testing.B) string {
	path := os.Getenv("SPBRIDGE_PERF_STREAM")
	if path == "" {
		path = "../../.tools/perf/stream-100M.jsonl"
	}
	if _, err := os.Stat(path + ".turns"); err != nil {
		b.Skipf("SKIP no stream at %s (run scripts/bench once, or set SPBRIDGE_PERF_STREAM)", path)
	}
	abs, _ := filepath.Abs(path)
	return abs
}

// BenchmarkServeStream drives a Server as spbridge serve runs it (real
// claude backend, supervisor, audit log, sessions folder and index) with a client
// that only reads lines and waits for each prompt's answer, over every turn
// of the harness's stream: one op is the whole stream. It reports MB/s of
// stream, the bytes the client got, and the CPU time of this process (the
// server and its client, up to the last answer: what the harness counts of
// serve, with the client's reading on top).
func BenchmarkServeStream(b *testing.B) {
	stream := benchStream(b)
	ends := streamTurns(stream)
	size := ends[len(ends)-1]
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var out int64
	var cpu time.Duration
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		cpu0 := processCPU()
		dir := b.TempDir()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		srv := NewServer(outW, Config{
			DefaultBackend: "claude", SessionsDir: filepath.Join(dir, "sessions"), AuditDir: filepath.Join(dir, "state"),
			Index: sessionindex.New(filepath.Join(dir, "state")),
			CLIs: rowsOf(func(_ string, o backend.Options) (backend.Backend, error) {
				return claude.New(claude.Options{Program: exe, Dir: o.Dir, Env: append(os.Environ(), streamFakeEnv+"="+stream)}), nil
			})})
		done := make(chan struct{})
		go func() { srv.Serve(context.Background(), inR); outW.Close(); close(done) }()
		lines := bufio.NewReaderSize(outR, 1<<20)
		// wait reads the output until the response to id; it returns that
		// response.
		wait := func(id int) []byte {
			want := []byte(`"id":` + strconv.Itoa(id) + `,`)
			for {
				line, err := lines.ReadSlice('\n')
				out += int64(len(line))
				if err == bufio.ErrBufferFull {
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.Contains(line[:min(len(line), 64)], []byte(`"method"`)) && bytes.Contains(line, want) {
					return bytes.Clone(line)
				}
			}
		}
		send := func(s string) { io.WriteString(inW, s+"\n") }
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
		wait(1)
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir))
		var opened struct{ Result struct{ SessionID string } }
		json.Unmarshal(wait(2), &opened)
		for i := range ends {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"continue"}]}}`, 100+i, opened.Result.SessionID))
			if r := wait(100 + i); !bytes.Contains(r, []byte(`"stopReason":"end_turn"`)) {
				b.Fatalf("turn %d: %s", i, r)
			}
		}
		cpu += processCPU() - cpu0
		b.StopTimer()
		inW.Close()
		io.Copy(io.Discard, lines)
		<-done
		b.StartTimer()
	}
	b.ReportMetric(float64(out)/float64(b.N)/1e6, "outMB/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkLatencyUnderLoad measures the delay from a line a CLI writes to
// its session/update on serve's output for one session (1,000 text deltas
// a turn, 200 µs apart, each stamped when written) while another session
// of the same server streams the harness's whole stream as fast as it
// goes; it reports that delay's p50 and p99 in microseconds over the
// updates that arrived while the stream ran. serve writes to a pipe, as it
// does for an editor, and the client stamps a line when its read returns.
func BenchmarkLatencyUnderLoad(b *testing.B) { latencyUnderLoad(b, nil) }

// BenchmarkLatencyFloorUnderLoad is BenchmarkLatencyUnderLoad's floor: the
// same CLI, started the same way under the same load, but its lines read
// straight from its pipe by a goroutine of this process, with nothing of
// spbridge between. The delay it reports is what the system itself adds
// (the pipe, the wakeup of a reader on two busy cores); what
// BenchmarkLatencyUnderLoad reports above it is spbridge's.
func BenchmarkLatencyFloorUnderLoad(b *testing.B) {
	latencyUnderLoad(b, &probeRead{wrap: func(f *os.File) io.Reader { return f }})
}

// probeRead is how latencyUnderLoad reads the probe's CLI without
// spbridge: wrap gives the reader of its stdout; with locked, the
// goroutine that reads it keeps its thread.
type probeRead struct {
	wrap   func(*os.File) io.Reader
	locked bool
}

// stamps calls fn with each time a probe update's text carries: one per
// line the CLI wrote ("NS "), several when serve joined the deltas of
// lines it read together.
func stamps(text []byte, fn func(ns int64)) {
	for _, f := range bytes.Fields(text) {
		if n, err := strconv.ParseInt(string(f), 10, 64); err == nil {
			fn(n)
		}
	}
}

// latencyUnderLoad runs the bulk session and the probe; with direct the
// probe CLI is read without spbridge, as direct says.
func latencyUnderLoad(b *testing.B, direct *probeRead) {
	stream := benchStream(b)
	ends := streamTurns(stream)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var delays, written []time.Duration
	var delaysMu sync.Mutex
	record := func(now, ns int64) {
		delaysMu.Lock()
		delays = append(delays, time.Duration(now-ns))
		delaysMu.Unlock()
	}
	for b.Loop() {
		dir := b.TempDir()
		bulk, probe := filepath.Join(dir, "Bulk.silverpoint"), filepath.Join(dir, "Probe.silverpoint")
		os.Mkdir(bulk, 0o755)
		os.Mkdir(probe, 0o755)
		inR, inW := io.Pipe()
		outR, outW, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		cliproc.GrowPipe(outW) // as spbridge serve does with its output
		var streaming atomic.Bool
		streaming.Store(true)
		probeChunk := []byte(`"sessionId":` + strconv.Quote(probe) + `,"update":{"sessionUpdate":"agent_message_chunk"`)
		out := &stampWriter{w: outW, probe: probeChunk, record: func(now, ns int64) {
			if streaming.Load() {
				written = append(written, time.Duration(now-ns))
			}
		}}
		srv := NewServer(out, Config{
			DefaultBackend: "claude", AuditDir: filepath.Join(dir, "state"), Index: sessionindex.New(filepath.Join(dir, "state")),
			CLIs: rowsOf(func(_ string, o backend.Options) (backend.Backend, error) {
				env := fakeClaudeEnv + "=1"
				if o.Dir == bulk {
					env = streamFakeEnv + "=" + stream
				}
				return claude.New(claude.Options{Program: exe, Dir: o.Dir, Env: append(os.Environ(), env, "GORACE=atexit_sleep_ms=0")}), nil
			})})
		done := make(chan struct{})
		go func() { srv.Serve(context.Background(), inR); outW.Close(); close(done) }()

		var mu sync.Mutex
		waiting := map[string]chan []byte{} // response id → its waiter
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			// A line is stamped when the read that completes it returns:
			// when serve wrote it, not when this client got to it among
			// the bulk session's lines, which it splits without
			// allocating.
			buf := make([]byte, 1<<20)
			var start, end int // the bytes read and not yet split
			var now int64
			next := func() ([]byte, error) {
				for {
					if i := bytes.IndexByte(buf[start:end], '\n'); i >= 0 {
						line := buf[start : start+i+1]
						start += i + 1
						return line, nil
					}
					end, start = copy(buf, buf[start:end]), 0
					if end == len(buf) {
						buf = append(buf, make([]byte, len(buf))...)
					}
					n, err := outR.Read(buf[end:])
					now = time.Now().UnixNano()
					end += n
					if err != nil {
						return nil, err
					}
				}
			}
			for {
				line, err := next()
				if err != nil {
					return
				}
				if bytes.Contains(line[:min(len(line), 200)], probeChunk) {
					var m struct {
						Params struct {
							Update struct {
								Content struct{ Text string }
							}
						}
					}
					json.Unmarshal(line, &m)
					if streaming.Load() {
						stamps([]byte(m.Params.Update.Content.Text), func(ns int64) { record(now, ns) })
					}
					continue
				}
				if bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`)) {
					var m struct{ ID json.RawMessage }
					json.Unmarshal(line, &m)
					mu.Lock()
					ch := waiting[string(m.ID)]
					mu.Unlock()
					if ch != nil {
						ch <- bytes.Clone(line)
					}
				}
			}
		}()
		var nextID atomic.Int64
		// call sends a request and waits for its response.
		call := func(method, params string) []byte {
			id := strconv.FormatInt(nextID.Add(1), 10)
			ch := make(chan []byte, 1)
			mu.Lock()
			waiting[id] = ch
			mu.Unlock()
			io.WriteString(inW, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`+params+"}\n")
			return <-ch
		}
		newSession := func(pkg string) {
			call("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[],"_meta":{"spbridge":{"package":%q,"backend":"claude"}}}`, pkg, pkg))
		}
		prompt := func(pkg string) {
			if r := call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}`, pkg)); !bytes.Contains(r, []byte(`"end_turn"`)) {
				b.Errorf("prompt: %s", r)
			}
		}
		call("initialize", `{"protocolVersion":1}`)
		newSession(bulk)
		probed := make(chan struct{})
		if direct != nil {
			cli := directProbe(b, exe, probe, direct.wrap)
			go func() {
				defer close(probed)
				if direct.locked {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
				}
				for streaming.Load() {
					cli.turn(streaming.Load, record)
				}
				cli.close()
			}()
		} else {
			newSession(probe)
			go func() {
				defer close(probed)
				for streaming.Load() {
					prompt(probe)
				}
			}()
		}
		for range ends {
			prompt(bulk)
		}
		streaming.Store(false)
		<-probed
		inW.Close()
		<-readDone
		<-done
		outR.Close()
	}
	if len(delays) == 0 {
		b.Fatal("no updates seen")
	}
	slices.Sort(delays)
	q := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(delays))/float64(b.N), "updates/op")
	if len(written) > 0 {
		slices.Sort(written)
		w := func(p float64) float64 { return float64(written[int(p*float64(len(written)-1))].Nanoseconds()) / 1e3 }
		b.ReportMetric(w(0.50), "written-p50-µs")
		b.ReportMetric(w(0.99), "written-p99-µs")
	}
}

// stampWriter is serve's output in latencyUnderLoad: it stamps each probe
// update as serve writes it (the CLI's stamp to the write), before the
// pipe to the client.
type stampWriter struct {
	w      io.Writer
	probe  []byte
	record func(now, ns int64)
}

func (s *stampWriter) Write(p []byte) (int, error) {
	now := time.Now().UnixNano()
	for rest := p; ; {
		i := bytes.Index(rest, s.probe)
		if i < 0 {
			break
		}
		rest = rest[i+len(s.probe):]
		if j := bytes.Index(rest, []byte(`"text":"`)); j >= 0 {
			text := rest[j+8:]
			if k := bytes.IndexByte(text, '"'); k >= 0 {
				stamps(text[:k], func(ns int64) { s.record(now, ns) })
			}
		}
	}
	return s.w.Write(p)
}

// probeCLI is the probe's CLI started without spbridge, its output read
// by a goroutine of this process.
type probeCLI struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Reader
}

// directProbe starts the probe's CLI in dir (the supervisor claude.New puts
// between is not on the path of its output), its stdout read through wrap.
func directProbe(b *testing.B, exe, dir string, wrap func(*os.File) io.Reader) *probeCLI {
	cmd := exec.Command(exe)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fakeClaudeEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &probeCLI{cmd: cmd, in: in, lines: bufio.NewReaderSize(wrap(out.(*os.File)), 1<<20)}
}

// turn sends a message and reads the turn to its result, recording each
// delta's delay while keep says so.
func (p *probeCLI) turn(keep func() bool, record func(now, ns int64)) {
	io.WriteString(p.in, `{"type":"user","message":{"role":"user","content":"go"}}`+"\n")
	for {
		line, err := p.lines.ReadSlice('\n')
		now := time.Now().UnixNano()
		if err != nil {
			return
		}
		if bytes.Contains(line, []byte(`"type":"result"`)) {
			return
		}
		if i := bytes.Index(line, []byte(`"text":"`)); i >= 0 && keep() {
			stamps(line[i+8:i+8+bytes.IndexByte(line[i+8:], '"')], func(ns int64) { record(now, ns) })
		}
	}
}

func (p *probeCLI) close() {
	p.in.Close()
	p.cmd.Wait()
}
