package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"spbridge/internal/jsonrpc"
)

// workerServer is a server writing to out whose sessions the tests below
// make and run by hand.
func workerServer() (*Server, *lockedBuffer) {
	out := &lockedBuffer{}
	return NewServer(out, Config{}), out
}

// startWorker makes session sid of srv (never opened: its jobs are the
// test's) and starts its worker.
func startWorker(srv *Server, sid string) *acpSession {
	ss := newSession(srv, sid, "")
	srv.mu.Lock()
	srv.sessions[sid] = ss
	srv.mu.Unlock()
	srv.wg.Add(1)
	go ss.work.run()
	return ss
}

// testJob is a request with this id that run handles.
func testJob(id int, run func(*acpSession, *job) (any, error)) *job {
	return &job{m: &jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(strconv.Itoa(id)), Method: "_test/job"}, run: run}
}

// promptJob is testJob with a prompt's context.
func promptJob(id int, run func(*acpSession, *job) (any, error)) *job {
	j := testJob(id, run)
	j.ctx, j.cancel = context.WithCancel(context.Background())
	return j
}

// blocker is a job's handler that says it started and returns when
// released.
type blocker struct{ started, release chan struct{} }

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) run(*acpSession, *job) (any, error) {
	close(b.started)
	<-b.release
	return struct{}{}, nil
}

// replies are the answers the server wrote, by id.
func replies(t *testing.T, out *lockedBuffer) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		if id, ok := m["id"]; ok && m["method"] == nil {
			got[string(mustJSON(t, id))] = m
		}
	}
	return got
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errorOf is the code and message of reply m's error; code 0 when it has
// none.
func errorOf(m map[string]any) (int, string) {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0, ""
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return int(code), msg
}

// The worker runs a session's jobs one at a time, in the order they were
// queued, also those queued while one runs, and answers each.
func TestWorkerRunsJobsInOrder(t *testing.T) {
	srv, out := workerServer()
	ss := startWorker(srv, "S")
	var mu sync.Mutex
	var order []int
	var running atomic.Int32
	overlap := false
	step := func(id int) func(*acpSession, *job) (any, error) {
		return func(got *acpSession, j *job) (any, error) {
			if got != ss {
				t.Errorf("job %d ran for session %p, not %p", id, got, ss)
			}
			if running.Add(1) != 1 {
				overlap = true
			}
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
			running.Add(-1)
			return map[string]any{"n": id}, nil
		}
	}
	first := newBlocker()
	ss.work.enqueue(testJob(1, first.run))
	<-first.started
	const n = 20
	for id := 2; id <= n; id++ {
		if !ss.work.enqueue(testJob(id, step(id))) {
			t.Fatalf("job %d not queued", id)
		}
	}
	close(first.release)
	ss.work.stop()
	srv.wg.Wait() // the worker ends once it handled what was queued
	if overlap {
		t.Error("two jobs of one session ran at once")
	}
	for i, id := range order {
		if id != i+2 {
			t.Fatalf("jobs ran in the order %v", order)
		}
	}
	if len(order) != n-1 {
		t.Fatalf("%d of %d jobs ran: %v", len(order), n-1, order)
	}
	got := replies(t, out)
	for id := 2; id <= n; id++ {
		r := got[strconv.Itoa(id)]
		if res, _ := r["result"].(map[string]any); res == nil || res["n"] != float64(id) {
			t.Errorf("job %d answered %v", id, r)
		}
	}
	if ss.work.enqueue(testJob(n+1, step(n+1))) {
		t.Error("a stopped worker took a job")
	}
}

// cancelPrompt cancels the one prompt it names, queued or running;
// cancelPrompts every prompt that came so far, and interrupts nothing
// else.
func TestWorkerCancelsPrompts(t *testing.T) {
	srv, _ := workerServer()
	ss := startWorker(srv, "S")
	seen := make(chan string, 10)
	report := func(name string) func(*acpSession, *job) (any, error) {
		return func(_ *acpSession, j *job) (any, error) {
			state := "live"
			if j.ctx.Err() != nil {
				state = "cancelled"
			}
			seen <- name + " " + state
			return struct{}{}, nil
		}
	}
	first := newBlocker()
	ss.work.enqueue(testJob(1, first.run))
	<-first.started
	a, b := promptJob(2, report("a")), promptJob(3, report("b"))
	ss.work.enqueue(a)
	ss.work.enqueue(b)
	ss.work.cancelPrompt(a)
	close(first.release)
	if got := <-seen; got != "a cancelled" {
		t.Errorf("the prompt cancelled while queued: %s", got)
	}
	if got := <-seen; got != "b live" {
		t.Errorf("the prompt queued beside it: %s", got)
	}

	// cancelPrompts: the running prompt's context and the queued one's.
	running := newBlocker()
	var runningCtx context.Context
	c := promptJob(4, func(ss *acpSession, j *job) (any, error) {
		runningCtx = j.ctx
		return running.run(ss, j)
	})
	ss.work.enqueue(c)
	<-running.started
	d := promptJob(5, report("d"))
	ss.work.enqueue(d)
	ss.work.cancelPrompts()
	if runningCtx.Err() == nil {
		t.Error("cancelPrompts left the running prompt's context")
	}
	close(running.release)
	if got := <-seen; got != "d cancelled" {
		t.Errorf("the prompt queued behind it: %s", got)
	}
	ss.work.stop()
	srv.wg.Wait()
}

