package cliproc

import (
	"bytes"
	"io"
)

// batchSize is the size of a batch's buffer at first: what one read of
// stdout takes at most (a pipe holds 64 KiB unless it is made larger). A
// program that fills a whole buffer in one read gets buffers twice as
// large, up to maxBatchSize (its pipe is made larger where the system
// allows it): a program that writes fast is read in fewer, larger reads.
// A line that does not fit grows the buffer of its batch, up to the line
// cap.
const batchSize = 64 << 10

// maxBatchSize is the largest buffer a batch starts with, and the largest
// one kept for reuse.
const maxBatchSize = 256 << 10

// maxQueued is how many batches of read lines wait for the receiver at
// most: enough to let the reader run a little ahead, small enough that a
// slow receiver holds the program back (through the pipe) rather than
// letting memory grow.
const maxQueued = 4

// batch is the complete lines one read of stdout brought, in one buffer.
type batch struct {
	buf   []byte
	lines []Line // views into buf, or Oversize reports
	next  int    // the receiver's place in lines
}

// readBatches reads lines from r into batches and hands each batch that
// holds a line to send as soon as the read that completed it returns, until
// r reports an error or send returns false. A batch's buffer comes from
// newBatch, which returns an empty batch with room for at least one byte;
// it is told whether the last read filled the whole room it was given.
// A final line without "\n" is delivered; a line longer than maxLine bytes
// is read through to its end and reported as Line{Oversize: n}, holding at
// most about maxLine bytes while it is found out. It returns nil at io.EOF
// or when send refused a batch, and otherwise r's error.
func readBatches(r io.Reader, maxLine int, newBatch func(full bool) *batch, send func(*batch) bool) error {
	b := newBatch(false)
	var (
		start int   // where the line being read begins in b.buf
		skip  int64 // bytes of an oversize line so far, when skipping
	)
	for {
		room := cap(b.buf) - len(b.buf)
		n, err := r.Read(b.buf[len(b.buf):cap(b.buf)])
		full := n == room // the next batch may be larger
		scan := len(b.buf)
		b.buf = b.buf[:scan+n]
		for {
			i := bytes.IndexByte(b.buf[scan:], '\n')
			if i < 0 {
				break
			}
			end := scan + i
			switch {
			case skip > 0:
				b.lines = append(b.lines, Line{Oversize: skip + int64(end-start)})
				skip = 0
			case end-start > maxLine:
				b.lines = append(b.lines, Line{Oversize: int64(end - start)})
			default:
				b.lines = append(b.lines, Line{Data: b.buf[start:end:end]})
			}
			start, scan = end+1, end+1
		}
		// b.buf[start:] is the beginning of the next line.
		if rest := len(b.buf) - start; skip > 0 || rest > maxLine {
			skip += int64(rest)
			b.buf = b.buf[:start]
		}
		if err != nil {
			switch {
			case skip > 0:
				b.lines = append(b.lines, Line{Oversize: skip})
			case len(b.buf) > start:
				end := len(b.buf)
				b.lines = append(b.lines, Line{Data: b.buf[start:end:end]})
			}
			if len(b.lines) > 0 && !send(b) {
				return nil
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
		switch {
		case len(b.lines) > 0:
			// The beginning of the next line moves to the next batch.
			next := newBatch(full)
			next.buf = append(next.buf, b.buf[start:]...)
			b.buf = b.buf[:start]
			if !send(b) {
				return nil
			}
			b, start = next, 0
		case len(b.buf) == cap(b.buf):
			// One line fills the buffer (start is 0: no line ended in it).
			grown := make([]byte, len(b.buf), min(2*cap(b.buf), maxLine+1))
			copy(grown, b.buf)
			b.buf = grown
		}
	}
}

// Ready returns a channel that receives a value when Next has lines to
// return (a value may also come when another receiver has taken them), and
// is closed once stdout has been read to the end (a final line without
// "\n" is delivered first) and Next has returned every line, or when Close
// gave up on the receiver. The receiver calls Next until it reports no
// line; it may stop before, and the channel then receives again. The
// reader waits for the receiver and never drops a line: a receiver that
// stops taking lines stalls the program once the pipe is full.
//
// The lines of one read come together, so a receiver is woken once for
// every line the program wrote between two reads, not once a line:
//
//	case _, open := <-p.Ready():
//		for l, ok := p.Next(); ok; l, ok = p.Next() {
//			...
//		}
//		if !open {
//			// stdout ended
//		}
func (p *Proc) Ready() <-chan struct{} { return p.ready }

// Next returns the next line read from stdout, without waiting: ok is false
// when every line read so far has been returned. The line's Data is valid
// until the next call of Next (the buffer it is in is reused); a receiver
// copies what it keeps. Next is meant for one receiver at a time.
func (p *Proc) Next() (l Line, ok bool) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.discard {
		return Line{}, false
	}
	for {
		if c := p.cur; c != nil {
			if c.next < len(c.lines) {
				l = c.lines[c.next]
				c.next++
				if c.next < len(c.lines) || len(p.queue) > 0 {
					p.signalReady() // for a receiver that stops here
				} else {
					poke(p.space) // all taken: the reader may end
				}
				return l, true
			}
			p.recycle(c)
			p.cur = nil
		}
		if len(p.queue) == 0 || p.discard {
			return Line{}, false
		}
		p.cur = p.queue[0]
		copy(p.queue, p.queue[1:])
		p.queue[len(p.queue)-1] = nil
		p.queue = p.queue[:len(p.queue)-1]
		poke(p.space)
	}
}

// poke sends on ch, a channel of capacity 1, unless it holds a value.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// signalReady tells the receiver that lines wait; p.qmu is held.
func (p *Proc) signalReady() {
	if !p.readyClosed {
		poke(p.ready)
	}
}

// maxPooled is how many batches are kept for reuse: as many as can be in
// use at once (the receiver's, those queued, the one the reader fills and
// the one it takes next), so that a stream that comes in bursts reuses the
// same buffers burst after burst.
const maxPooled = maxQueued + 3

// recycle keeps a batch the receiver is done with for the reader to fill
// again, unless a long line grew it; p.qmu is held.
func (p *Proc) recycle(b *batch) {
	if cap(b.buf) > maxBatchSize || cap(b.lines) > 8192 || len(p.pool) >= maxPooled {
		return
	}
	clear(b.lines)
	b.buf, b.lines, b.next = b.buf[:0], b.lines[:0], 0
	p.pool = append(p.pool, b)
}

// newBatch returns an empty batch for the reader; full says the last read
// filled its buffer.
func (p *Proc) newBatch(full bool) *batch {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if full && p.batchSize < maxBatchSize {
		p.batchSize *= 2
	}
	for n := len(p.pool); n > 0; n-- {
		b := p.pool[n-1]
		p.pool[n-1] = nil
		p.pool = p.pool[:n-1]
		if cap(b.buf) >= p.batchSize {
			return b
		}
		// Smaller than reads now are: dropped.
	}
	return &batch{buf: make([]byte, 0, p.batchSize)}
}

// sendBatch queues b for the receiver, waiting while maxQueued batches
// wait (b is dropped once the receiver is gone: Discard, or Close gave up
// on it); it returns false when Close stopped the reading.
func (p *Proc) sendBatch(b *batch) bool {
	for {
		p.qmu.Lock()
		if p.discard {
			// Nobody takes it: dropped, and stdout read on to its end.
			p.recycle(b)
			p.qmu.Unlock()
			return true
		}
		if len(p.queue) < maxQueued {
			p.queue = append(p.queue, b)
			p.signalReady()
			p.qmu.Unlock()
			return true
		}
		p.qmu.Unlock()
		select {
		case <-p.space:
		case <-p.stop:
			return false
		}
	}
}

// endLines waits until the receiver has taken every line, or Close gave up
// on it, and closes the Ready channel.
func (p *Proc) endLines() {
	stopped := false
	for {
		p.qmu.Lock()
		drained := stopped || p.discard || len(p.queue) == 0 && (p.cur == nil || p.cur.next == len(p.cur.lines))
		if drained {
			p.readyClosed = true
			close(p.ready)
		}
		p.qmu.Unlock()
		if drained {
			return
		}
		select {
		case <-p.space:
		case <-p.stop:
			stopped = true
		}
	}
}

// Discard tells p that its receiver takes no more lines: those not taken
// are dropped, and so is the rest of stdout as it is read (the program
// still writes it to the end, as it exits), and Close does not wait for a
// receiver that will not come; Next returns no line from now on. The
// receiver that reaps p calls it, and so does Close when it gives up on
// the receiver.
func (p *Proc) Discard() {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	p.discard = true
	clear(p.queue)
	p.queue = p.queue[:0]
	poke(p.space) // endLines no longer waits for the receiver
}
