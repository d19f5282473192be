package audit

import (
	"fmt"
	"sync"
	"time"
)

// Queue appends records in the background, so that a turn's answer does
// not wait for the disk. Each record is encoded when it is queued (the
// caller may change its values afterwards), and records are appended in
// the order they were queued, as Append would: those that wait together
// for one log are written with one write and one sync, and the index is
// written once for all of them. Flush waits until everything queued so far
// is on disk.
//
// A batch is written at most every BatchGap: a record that comes within
// BatchGap of the last batch waits for the rest of that time with those
// that come meanwhile, so that turns that end in quick succession share
// one write, one sync and one update of the head and the index; a record
// that comes after a pause is written at once, and neither Flush nor
// records that hold maxPendingBytes wait.
// A Queue needs no closing: its goroutine runs only while records wait.
// The zero value is not usable; make one with NewQueue.
type Queue struct {
	onError func(path string, err error)

	mu       sync.Mutex
	cond     sync.Cond
	pending  []*prepared
	running  bool      // a goroutine is writing
	queued   uint64    // records queued so far
	written  uint64    // records appended (or failed) so far
	last     time.Time // when the last batch was written
	flushing int       // Flush calls waiting
	wake     chan struct{}
	gap      time.Duration // BatchGap
	batches  int           // batches written so far

	pendingBytes int // about the size of what waits, encoded
}

// maxPendingBytes is how much waits at most for the gap: records that come
// fast and large are written without waiting once they hold this much, so
// that the memory they hold stays small.
const maxPendingBytes = 2 << 20

// BatchGap is the least time between the starts of two batches a Queue
// writes.
const BatchGap = 100 * time.Millisecond

// NewQueue returns a queue that reports the error of each append that
// failed to onError (called on the queue's goroutine; nil ignores them).
func NewQueue(onError func(path string, err error)) *Queue {
	q := &Queue{onError: onError, wake: make(chan struct{}, 1), gap: BatchGap}
	q.cond.L = &q.mu
	return q
}

// Append queues record for the log at path (as Path names it). It fails
// only when the record cannot be encoded; the append's own failure goes to
// the queue's onError.
func (q *Queue) Append(path string, record map[string]any) error {
	p, err := prepare(path, record)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, p)
	q.queued++
	q.pendingBytes += len(p.chunks) * chunkSize
	if q.pendingBytes >= maxPendingBytes {
		select { // enough waits: no need to wait for the gap
		case q.wake <- struct{}{}:
		default:
		}
	}
	if !q.running {
		q.running = true
		go q.run()
	}
	return nil
}

// Flush waits until every record queued before it is appended.
func (q *Queue) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	want := q.queued
	if q.written < want {
		q.flushing++
		select {
		case q.wake <- struct{}{}:
		default:
		}
		for q.written < want {
			q.cond.Wait()
		}
		q.flushing--
	}
}

// run appends what waits, batch after batch, until nothing does.
func (q *Queue) run() {
	for {
		q.mu.Lock()
		if wait := q.gap - time.Since(q.last); wait > 0 && q.flushing == 0 && q.pendingBytes < maxPendingBytes {
			q.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-q.wake:
				t.Stop()
			}
			q.mu.Lock()
		}
		select {
		case <-q.wake: // a Flush that came while nothing waited
		default:
		}
		q.last = time.Now()
		batch := q.pending
		q.pending, q.pendingBytes = nil, 0
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.write(batch)
		q.mu.Lock()
		q.batches++
		q.written += uint64(len(batch))
		q.cond.Broadcast()
		q.mu.Unlock()
	}
}

// write appends a batch, in order: one locked append for each run of
// records of one state folder.
func (q *Queue) write(batch []*prepared) {
	appendMu.Lock()
	defer appendMu.Unlock()
	for len(batch) > 0 {
		n := 1
		for n < len(batch) && batch[n].stateDir == batch[0].stateDir {
			n++
		}
		recs := batch[:n]
		batch = batch[n:]
		stateDir := recs[0].stateDir
		err := withLock(stateDir, func() error { return appendLocked(stateDir, groupByLog(recs)) })
		for _, p := range recs {
			if e := p.err; e != nil || err != nil {
				if e == nil {
					e = err
				}
				if q.onError != nil {
					q.onError(p.path, e)
				}
			}
		}
	}
}

// groupByLog orders records by log, keeping each log's in the order they
// came, so that each log is written once.
func groupByLog(recs []*prepared) []*prepared {
	if len(recs) < 2 {
		return recs
	}
	first := map[string]int{}
	var order []string
	byLog := map[string][]*prepared{}
	for i, p := range recs {
		if _, ok := first[p.path]; !ok {
			first[p.path] = i
			order = append(order, p.path)
		}
		byLog[p.path] = append(byLog[p.path], p)
	}
	if len(order) == 1 {
		return recs
	}
	out := make([]*prepared, 0, len(recs))
	for _, path := range order {
		out = append(out, byLog[path]...)
	}
	return out
}