// stop (the server's shutdown) cancels the prompts queued, takes nothing
// more, and lets the worker handle what was queued before it ends.
func TestWorkerStop(t *testing.T) {
	srv, out := workerServer()
	ss := startWorker(srv, "S")
	var mu sync.Mutex
	var ran []string
	note := func(name string) func(*acpSession, *job) (any, error) {
		return func(_ *acpSession, j *job) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			state := "live"
			if j.ctx != nil && j.ctx.Err() != nil {
				state = "cancelled"
			}
			ran = append(ran, name+" "+state)
			return struct{}{}, nil
		}
	}
	first := newBlocker()
	ss.work.enqueue(testJob(1, first.run))
	<-first.started
	ss.work.enqueue(promptJob(2, note("prompt")))
	ss.work.enqueue(testJob(3, note("save")))
	ss.work.stop()
	if ss.work.enqueue(testJob(4, note("late"))) {
		t.Error("a stopping worker took a job")
	}
	if !ss.work.stopped() {
		t.Error("a stopping session may start turns")
	}
	close(first.release)
	srv.wg.Wait()
	if got := strings.Join(ran, ", "); got != "prompt cancelled, save live" {
		t.Errorf("after stop the worker ran: %s", got)
	}
	got := replies(t, out)
	for _, id := range []string{"1", "2", "3"} {
		if got[id] == nil || got[id]["error"] != nil {
			t.Errorf("job %s answered %v", id, got[id])
		}
	}
}

// A panic in a handler ends its session alone: the message answers the
// internal error, what was queued behind it answers as for an unknown
// session without running, the session is forgotten and takes nothing
// more; another session's worker goes on.
func TestWorkerPanicEndsTheSession(t *testing.T) {
	srv, out := workerServer()
	ss := startWorker(srv, "S")
	other := startWorker(srv, "T")
	first := newBlocker()
	ss.work.enqueue(testJob(1, func(ss *acpSession, j *job) (any, error) {
		first.run(ss, j)
		panic("boom")
	}))
	<-first.started
	ranAfter := make(chan int, 2)
	after := func(id int) func(*acpSession, *job) (any, error) {
		return func(*acpSession, *job) (any, error) { ranAfter <- id; return struct{}{}, nil }
	}
	ss.work.enqueue(testJob(2, after(2)))
	ss.work.enqueue(promptJob(3, after(3)))
	close(first.release)

	done := make(chan struct{})
	other.work.enqueue(testJob(10, func(*acpSession, *job) (any, error) { close(done); return map[string]any{"ok": true}, nil }))
	<-done
	// The failed session's worker ends of its own; the other's is stopped.
	other.work.stop()
	srv.wg.Wait()

	select {
	case id := <-ranAfter:
		t.Errorf("job %d ran after the panic", id)
	default:
	}
	got := replies(t, out)
	if code, msg := errorOf(got["1"]); code != jsonrpc.CodeInternalError || !strings.Contains(msg, "internal error: boom; the session was ended") {
		t.Errorf("the job that panicked answered %v", got["1"])
	}
	for _, id := range []string{"2", "3"} {
		if code, msg := errorOf(got[id]); code != CodeNotFound || !strings.Contains(msg, `session "S" ended after an internal error: boom`) {
			t.Errorf("job %s queued behind the panic answered %v", id, got[id])
		}
	}
	if r, _ := got["10"]["result"].(map[string]any); r == nil || r["ok"] != true {
		t.Errorf("the other session's job answered %v", got["10"])
	}
	if _, err := srv.session(json.RawMessage(`{"sessionId":"S"}`)); err == nil {
		t.Error("the failed session is still known")
	}
	if ss.work.enqueue(testJob(4, after(4))) {
		t.Error("the failed session took a job")
	}
	if !ss.work.failedWith("") {
		t.Error("the session does not say it failed")
	}
}

// acpSession holds the open and close and the ACP method handlers; its
// worker (worker.go) and its sender (sender.go) are types of their own. A
// method that belongs to either goes there, not back into acpSession.
func TestSessionMethodsFew(t *testing.T) {
	const most = 30
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "acpSession" {
					names = append(names, fn.Name.Name)
				}
			}
		}
	}
	if len(names) > most {
		t.Errorf("acpSession has %d methods (at most %d): %s", len(names), most, strings.Join(names, ", "))
	}
}
