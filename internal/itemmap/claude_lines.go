package itemmap

import "spbridge/internal/jsonline"

// ClaudeLine is a line of a claude stream read ahead of its mapping: the
// reading (validating it, finding its fields, or matching it to the shape
// of a delta) needs nothing of the mapper, so a caller may read lines on
// one goroutine while a Claude maps those read before on another (see
// ClaudeLines). Line does both at once.
type ClaudeLine struct {
	line  []byte
	fast  fastLine
	doc   jsonline.Doc
	valid bool
	// results are the tool results of a user line, as text and images
	// (the work of copying them out of the line done with the reading).
	results []readResult
}

// readResult is a tool_result's content read ahead: content is the node of
// the content it was read from.
type readResult struct {
	content int32
	out     string
	images  []Image
}

// read reads line, its values in nodes after those already there, and
// returns nodes and stack to reuse. With fast set it takes the fast path
// for the lines it can, and reads a user line's tool results ahead;
// without it, the mapper finds everything the general way (tests compare
// the two).
// The line's bytes must stay as they are until it is mapped.
func (l *ClaudeLine) read(line []byte, fast bool, nodes []jsonline.Node, stack []int32) ([]jsonline.Node, []int32) {
	l.line = line
	l.fast = fastLine{}
	l.results = l.results[:0]
	if fast {
		if f, ok := readFast(line); ok {
			l.fast = f
			return nodes, stack
		}
	}
	var ok bool
	nodes, stack, ok = l.doc.ParseInto(line, nodes, stack)
	l.valid = ok
	if !ok {
		return nodes, stack
	}
	if fast {
		l.readResults()
	}
	return nodes, stack
}

// readResults reads the tool results of a user line (the main agent's or
// a subagent's) into l.results: the content of each block of
// message.content whose type is tool_result, as user and subagent read
// it.
func (l *ClaudeLine) readResults() {
	root := l.doc.Root()
	if !root.IsObject() || !root.Field("type").Is("user") {
		return
	}
	for it := root.Field("message").Field("content").Elems(); ; {
		c, ok := it.Next()
		if !ok {
			return
		}
		if !c.Field("type").Is("tool_result") {
			continue
		}
		content := c.Field("content")
		if !content.Exists() {
			continue
		}
		out, images := toolResultContent(content)
		l.results = append(l.results, readResult{content: content.Index(), out: out, images: images})
	}
}

// toolResultContent is toolResultContent(c) for a value of the line
// being mapped, read ahead when it was read.
func (m *Claude) toolResultContent(c jsonline.Value) (string, []Image) {
	if l := m.line; l != nil && c.Doc() == &l.doc {
		for _, r := range l.results {
			if r.content == c.Index() {
				return r.out, r.images
			}
		}
	}
	return toolResultContent(c)
}

// ClaudeLines is a batch of lines read ahead of their mapping. A caller
// reads lines into it with Read (on any goroutine), hands it to the one
// that maps, which maps each with Claude.MapRead, and then Resets it to
// read the next batch. The lines' bytes must stay as they are until the
// batch is Reset.
type ClaudeLines struct {
	lines []ClaudeLine
	nodes []jsonline.Node // the values of every line, one after the other
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
		b.lines[i].line = nil
		b.lines[i].doc.Reset()
		b.lines[i].fast = fastLine{}
		clear(b.lines[i].results)
		b.lines[i].results = b.lines[i].results[:0]
	}
	b.lines, b.nodes = b.lines[:0], b.nodes[:0]
}

// NewLines is a batch to read lines ahead into (ReadAhead): a
// ClaudeLines.
func (m *Claude) NewLines() Lines { return new(ClaudeLines) }

// MapRead maps line i of batch b, a ClaudeLines, as Line would map it.
// Lines must be mapped in the order of the stream, each once.
func (m *Claude) MapRead(b Lines, i int) Result {
	return m.mapLine(&b.(*ClaudeLines).lines[i])
}
