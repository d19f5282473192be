package acp

import "sync"

// turnRecorder records the turns of a session that already has its title
// in the sessions index in the background: only the time of its last
// change moves, and the prompt's answer need not wait for the disk. The
// records are written in order, the last message winning when several
// wait; wait lets a change that must follow them (a title cleared, a
// record that may set the title) wait for them.
type turnRecorder struct {
	mu         sync.Mutex
	cond       sync.Cond
	text       string // the message of the last turn to record
	want, done uint64 // records asked for, and written, so far
	running    bool
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
	ss.srv.wg.Add(1) // under a turn's count: shutdown waits for it
	go func() {
		defer ss.srv.wg.Done()
		r.mu.Lock()
		for r.done < r.want {
			text, want := r.text, r.want
			r.mu.Unlock()
			if err := ss.srv.cfg.Index.Record(ss.id, ss.cwd, text); err != nil {
				ss.srv.cfg.Log.Printf("session %s: sessions index: %v", ss.id, err)
			}
			r.mu.Lock()
			r.done = want
			r.broadcast()
		}
		r.running = false
		r.broadcast()
		r.mu.Unlock()
	}()
}

// wait returns once every record asked for is written.
func (r *turnRecorder) wait() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.running {
		if r.cond.L == nil {
			r.cond.L = &r.mu
		}
		r.cond.Wait()
	}
}

// broadcast wakes the waiters; mu is held.
func (r *turnRecorder) broadcast() {
	if r.cond.L != nil {
		r.cond.Broadcast()
	}
}
