package claude

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/backend"
	"spbridge/internal/cliproc"
	"spbridge/internal/itemmap"
)

// between is what the backend keeps for the lines claude prints between
// turns: the reader that reads them while no turn does, the host they go
// to, what waits for a control response, and the permission requests
// asked between turns that still wait.
type between struct {
	mu      sync.Mutex
	holds   int                          // Hold calls not released
	idle    *idleReader                  // the last reader started
	host    backend.Between              // nil: keep for the next turn
	held    []itemmap.Change             // changes kept for the next turn's host
	heldEnd *itemmap.TurnEnd             // a turn's end kept for the next turn's
	waiters map[string]chan gjson.Result // control request id → its response
	asks    *backend.Approvals           // between-turn permission requests, for the process asks was made for
	asksFor *cliproc.Proc
}

// idleReader reads one process's lines between turns.
type idleReader struct {
	stop    chan struct{} // closed to stop it
	done    chan struct{} // closed when it stopped
	stopped bool          // stop is closed
}

// Watch attaches h to hear what claude does between turns (see
// backend.Background); nil detaches it.
func (b *Backend) Watch(h backend.Between) {
	b.bt.mu.Lock()
	b.bt.host = h
	b.bt.mu.Unlock()
}

// Hold stops the between-turn reader until release is called (see
// backend.Background). It returns once the reader stopped; with no hold
// left, release starts it again on the running process.
func (b *Backend) Hold() (release func()) {
	bt := &b.bt
	bt.mu.Lock()
	bt.holds++
	ir := bt.idle
	if ir != nil && !ir.stopped {
		ir.stopped = true
		close(ir.stop)
	}
	bt.mu.Unlock()
	if ir != nil {
		<-ir.done
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			bt.mu.Lock()
			defer bt.mu.Unlock()
			bt.holds--
			b.startIdleLocked()
		})
	}
}

// startIdleLocked starts the between-turn reader on the running process
// when nothing holds it and none reads; bt.mu is held.
func (b *Backend) startIdleLocked() {
	bt := &b.bt
	if bt.holds > 0 {
		return
	}
	if ir := bt.idle; ir != nil && !ir.stopped {
		select {
		case <-ir.done: // it ended with its process
		default:
			return // it reads
		}
	}
	p := b.Proc()
	if p == nil {
		return
	}
	ir := &idleReader{stop: make(chan struct{}), done: make(chan struct{})}
	bt.idle = ir
	go b.idleLoop(p, ir)
}

// idleLoop reads p's lines between turns until it is stopped or p's
// output ends.
func (b *Backend) idleLoop(p *cliproc.Proc, ir *idleReader) {
	defer close(ir.done)
	for {
		var answers <-chan backend.Answer
		asks := b.asks(p, false)
		if asks != nil {
			answers = asks.Answers()
		}
		select {
		case <-ir.stop:
			return
		case _, open := <-p.Ready():
			for line, ok := p.Next(); ok; line, ok = p.Next() {
				b.betweenLine(p, line)
				select {
				case <-ir.stop:
					return // the rest is the turn's
				default:
				}
			}
			if !open {
				b.endedBetween(p)
				return
			}
		case a := <-answers:
			if asks.Take(a) {
				b.mapper.Answered(a.RequestID, a.Decision.Allow)
				respond(p, a.RequestID, a.Decision)
			}
		}
	}
}

// host is the between-turn host, or one that keeps what it is told for
// the next turn.
func (b *Backend) host() (backend.Between, bool) {
	b.bt.mu.Lock()
	defer b.bt.mu.Unlock()
	if b.bt.host != nil {
		return b.bt.host, true
	}
	return keeper{b}, false
}

// keeper keeps between-turn changes for the next turn's host, when no
// host hears them.
type keeper struct{ b *Backend }

func (k keeper) Change(c itemmap.Change) {
	k.b.bt.mu.Lock()
	k.b.bt.held = append(k.b.bt.held, c)
	k.b.bt.mu.Unlock()
}

