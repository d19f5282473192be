package sessionindex

import (
	"sync"
	"time"
)

// RecordEvery is the least time between two background records of a
// session's turns: a burst of turns moves the index's time once or twice
// a second, not once a turn.
const RecordEvery = 500 * time.Millisecond

// Recorder records the turns of a session that already has its title in
// the sessions index in the background (Record): only the time of its last
// change moves, and the prompt's answer need not wait for the disk. The
// records are written in order, the last message winning when several
// wait; after a record, the next waits RecordEvery, unless hurried. Wait
// lets a change that must follow them (a title cleared, a record that may
// set the title, the session's end) have them written at once and wait.
type Recorder struct {
	mu         sync.Mutex
	cond       sync.Cond
	text       string // the message of the last turn to record
	want, done uint64 // records asked for, and written, so far
	running    bool
	hurried    chan struct{} // ends the pause between two records
}

// Later records a turn of the package pkg (its folder cwd) with this
// message in ix in the background; failed is told a record that could not
// be written. The zero Recorder is ready for use.
func (r *Recorder) Later(ix *Index, pkg, cwd, text string, failed func(error)) {
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
	go func() {
		r.mu.Lock()
		for r.done < r.want {
			text, want := r.text, r.want
			r.mu.Unlock()
			if err := ix.Record(pkg, cwd, text); err != nil && failed != nil {
				failed(err)
			}
			r.mu.Lock()
			r.done = want
			r.broadcast()
			if r.done < r.want {
				// More came meanwhile: the latest is written after a pause.
				r.mu.Unlock()
				pause := time.NewTimer(RecordEvery)
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

// Hurry ends the pause before the next record, if one waits.
func (r *Recorder) Hurry() {
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

// Wait returns once every record asked for is written, hurrying them.
func (r *Recorder) Wait() {
	r.Hurry()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.running {
		if r.cond.L == nil {
			r.cond.L = &r.mu
		}
		r.cond.Wait()
		if r.running {
			r.mu.Unlock()
			r.Hurry()
			r.mu.Lock()
		}
	}
}

// broadcast wakes the waiters; mu is held.
func (r *Recorder) broadcast() {
	if r.cond.L != nil {
		r.cond.Broadcast()
	}
}
