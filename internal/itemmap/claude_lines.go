package itemmap

import "unsafe"

// ClaudeLine is a line of a claude stream read ahead of its mapping: the
// reading (validating it, finding its fields, or matching it to the shape
// of a delta) needs nothing of the mapper, so a caller may read lines on
// one goroutine while a Claude maps those read before on another (see
// ClaudeLines). Line does both at once.
type ClaudeLine struct {
	line  []byte
	fast  fastLine
	doc   jdoc
	valid bool
}

// read reads line (taking the fast path when fast is set), its values in
// nodes after those already there, and returns nodes and stack to reuse.
// The line's bytes must stay as they are until it is mapped.
func (l *ClaudeLine) read(line []byte, fast bool, nodes []jnode, stack []int32) ([]jnode, []int32) {
	l.line = line
	l.fast = fastLine{}
	if fast {
		if f, ok := readFast(line); ok {
			l.fast = f
			return nodes, stack
		}
	}
	start := len(nodes)
	l.valid = false
	l.doc.s = unsafe.String(unsafe.SliceData(line), len(line))
	l.doc.nodes = nil
	if uint64(len(line)) >= 1<<31 {
		return nodes, stack
	}
	var ok bool
	nodes, stack, ok = parseNodes(line, nodes, stack[:0])
	if !ok {
		return nodes[:start], stack
	}
	l.valid = true
	l.doc.nodes = nodes[start:len(nodes):len(nodes)]
	return nodes, stack
}

// ClaudeLines is a batch of lines read ahead of their mapping. A caller
// reads lines into it with Read (on any goroutine), hands it to the one
// that maps, which maps each with Claude.MapRead, and then Resets it to
// read the next batch. The lines' bytes must stay as they are until the
// batch is Reset.
type ClaudeLines struct {
	lines []ClaudeLine
	nodes []jnode // the values of every line, one after the other
	stack []int32
}

// Read reads line into the batch, after the lines there.
func (b *ClaudeLines) Read(line []byte) {
	if len(b.lines) == cap(b.lines) {
		b.lines = append(b.lines, ClaudeLine{})
	} else {
		b.lines = b.lines[:len(b.lines)+1]
	}
	b.nodes, b.stack = b.lines[len(b.lines)-1].read(line, true, b.nodes, b.stack)
}

// Line is line i of the batch, as it was read.
func (b *ClaudeLines) Line(i int) []byte { return b.lines[i].line }

// Len is the number of lines read into the batch.
func (b *ClaudeLines) Len() int { return len(b.lines) }

// Reset empties the batch, keeping its memory for the next.
func (b *ClaudeLines) Reset() {
	for i := range b.lines {
		b.lines[i].line, b.lines[i].doc.s, b.lines[i].doc.nodes = nil, "", nil
		b.lines[i].fast = fastLine{}
	}
	b.lines, b.nodes = b.lines[:0], b.nodes[:0]
}

// MapRead maps line i of batch b as Line would map it. Lines must be
// mapped in the order of the stream, each once.
func (m *Claude) MapRead(b *ClaudeLines, i int) Result {
	return m.mapLine(&b.lines[i])
}