func (k keeper) Approve(context.Context, itemmap.Approval) backend.Decision {
	return backend.Decision{Message: noHostText}
}

func (k keeper) End(end *itemmap.TurnEnd) {
	k.b.bt.mu.Lock()
	defer k.b.bt.mu.Unlock()
	if prev := k.b.bt.heldEnd; prev != nil {
		end = mergeEnds(prev, end)
	}
	k.b.bt.heldEnd = end
}

// noHostText is the answer to a permission request that came between
// turns with nobody to ask.
const noHostText = "spbridge denied this: it came between turns, and nobody was there to ask."

// takeHeld returns, and forgets, what was kept for the next turn.
func (b *Backend) takeHeld() ([]itemmap.Change, *itemmap.TurnEnd) {
	b.bt.mu.Lock()
	defer b.bt.mu.Unlock()
	held, end := b.bt.held, b.bt.heldEnd
	b.bt.held, b.bt.heldEnd = nil, nil
	return held, end
}

// mergeEnds brings a turn claude ran on its own, first, into the end of
// the turn after it, second.
func mergeEnds(first, second *itemmap.TurnEnd) *itemmap.TurnEnd {
	second.History = append(append([]archive.Message(nil), first.History...), second.History...)
	second.Usage = first.Usage.Add(second.Usage)
	if first.CostUSD != "" {
		second.CostUSD = archive.AddNumbers(first.CostUSD, second.CostUSD)
	}
	return second
}

// asks returns the between-turn permission requests of p, made for it
// when create is set; nil when there are none. A process that is not p
// has its requests taken back.
func (b *Backend) asks(p *cliproc.Proc, create bool) *backend.Approvals {
	b.bt.mu.Lock()
	defer b.bt.mu.Unlock()
	bt := &b.bt
	if bt.asks != nil && bt.asksFor != p {
		bt.asks.Withdraw()
		bt.asks, bt.asksFor = nil, nil
	}
	if bt.asks == nil && create && bt.host != nil {
		bt.asks, bt.asksFor = backend.NewApprovals(context.Background(), bt.host), p
	}
	return bt.asks
}

// dropAsks takes back the between-turn permission requests of p.
func (b *Backend) dropAsks(p *cliproc.Proc) {
	b.bt.mu.Lock()
	defer b.bt.mu.Unlock()
	if b.bt.asks != nil && (p == nil || b.bt.asksFor == p) {
		b.bt.asks.Withdraw()
		b.bt.asks, b.bt.asksFor = nil, nil
	}
}

// betweenLine maps one line claude printed between turns and tells the
// host, at once.
func (b *Backend) betweenLine(p *cliproc.Proc, line cliproc.Line) {
	h, attached := b.host()
	if line.Oversize > 0 {
		backend.Notice(b.Opts.NewID, h, fmt.Sprintf("Skipped a line of %d bytes from Claude Code: longer than the %d-byte limit.", line.Oversize, maxLine(b.Opts.MaxLine)))
		return
	}
	if _, ok := b.resumeRefusal(p, line.Data); ok {
		// Started early (Prepare) to resume a session put to sleep, claude
		// would not: it exits, and the next turn starts a new session
		// (ResumeRefused).
		return
	}
	b.observe(line.Data, h)
	b.answerWaiter(line.Data)
	m := b.mapper
	r := m.Line(line.Data)
	if r.Skipped {
		b.Skipped()
	}
	b.apply(p, h, r)
	own := true // no turn's own message is echoed between turns
	if msg, ok := b.echoed(line.Data, &own, ""); ok {
		// A message steered into a turn that was interrupted before
		// claude took it: claude runs it now.
		b.steered(msg, h)
	}
	for _, a := range r.Approvals {
		if !attached {
			m.Answered(a.RequestID, false)
			respond(p, a.RequestID, backend.Decision{Message: noHostText})
			backend.Notice(b.Opts.NewID, h, fmt.Sprintf("Claude Code asked to use %s between turns, with nobody to ask: spbridge denied it.", a.ToolName))
			continue
		}
		b.asks(p, true).Ask(a)
	}
	end := r.End
	if end == nil && attached && ownTurnEnded(line.Data) {
		// The turn claude ran on its own (a subagent's report) ended: it
		// is brought in now, not with the next turn the user sends.
		s := m.Settle()
		for _, c := range s.Changes {
			h.Change(c)
		}
		end = s.End
	}
	if end != nil {
		h.End(end)
	}
}

