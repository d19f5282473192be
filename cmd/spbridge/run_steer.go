package main

import (
	"fmt"
	"strings"
	"sync"

	"spbridge/internal/session"
)

// Steering from the terminal: while `spbridge run` works, a line typed on
// its terminal is taken into the running turn (session.Steer); a line
// starting with queuePrefix is queued instead, sent as a turn of its own
// after the others. A line the turn could not take (it ended first, or its
// CLI takes none: codex exec, a review) is queued the same way, and said
// so: nothing typed is lost. A line that answers a permission question is
// that question's answer.

// queuePrefix starts a line typed during a run that is queued, not steered.
const queuePrefix = ">"

// runQueue is what `run` still has to send, one turn each: the messages of
// its command line, then what was queued from the terminal.
type runQueue struct {
	mu   sync.Mutex
	msgs []string
}

func (q *runQueue) push(text string) {
	q.mu.Lock()
	q.msgs = append(q.msgs, text)
	q.mu.Unlock()
}

// next takes the next message; false when none is left.
func (q *runQueue) next() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) == 0 {
		return "", false
	}
	text := q.msgs[0]
	q.msgs = q.msgs[1:]
	return text, true
}

// typed handles a line typed on the terminal that answers no question: it
// steers the running turn, or is queued.
func (h *shellHost) typed(s *session.Session, q *runQueue, line string) {
	text := strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(text) == "" {
		return
	}
	if rest, ok := strings.CutPrefix(text, queuePrefix); ok {
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return
		}
		q.push(rest)
		h.say("queued: " + rest)
		return
	}
	res, err := s.Steer(nil, session.Request{Text: text}, session.SteerOptions{HandBack: true})
	switch {
	case err != nil:
		h.say(fmt.Sprintf("not sent (%v): %s", err, text))
	case res.Outcome == session.SteerInjected:
		h.say("steered the turn: " + text)
	default:
		q.push(text)
		why := "the turn ended"
		if res.Reason != session.NoRunningTurn {
			why = res.Reason
		}
		h.say(fmt.Sprintf("queued (%s): %s", why, text))
	}
}

// say writes a line of spbridge's own on the error stream.
func (h *shellHost) say(text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clearStatus()
	h.endLine()
	fmt.Fprintf(h.errw, "spbridge: %s\n", text)
}

// steerFrom lets the lines typed on the terminal steer s's turns (or be
// queued on q) until the returned stop is called. Without a terminal it
// does nothing.
func (h *shellHost) steerFrom(s *session.Session, q *runQueue) (stop func()) {
	if h.ask == nil {
		return func() {}
	}
	h.mu.Lock()
	h.onLine = func(line string) { h.typed(s, q, line) }
	h.mu.Unlock()
	h.answers() // the terminal's reader runs from now on
	return func() {
		h.mu.Lock()
		h.onLine = nil
		h.mu.Unlock()
	}
}
