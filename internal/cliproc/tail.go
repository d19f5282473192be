package cliproc

import "sync"

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte // grows to max, then is used as a ring
	pos int    // index of the oldest byte once buf is full
}

func newTailBuffer(size int) *tailBuffer { return &tailBuffer{max: size} }

func (t *tailBuffer) write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	if room := t.max - len(t.buf); room > 0 {
		k := min(room, len(b))
		t.buf = append(t.buf, b[:k]...)
		b = b[k:]
	}
	for len(b) > 0 {
		k := copy(t.buf[t.pos:], b)
		b = b[k:]
		t.pos = (t.pos + k) % t.max
	}
}

// bytes returns a copy of the kept bytes, oldest first.
func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.pos:]...)
	return append(out, t.buf[:t.pos]...)
}