// ownTurnEnded reports whether line is the result of a turn claude ran on
// its own (origin task-notification).
func ownTurnEnded(line []byte) bool {
	if !bytes.Contains(line, []byte(`"result"`)) {
		return false
	}
	v := gjson.ParseBytes(line)
	return v.Get("type").String() == "result" && v.Get("origin.kind").String() == "task-notification"
}

// endedBetween is what happens when p's output ends between turns: when p
// is still the running process (no Close stopped it) it is reaped, so that
// the next turn starts claude again, and the host hears how it ended.
func (b *Backend) endedBetween(p *cliproc.Proc) {
	b.dropAsks(p)
	if b.Proc() != p {
		return // closed
	}
	<-p.Done()
	b.Reap(p)
	h, attached := b.host()
	if !attached || b.refusedBy(p) {
		return
	}
	s := b.mapper.Settle()
	for _, c := range s.Changes {
		h.Change(c)
	}
	if s.End != nil {
		h.End(s.End)
	}
	text := "Claude Code exited between turns"
	if err := p.Err(); err != nil {
		text += " (" + err.Error() + ")"
	}
	backend.Notice(b.Opts.NewID, h, text+"; the next message starts it again.")
}

// wait registers a waiter for the control response to request id; the
// reader of the lines, between turns or in a turn, delivers it.
func (b *Backend) wait(id string) <-chan gjson.Result {
	ch := make(chan gjson.Result, 1)
	b.bt.mu.Lock()
	if b.bt.waiters == nil {
		b.bt.waiters = make(map[string]chan gjson.Result)
	}
	b.bt.waiters[id] = ch
	b.bt.mu.Unlock()
	return ch
}

// unwait forgets the waiter for request id.
func (b *Backend) unwait(id string) {
	b.bt.mu.Lock()
	delete(b.bt.waiters, id)
	b.bt.mu.Unlock()
}

// answerWaiter hands a control response to what waits for it.
func (b *Backend) answerWaiter(line []byte) {
	resp, ok := controlResponse(line)
	if !ok {
		return
	}
	id := resp.Get("request_id").String()
	b.bt.mu.Lock()
	ch := b.bt.waiters[id]
	delete(b.bt.waiters, id)
	b.bt.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
}

// await waits for the control response to request id, which ch receives
// (see wait): until p ends, the timeout, or ctx.
func (b *Backend) await(ctx context.Context, p *cliproc.Proc, id string, ch <-chan gjson.Result) (gjson.Result, error) {
	defer b.unwait(id)
	timeout := time.NewTimer(min(b.Opts.IdleTimeout, time.Minute))
	defer timeout.Stop()
	select {
	case resp := <-ch:
		return resp, nil
	case <-p.Done():
		select {
		case resp := <-ch:
			return resp, nil
		default:
		}
		return gjson.Result{}, fmt.Errorf("claude ended before it answered %s: %v", id, p.Err())
	case <-timeout.C:
		return gjson.Result{}, fmt.Errorf("claude did not answer %s", id)
	case <-ctx.Done():
		return gjson.Result{}, ctx.Err()
	}
}

// Close ends claude; the permission requests asked between turns are
// taken back.
func (b *Backend) Close() error {
	b.dropAsks(nil)
	return b.CLI.Close()
}
