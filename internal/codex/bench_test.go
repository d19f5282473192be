package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"spbridge/internal/backend"
	"spbridge/internal/fakeapi"
	"spbridge/internal/itemmap"
	"spbridge/internal/supervise"
)

const fakeAppServerEnv = "SPBRIDGE_FAKE_CODEX_APP_SERVER"

func TestMain(m *testing.M) {
	supervise.Main() // the CLIs the tests start run under this binary as supervisor
	if os.Getenv(fakeapi.MCPServerEnv) != "" {
		fakeapi.FakeMCPServer(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if os.Getenv(fakeAppServerEnv) != "" {
		fakeAppServer()
		os.Exit(0)
	}
	if mode := os.Getenv(fakeCodexEnv); mode != "" {
		os.Exit(fakeCodex(mode))
	}
	// A race-enabled binary sleeps a second before it exits, by default;
	// the helpers (and supervisors) this binary plays are such binaries.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// fakeAppServer plays `codex app-server`: it answers initialize,
// thread/start and turn/start, and streams each turn's reply as 1,000
// agent-message deltas carrying the time they were written, 200 µs apart.
// With fakeAppServerEnv set to "burst", the deltas are written at once, in
// one write.
func fakeAppServer() {
	burst := os.Getenv(fakeAppServerEnv) == "burst"
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	write := func(v any) {
		data, _ := json.Marshal(v)
		out.Write(append(data, '\n'))
	}
	emit := func(v any) {
		write(v)
		out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	turn, resumed := 0, ""
	var names []string // what thread/name/set named, "NAME on THREAD"
	for in.Scan() {
		var m map[string]any
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		id := m["id"]
		switch m["method"] {
		case "initialize":
			if fifo, ok := strings.CutPrefix(os.Getenv(fakeAppServerEnv), "hold-init "); ok {
				holdInit(fifo, emit)
				return
			}
			emit(map[string]any{"id": id, "result": map[string]any{"userAgent": "fake"}})
		case "thread/start":
			emit(map[string]any{"id": id, "result": map[string]any{"thread": map[string]any{"id": "thread-1"}}})
		case "thread/resume":
			// Resumed as asked, unless told to refuse ("refuse-resume"):
			// the turns' reply then says which thread it resumed.
			params, _ := m["params"].(map[string]any)
			if os.Getenv(fakeAppServerEnv) == "refuse-resume" {
				emit(map[string]any{"id": id, "error": map[string]any{"code": -32600, "message": fmt.Sprint("no rollout found for thread id ", params["threadId"])}})
				continue
			}
			resumed = fmt.Sprint(params["threadId"])
			emit(map[string]any{"id": id, "result": map[string]any{"thread": map[string]any{"id": resumed}}})
		case "thread/name/set":
			// Named as asked, unless told to refuse ("refuse-name").
			params, _ := m["params"].(map[string]any)
			if os.Getenv(fakeAppServerEnv) == "refuse-name" {
				emit(map[string]any{"id": id, "error": map[string]any{"code": -32600, "message": "no such thread"}})
				continue
			}
			names = append(names, fmt.Sprint(params["name"], " on ", params["threadId"]))
			emit(map[string]any{"id": id, "result": map[string]any{}})
			emit(map[string]any{"method": "thread/name/updated", "params": map[string]any{"threadId": params["threadId"], "threadName": params["name"]}})
		case "turn/start":
			turn++
			tid := fmt.Sprint("turn-", turn)
			emit(map[string]any{"id": id, "result": map[string]any{"turn": map[string]any{"id": tid}}})
			emit(map[string]any{"method": "turn/started", "params": map[string]any{"turn": map[string]any{"id": tid}}})
			emit(map[string]any{"method": "item/started", "params": map[string]any{"item": map[string]any{"type": "agentMessage", "id": "msg", "text": ""}}})
			for i := 0; i < 1000; i++ {
				delta := map[string]any{"method": "item/agentMessage/delta", "params": map[string]any{"itemId": "msg", "delta": fmt.Sprintf("%d ", time.Now().UnixNano())}}
				if burst {
					write(delta)
					continue
				}
				emit(delta)
				time.Sleep(200 * time.Microsecond)
			}
			text := "done"
			if resumed != "" {
				text += " (resumed " + resumed + ")"
			}
			if names != nil {
				text += fmt.Sprintf(" (named %q)", names)
			}
			emit(map[string]any{"method": "item/completed", "params": map[string]any{"item": map[string]any{"type": "agentMessage", "id": "msg", "text": text}}})
			emit(map[string]any{"method": "turn/completed", "params": map[string]any{"turn": map[string]any{"id": tid, "status": "completed"}}})
		default:
			if id != nil { // a request it does not know (model/list): refused at once, as a server does
				emit(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
}

// holdInit is fakeAppServer's "hold-init FIFO": it does not answer
// initialize but says on FIFO that it read it, then, once its input
// closes, prints 4 MiB of notifications (more than a pipe and a reader's
// queue hold) and exits 0.
func holdInit(fifo string, emit func(any)) {
	if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
		f.WriteString("initialize\n")
		f.Close()
	}
	io.Copy(io.Discard, os.Stdin)
	note := map[string]any{"method": "configWarning", "params": map[string]any{"summary": strings.Repeat("x", 1000)}}
	for range 4 << 10 {
		emit(note)
	}
}

type latencyHost struct {
	mu    sync.Mutex
	delay []time.Duration
}

func (h *latencyHost) Change(c itemmap.Change) {
	now := time.Now().UnixNano()
	// One time per line; several when lines read together were joined.
	for _, f := range strings.Fields(c.Delta) {
		if ns, err := strconv.ParseInt(f, 10, 64); err == nil {
			h.mu.Lock()
			h.delay = append(h.delay, time.Duration(now-ns))
			h.mu.Unlock()
		}
	}
}

func (h *latencyHost) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{}
}

// BenchmarkLineToItemLatency measures, on the app-server transport, the
// delay from a line the (fake) codex writes to the item change the caller
// of Turn sees, over 1,000 deltas a turn; it reports p50 and p99 in µs.
func BenchmarkLineToItemLatency(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	be := New(Options{Options: backend.Options{Program: exe, Env: append(os.Environ(), fakeAppServerEnv+"=1", "GORACE=atexit_sleep_ms=0"), Dir: b.TempDir(), Grace: 200 * time.Millisecond}})
	defer be.Close()
	h := &latencyHost{}
	for b.Loop() {
		if end := be.Turn(context.Background(), backend.Message{Text: "go"}, h); end.Status != itemmap.TurnCompleted {
			b.Fatalf("turn %s", end.Status)
		}
	}
	slices.Sort(h.delay)
	if len(h.delay) == 0 {
		b.Fatal("no deltas seen")
	}
	q := func(p float64) float64 { return float64(h.delay[int(p*float64(len(h.delay)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(h.delay))/float64(b.N), "lines/op")
}
