package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
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
// stream and the bytes the client got.
func BenchmarkServeStream(b *testing.B) {
	stream := benchStream(b)
	ends := streamTurns(stream)
	size := ends[len(ends)-1]
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var out int64
	b.SetBytes(size)
	for b.Loop() {
		dir := b.TempDir()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		srv := NewServer(outW, Config{
			DefaultBackend: "claude", SessionsDir: filepath.Join(dir, "sessions"), AuditDir: filepath.Join(dir, "state"),
			Index: sessionindex.New(filepath.Join(dir, "state")),
			NewBackend: func(_ string, o BackendOptions) (backend.Backend, error) {
				return claude.New(claude.Options{Program: exe, Dir: o.Cwd, Env: append(os.Environ(), streamFakeEnv+"="+stream)}), nil
			}})
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
		b.StopTimer()
		inW.Close()
		io.Copy(io.Discard, lines)
		<-done
		b.StartTimer()
	}
	b.ReportMetric(float64(out)/float64(b.N)/1e6, "outMB/op")
}
