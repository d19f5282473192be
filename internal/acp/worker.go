package acp

import (
	"context"
	"fmt"
	"sync"

	"spbridge/internal/acp/wire"
	"spbridge/internal/archive"
	"spbridge/internal/jsonrpc"
)

// worker handles one session's messages (its jobs) one at a time, in the
// order they arrived, on a goroutine of its own (run), so a client may
// send session/prompt right after the session/new that opens the session.
// A panic in a handler ends that session alone (fail): the message is
// answered with the internal error, what was queued behind it as for an
// unknown session, and the server goes on. It owns the session's queue and
// the lock that guards it (mu), which the reading goroutine takes to
// queue or cancel, so a cancel never waits for a save.
type worker struct {
	ss *acpSession // the session whose handlers it runs

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a job is queued or the queue ends
	jobs     []*job     // waiting, in arrival order
	working  *job       // the job being handled
	ended    bool       // the queue takes no more jobs
	stopping bool       // the server shuts down or the session failed: no turn starts
	failure  string     // why the session failed (a panic), "" when it did not
	failEnd  bool       // endFailed ran
}

// job is one message for a session, handled by its worker.
type job struct {
	m       *jsonrpc.Message
	run     func(*acpSession, *job) (any, error)
	opening bool // session/new or session/load
	// ctx of a prompt: cancelled by session/cancel (or shutdown) whether
	// its turn has started or not.
	ctx    context.Context
	cancel context.CancelFunc
}

// answeredLater is a handler's result when the answer is written elsewhere
// (a prompt's, when its turn ends).
type answeredLater struct{}

// newWorker returns the worker of ss; run starts it.
func newWorker(ss *acpSession) *worker {
	w := &worker{ss: ss}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// enqueue adds a job to the session's queue; false when the session has
// ended.
func (w *worker) enqueue(j *job) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if w.stopping && j.cancel != nil {
		j.cancel() // a prompt that comes during shutdown does not run
	}
	w.jobs = append(w.jobs, j)
	w.cond.Signal()
	return true
}

// run handles the session's messages one at a time, in the order they
// arrived, until the queue ends and the turns they started have ended. The
// server's wg counts it.
func (w *worker) run() {
	defer w.ss.srv.wg.Done()
	for {
		w.mu.Lock()
		for len(w.jobs) == 0 && !w.ended {
			w.cond.Wait()
		}
		if len(w.jobs) == 0 {
			w.mu.Unlock()
			w.waitTurns()
			return
		}
		j := w.jobs[0]
		w.jobs = w.jobs[1:]
		w.working = j
		w.mu.Unlock()
		w.runJob(j)
		w.mu.Lock()
		w.working = nil
		w.mu.Unlock()
	}
}

// waitTurns waits until the turns the session's jobs started have ended,
// their prompts answered. Only a job starts a turn, so none starts any
// more once the queue ended: the server's wait for its workers (Serve's
// shutdown) then covers every answer a turn writes, also for a session
// already forgotten (a turn that panicked ends its session and answers
// its prompt after the close).
func (w *worker) waitTurns() {
	if conv := w.ss.openConv(); conv != nil {
		conv.WaitTurns()
	}
}

// runJob handles one message. A panic in it ends the session; an open that
// fails ends it too. Either way the session is done with (saved, closed,
// forgotten) before the message is answered, and what was queued behind
// it is answered after it, as for an unknown session.
func (w *worker) runJob(j *job) {
	ss := w.ss
	defer func() {
		if r := recover(); r != nil {
			why := ss.srv.recovered(j.m.Method+" of session "+ss.id, r)
			jobs := w.fail(why)
			ss.srv.reply(j.m, nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "internal error: %s; the session was ended", why))
			w.endJobs(jobs, fmt.Sprintf("session %q ended after an internal error: %s", ss.id, why))
		}
	}()
	result, err := j.run(ss, j)
	if _, later := result.(answeredLater); later && err == nil {
		return
	}
	var jobs []*job
	if j.opening && err != nil {
		jobs = w.abandon()
	}
	ss.srv.reply(j.m, result, err)
	w.endJobs(jobs, fmt.Sprintf("session %q could not be opened: %v", ss.id, err))
	if j.opening && err == nil {
		ss.afterOpen()
	}
}

