package claude

import (
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/cliproc"
)

// Sleeping. An idle claude is ended (its input closed: it exits at once)
// and the next turn, or Prepare, starts it again with --resume of its
// session, as after a claude that exited between turns: the session's
// model, effort, mode and folders go on its command line as they stand.
// Claude Code 2.1.328 tells what runs in the background with
// system/background_tasks_changed (the list of its tasks: a subagent
// running after the turn's result), and runs a turn of its own once such a
// task ends: while either goes on, or a permission request asked between
// turns waits, claude is not put to sleep.

// Sleep ends the claude process when it is idle (backend.Sleeper).
func (b *Backend) Sleep() bool {
	if !b.lines.TryLock() {
		return false // a turn runs, or Prepare starts claude
	}
	defer b.lines.Unlock()
	release := b.Hold() // the between-turn reader stops: nothing comes meanwhile
	defer release()
	p := b.Proc()
	if p == nil || b.busyBetween() {
		return false
	}
	b.mu.Lock()
	b.slept = b.session != ""
	b.mu.Unlock()
	b.dropAsks(nil)
	b.CLI.Close() // how it ended is no failure: it was asked to
	return true
}

// Awake reports whether a claude process runs (backend.Sleeper).
func (b *Backend) Awake() bool { return b.Proc() != nil }

// ResumeRefused reports, once, that claude refused to resume its session
// after a Sleep (backend.Sleeper).
func (b *Backend) ResumeRefused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.refused
	b.refused = false
	return r
}

// busyBetween reports whether claude works between turns: a background
// task it reported runs, it runs a turn of its own, or a permission
// request asked between turns waits. The between-turn reader is held.
func (b *Backend) busyBetween() bool {
	b.mu.Lock()
	tasks := b.bgTasks
	b.mu.Unlock()
	if tasks > 0 || (b.mapper != nil && b.mapper.InTurn()) {
		return true
	}
	b.bt.mu.Lock()
	defer b.bt.mu.Unlock()
	return b.bt.asks != nil && b.bt.asks.Pending() > 0
}

// backgroundTasks reads system/background_tasks_changed: how many tasks
// claude runs in the background now.
func (b *Backend) backgroundTasks(line []byte) {
	n := len(gjson.GetBytes(line, "tasks").Array())
	b.mu.Lock()
	b.bgTasks = n
	b.mu.Unlock()
}

// refusal is what claude said when it would not resume its session.
type refusal struct{ text, detail string }

// isWaking reports whether p was started to resume a session put to sleep
// and has not said yet that it did.
func (b *Backend) isWaking(p *cliproc.Proc) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return p != nil && b.waking == p
}

// refusedBy reports whether p is the process that refused to resume a
// session: its exit is no news.
func (b *Backend) refusedBy(p *cliproc.Proc) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return p != nil && b.refusedProc == p
}

// refuse forgets the session p would not resume: the next process starts
// a new one, and ResumeRefused says so once. It returns the session's id.
func (b *Backend) refuse(p *cliproc.Proc) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	sid := b.session
	b.session, b.refused, b.waking, b.refusedProc = "", true, nil, p
	return sid
}

// resumeRefusal reads a line of p, started to resume a session put to
// sleep, that comes before p said it resumed it: its system/init says it
// did; a result first is its refusal (claude 2.1.328 prints one result,
// "No conversation found with session ID: …", and exits). ok reports
// whether the line was the refusal; the session is forgotten then.
func (b *Backend) resumeRefusal(p *cliproc.Proc, data []byte) (refusal, bool) {
	if !b.isWaking(p) {
		return refusal{}, false
	}
	if isType(data, "system") && gjson.GetBytes(data, "subtype").String() == "init" {
		b.mu.Lock()
		if b.waking == p {
			b.waking = nil
		}
		b.mu.Unlock()
		return refusal{}, false
	}
	if !isType(data, "result") {
		return refusal{}, false
	}
	var said []string
	for _, e := range gjson.GetBytes(data, "errors").Array() {
		said = append(said, e.String())
	}
	sid := b.refuse(p)
	return refusal{text: "Claude Code could not resume its session " + sid + " after it was put to sleep.", detail: strings.Join(said, "\n")}, true
}
