package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMeasureServeSleep measures what putting idle CLIs to sleep saves
// and costs, with the real claude against the fake API (a measurement,
// run by scripts/serve-sleep; skipped otherwise, and it asserts nothing
// of time): the resident memory of serve and every process under it with
// SPBRIDGE_MEASURE_SESSIONS (default 20) sessions open, each after one
// prompt, all awake (--cli-idle 0) and after their idle time (every CLI
// asleep); and the time from a prompt to its first chunk on a sleeping
// session (the resume) and on an awake one.
func TestMeasureServeSleep(t *testing.T) {
	if os.Getenv("SPBRIDGE_MEASURE_SLEEP") == "" {
		t.Skip("a measurement: scripts/serve-sleep runs it")
	}
	n := 20
	if v, err := strconv.Atoi(os.Getenv("SPBRIDGE_MEASURE_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	e := newE2E(t)
	awake := runMeasure(t, e, n, "0", 0)
	asleep := runMeasure(t, e, n, "2s", 5)
	fmt.Printf("sessions %d\n", n)
	fmt.Printf("rss awake: serve %d KiB, CLIs %d (%d processes), total %d KiB\n", awake.serve, awake.clis, awake.cliProcs, awake.serve+awake.clis)
	fmt.Printf("rss asleep: serve %d KiB, CLIs %d (%d processes), total %d KiB\n", asleep.serve, asleep.clis, asleep.cliProcs, asleep.serve+asleep.clis)
	fmt.Printf("first chunk: asleep %v (median of %d), awake %v\n", median(asleep.wokenChunk), len(asleep.wokenChunk), median(asleep.awakeChunk))
}

type measured struct {
	serve, clis, cliProcs  int
	wokenChunk, awakeChunk []time.Duration
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

// runMeasure runs serve with --cli-idle idle and n sessions, each sent one
// prompt; with idle "0" it measures them all awake, else once no CLI runs,
// and then the first chunk of a prompt to a sleeping session, then again
// to the same session awake, rounds times.
func runMeasure(t *testing.T, e *e2e, n int, idle string, rounds int) measured {
	cmd := exec.Command(spbridgeBin(t), "serve", "--cli-idle", idle, "--max-live-clis", "0")
	cmd.Env = e.env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	var mu sync.Mutex
	answered := map[float64]chan struct{}{}
	firstChunk := map[string]chan time.Time{}
	wait := func(id float64) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if answered[id] == nil {
			answered[id] = make(chan struct{})
		}
		return answered[id]
	}
	go func() {
		r := bufio.NewScanner(stdout)
		r.Buffer(nil, 64<<20)
		for r.Scan() {
			var m map[string]any
			json.Unmarshal(r.Bytes(), &m)
			if id, ok := m["id"].(float64); ok && m["method"] == nil {
				close(wait(id))
				continue
			}
			p, _ := m["params"].(map[string]any)
			up, _ := p["update"].(map[string]any)
			if up["sessionUpdate"] == "agent_message_chunk" {
				mu.Lock()
				if ch := firstChunk[fmt.Sprint(p["sessionId"])]; ch != nil {
					select {
					case ch <- time.Now():
					default:
					}
				}
				mu.Unlock()
			}
		}
	}()
	send := func(v map[string]any) {
		v["jsonrpc"] = "2.0"
		data, _ := json.Marshal(v)
		stdin.Write(append(data, '\n'))
	}
	send(map[string]any{"id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	<-wait(0)
	root := t.TempDir()
	var pkgs []string
	for i := range n {
		pkg := filepath.Join(root, fmt.Sprintf("Doc%d.silverpoint", i))
		os.MkdirAll(pkg, 0o755)
		os.WriteFile(filepath.Join(pkg, "document.json"), []byte("{}"), 0o644)
		pkgs = append(pkgs, pkg)
		send(map[string]any{"id": 1 + i, "method": "session/new", "params": map[string]any{"cwd": root, "mcpServers": []any{},
			"_meta": map[string]any{"spbridge": map[string]any{"package": pkg, "backend": "claude"}}}})
	}
	for i := range n {
		<-wait(float64(1 + i))
	}
	prompt := func(id int, pkg, text string) {
		send(map[string]any{"id": id, "method": "session/prompt", "params": map[string]any{"sessionId": pkg,
			"prompt": []any{map[string]any{"type": "text", "text": text}}}})
	}
	for i, pkg := range pkgs {
		prompt(100+i, pkg, "hello")
	}
	for i := range pkgs {
		<-wait(float64(100 + i))
	}
	var m measured
	if idle == "0" {
		m.serve, m.clis, m.cliProcs = treeRSS(cmd.Process.Pid)
		return m
	}
	for { // every CLI asleep: polled, this is a measurement
		if _, _, procs := treeRSS(cmd.Process.Pid); procs == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	m.serve, m.clis, m.cliProcs = treeRSS(cmd.Process.Pid)
	id := 1000
	for r := range min(rounds, n) {
		pkg := pkgs[r]
		for _, woken := range []bool{true, false} {
			ch := make(chan time.Time, 1)
			mu.Lock()
			firstChunk[pkg] = ch
			mu.Unlock()
			t0 := time.Now()
			prompt(id, pkg, "again")
			d := (<-ch).Sub(t0)
			<-wait(float64(id))
			id++
			if woken {
				m.wokenChunk = append(m.wokenChunk, d)
			} else {
				m.awakeChunk = append(m.awakeChunk, d)
			}
		}
	}
	return m
}

// treeRSS sums the resident memory of pid (serve) and of the CLIs under
// it (every descendant: claude, its supervisors), counting the claude
// processes.
func treeRSS(pid int) (serve, clis, claudes int) {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 {
			f := strings.Fields(string(data[i+1:]))
			if len(f) > 1 {
				parent[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	under := func(p int) bool {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				return true
			}
		}
		return false
	}
	rss := func(p int) int {
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				return kb
			}
		}
		return 0
	}
	serve = rss(pid)
	self, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	for p := range parent {
		if !under(p) {
			continue
		}
		clis += rss(p)
		// The CLI's supervisors are spbridge itself.
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe")
		if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); exe != self && strings.Contains(string(cmd), "stream-json") {
			claudes++
		}
	}
	return serve, clis, claudes
}
