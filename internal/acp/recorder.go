package acp

import (
	"sync"
	"time"
)

// recordEvery is the least time between two background records of a
// session's turns: a burst of turns moves the index's time once or twice
// a second, not once a turn.
const recordEvery = 500 * time.Millisecond

// turnRecorder records the turns of a session that already has its title
// in the sessions index in the background: only the time of its last
// change moves, and the prompt's answer need not wait for the disk. The
// records are written in order, the last message winning when several
// wait; after a record, the next waits recordEvery, unless hurried. wait
// lets a change that must follow them (a title cleared, a record that may
// set the title, the session's end) have them written at once and wait.
type turnRecorder struct {
	mu         sync.Mutex
	cond       sync.Cond
	text       string // the message of the last turn to record
	want, done uint64 // records asked for, and written, so far
	running    bool
	hurried    chan struct{} // ends the pause between two records
}

// later records a turn of ss with this message in the background.
func (r *turnRecorder) later(ss *acpSession, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.text = text
	r.want++
	if r.running {
		return
	}
	r.running = true
	if r.hurried == nil {
		r.hurried = make(chan struct{}, 1)
	}
	ss.srv.wg.Add(1) // under a turn's count: shutdown waits for it
	go func() {
		defer ss.srv.wg.Done()
		r.mu.Lock()
		for r.done < r.want {
			text, want := r.text, r.want
			r.mu.Unlock()
			if err := ss.srv.cfg.Index.Record(ss.set.pkg, ss.set.cwd, text); err != nil {
				ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
			}
			r.mu.Lock()
			r.done = want
			r.broadcast()
			if r.done < r.want {
				// More came meanwhile: the latest is written after a pause.
				r.mu.Unlock()
				pause := time.NewTimer(recordEvery)
				select {
				case <-pause.C:
				case <-r.hurried:
					pause.Stop()
				}
				r.mu.Lock()
			}
		}
		r.running = false
		r.broadcast()
		r.mu.Unlock()
	}()
}

// hurry ends the pause before the next record, if one waits.
func (r *turnRecorder) hurry() {
	r.mu.Lock()
	ch := r.hurried
	r.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wait returns once every record asked for is written, hurrying them.
func (r *turnRecorder) wait() {
	r.hurry()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.running {
		if r.cond.L == nil {
			r.cond.L = &r.mu
		}
		r.cond.Wait()
		if r.running {
			r.mu.Unlock()
			r.hurry()
			r.mu.Lock()
		}
	}
}

// broadcast wakes the waiters; mu is held.
func (r *turnRecorder) broadcast() {
	if r.cond.L != nil {
		r.cond.Broadcast()
	}
}
