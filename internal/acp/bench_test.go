package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/claude"
	"spbridge/internal/supervise"
)

const fakeClaudeEnv = "SPBRIDGE_ACP_FAKE_CLAUDE"

func TestMain(m *testing.M) {
	supervise.Main() // the CLIs the tests start run under this binary as supervisor
	if os.Getenv(fakeClaudeEnv) != "" {
		fakeClaude()
		os.Exit(0)
	}
	if path := os.Getenv(streamFakeEnv); path != "" {
		fakeStreamClaude(path)
		os.Exit(0)
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// stampHole is where fakeClaude writes a delta's stamp: 19 digits of Unix
// nanoseconds and a space.
const stampHole = "0000000000000000000 "

// fakeClaude answers each stream-json user message with 1,000 text deltas,
// each carrying the time it was written, 200 µs apart.
func fakeClaude() {
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) {
		data, _ := json.Marshal(v)
		out.Write(append(data, '\n'))
		out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	for in.Scan() {
		var v map[string]any
		if json.Unmarshal(in.Bytes(), &v) != nil || v["type"] != "user" {
			continue
		}
		emit(map[string]any{"type": "system", "subtype": "init", "session_id": "lat", "model": "fake"})
		emit(map[string]any{"type": "stream_event", "event": map[string]any{"type": "message_start", "message": map[string]any{"id": "m"}}})
		emit(map[string]any{"type": "stream_event", "api_message_id": "m", "event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}})
		// Each delta's line is encoded before it is stamped; the stamp goes
		// into it right before the write, so that the delay counts from
		// the line's write, not from while it was being encoded.
		delta, _ := json.Marshal(map[string]any{"type": "stream_event", "api_message_id": "m", "event": map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": stampHole}}})
		delta = append(delta, '\n')
		at := bytes.Index(delta, []byte(stampHole))
		out.Flush()
		for range 1000 {
			strconv.AppendInt(delta[:at], time.Now().UnixNano(), 10) // as wide as the hole until 2286
			os.Stdout.Write(delta)
			time.Sleep(200 * time.Microsecond)
		}
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": "lat", "total_cost_usd": 0})
	}
}

// BenchmarkCLILineToSessionUpdate measures the delay from a line the CLI
// writes to the matching session/update on spbridge serve's output, through
// the real supervisor, mapper, session and server, over 1,000 lines a turn;
// it reports p50 and p99 in microseconds.
func BenchmarkCLILineToSessionUpdate(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := NewServer(outW, Config{CLIs: rowsOf(func(_ string, _ backend.Options) (backend.Backend, error) {
		return claude.New(claude.Options{Program: exe, Env: append(os.Environ(), fakeClaudeEnv+"=1", "GORACE=atexit_sleep_ms=0")}), nil
	})})
	done := make(chan struct{})
	go func() { srv.Serve(context.Background(), inR); outW.Close(); close(done) }()
	defer func() { inW.Close(); <-done }()
	write := func(v any) { data, _ := json.Marshal(v); inW.Write(append(data, '\n')) }
	lines := bufio.NewReaderSize(outR, 1<<20)
	var delays []time.Duration
	// read handles output until the response to id.
	read := func(id float64) {
		for {
			line, err := lines.ReadBytes('\n')
			now := time.Now().UnixNano()
			if err != nil {
				b.Fatal(err)
			}
			var m struct {
				ID     float64 `json:"id"`
				Method string  `json:"method"`
				Params struct {
					Update struct {
						SessionUpdate string `json:"sessionUpdate"`
						Content       struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			}
			json.Unmarshal(line, &m)
			if m.Method == "" && m.ID == id {
				return
			}
			if m.Params.Update.SessionUpdate == "agent_message_chunk" {
				stamps([]byte(m.Params.Update.Content.Text), func(ns int64) { delays = append(delays, time.Duration(now-ns)) })
			}
		}
	}
	pkg := filepath.Join(b.TempDir(), "Bench.silverpoint")
	os.Mkdir(pkg, 0o755)
	write(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{"cwd": filepath.Dir(pkg), "mcpServers": []any{},
		"_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude", "keepConversation": false}}}})
	read(1)
	id := 1
	for b.Loop() {
		id++
		write(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": map[string]any{"sessionId": pkg, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}})
		read(float64(id))
	}
	if len(delays) == 0 {
		b.Fatal("no updates seen")
	}
	slices.Sort(delays)
	q := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(delays))/float64(b.N), "updates/op")
}