// stopped reports whether the session starts no turn any more (the server
// shuts down, or the session ended or failed).
func (w *worker) stopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopping
}

// failedWith records why the session failed (the first reason is kept;
// "" records nothing) and reports whether it has failed.
func (w *worker) failedWith(why string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failure == "" {
		w.failure = why
	}
	return w.failure != ""
}

// cancelPrompts cancels every prompt that arrived so far: the running turn
// is interrupted (and hands back what was queued behind it), the ones not
// started yet will answer cancelled.
func (w *worker) cancelPrompts() {
	w.mu.Lock()
	for _, j := range w.jobs {
		if j.cancel != nil {
			j.cancel()
		}
	}
	if j := w.working; j != nil && j.cancel != nil {
		j.cancel()
	}
	w.mu.Unlock()
	if conv := w.ss.openConv(); conv != nil {
		conv.Cancel()
	}
}

// cancelPrompt cancels one prompt: running, its turn is interrupted (a
// turn runs under its prompt's context); queued behind another turn, it
// leaves the queue for the composer (unsent) and answers cancelled at
// once; not handled yet, it answers cancelled when its turn would begin.
func (w *worker) cancelPrompt(j *job) { j.cancel() }

// stop is the server's shutdown for this session: prompts not started are
// cancelled, the running turn is interrupted, no turn starts, and the
// worker ends once it handled what is queued.
func (w *worker) stop() {
	w.mu.Lock()
	w.stopping = true
	w.ended = true
	w.cond.Broadcast()
	w.mu.Unlock()
	w.cancelPrompts()
	if conv := w.ss.openConv(); conv != nil {
		conv.Stop()
	}
	w.ss.index.recorder.Hurry() // shutdown waits for the last record: no pause
}

// abandon ends the session's queue: the session is forgotten, takes
// nothing more and starts no turn. It returns the jobs that were waiting,
// for endJobs.
func (w *worker) abandon() []*job {
	w.ss.srv.forget(w.ss)
	w.mu.Lock()
	w.ended, w.stopping = true, true
	jobs := w.jobs
	w.jobs = nil
	w.cond.Broadcast()
	w.mu.Unlock()
	return jobs
}

// endJobs answers jobs of an ended session as for an unknown session.
func (w *worker) endJobs(jobs []*job, why string) {
	for _, j := range jobs {
		if j.cancel != nil {
			j.cancel()
		}
		w.ss.srv.reply(j.m, nil, jsonrpc.Errorf(CodeNotFound, "%s", why))
	}
}

// fail ends the session after a panic in its work: nothing more is taken
// or started, and once no turn runs the conversation gets a failure item,
// is saved, and the CLI and the lock are released. The other sessions go
// on. It returns the jobs that were waiting, for endJobs.
func (w *worker) fail(why string) []*job {
	jobs := w.abandon()
	w.failedWith(why)
	conv := w.ss.openConv()
	if conv != nil && conv.Running() {
		// The turn's end ends the session (turns.Ended).
		conv.Stop()
		return jobs
	}
	w.endFailed()
	return jobs
}

// endFailed closes a failed session with a failure item that says why,
// once.
func (w *worker) endFailed() {
	w.mu.Lock()
	why, again := w.failure, w.failEnd
	w.failEnd = true
	w.mu.Unlock()
	if again {
		return
	}
	ss := w.ss
	conv, _ := ss.live() // nil once closed
	var f archive.Item
	if conv != nil {
		f = conv.AddFailure("spbridge hit an internal error and ended this session; open it again to go on.", why)
	}
	if !f.IsZero() {
		if ss.srv.items.Load() {
			ss.send.item("add", f.Map(), nil)
		}
		ss.send.chunk(wire.AgentMessageChunk, f.ID(), wire.PlainText(f))
	}
	if err := ss.close(); err != nil {
		ss.srv.cfg.Log.Printf("session %s: %v", ss.id, err)
	}
}
