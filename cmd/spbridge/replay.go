package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/cliproc"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
)

func runReplay(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("replay", "--backend claude|codex [--codex-transport exec|app-server] [FILE]",
		"Read a recorded CLI event stream (JSON lines; standard input when FILE is\n"+
			"absent or -) and print the items it maps to as a canonical JSON array. Exit 0\n"+
			"whenever the stream could be read: a failed or interrupted turn shows in the\n"+
			"items. Item ids are sequential, so the output is the same at every run.")
	backend := f.String("backend", "", "the CLI that wrote the stream: claude or codex")
	own := addCLIFlags(f, false, true)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if *backend == "" {
		return usagef(f.cmd, "replay needs --backend claude or --backend codex")
	}
	if err := checkBackend(f, *backend, own); err != nil {
		return err
	}
	if f.NArg() > 1 {
		return usagef(f.cmd, "replay takes at most one FILE")
	}
	in := st.in
	if f.NArg() == 1 && f.Arg(0) != "-" {
		file, err := os.Open(f.Arg(0))
		if err != nil {
			return err
		}
		defer file.Close()
		in = file
	}
	out := bufio.NewWriterSize(st.out, 64<<10)
	gc := newReplayGC()
	defer gc.restore()
	if err := replayStream(in, *backend, own.own(*backend), out, gc.pace); err != nil {
		return err
	}
	return out.Flush()
}

// replayStream maps a recorded stream to the items a panel would show at
// its end and writes them to out as one canonical JSON array and a newline,
// the same bytes as canonjson.Encode of the whole list. A stream that stops
// inside a turn ends that turn as failed.
//
// A mapper keeps nothing of a turn once it ended, so the items a turn made
// are final when the mapper is between turns: they are written then and
// dropped, and the memory held is one turn's items, not the stream's.
//
// pace, when not nil, is called after each turn written and each batch of
// lines mapped (replayGC.pace).
func replayStream(in io.Reader, backend string, own map[string]string, out *bufio.Writer, pace func()) error {
	newID := itemmap.SequentialIDs()
	cli, ok := clis.Lookup(backend)
	if !ok {
		return fmt.Errorf("unknown backend %q (want %s)", backend, clis.Choices())
	}
	m := cli.Mapper(newID, own)
	recorded, _ := m.(itemmap.Recorded)
	var (
		items   []archive.Item // not written yet
		written int
		enc     []byte
		werr    error
	)
	flush := func() {
		for i, it := range items {
			items[i] = archive.Item{}
			if werr != nil {
				continue
			}
			if written == 0 {
				enc = append(enc[:0], "[\n  "...)
			} else {
				enc = append(enc[:0], ",\n  "...)
			}
			enc, werr = canonjson.AppendAt(enc, it.Map(), 1)
			if werr == nil {
				_, werr = out.Write(enc)
			}
			written++
		}
		items = items[:0]
		if pace != nil {
			pace()
		}
	}
	apply := func(r itemmap.Result) {
		for _, c := range r.Changes {
			switch c.Op {
			case itemmap.OpAdd:
				items = append(items, c.Item)
			case itemmap.OpRemove:
				if i := slices.IndexFunc(items, func(it archive.Item) bool { return it.ID() == c.Item.ID() }); i >= 0 {
					items = slices.Delete(items, i, i+1)
				}
			}
		}
		if !m.InTurn() {
			flush()
		}
	}
	oversize := func(n int64) {
		it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice,
			"text": fmt.Sprintf("Skipped a line of %d bytes: longer than the %d-byte limit.", n, cliproc.DefaultMaxLine)})
		items = append(items, it)
		if !m.InTurn() {
			flush()
		}
	}
	var err error
	if ra, ok := m.(itemmap.ReadAhead); ok {
		// Lines are read (validated, their fields found) on a goroutine
		// of their own, ahead of the mapping and writing on this one.
		err = readAhead(in, 0, ra.NewLines, func(b *replayBatch) bool {
			i := 0
			for _, e := range b.entries {
				switch {
				case e > 0:
					oversize(e)
				case e == 0:
					apply(ra.MapRead(b.lines, i))
					i++
				}
				if werr != nil {
					return false
				}
			}
			if pace != nil {
				pace()
			}
			return true
		})
	} else {
		err = cliproc.ReadLines(in, 0, func(l cliproc.Line) bool {
			if l.Oversize > 0 {
				oversize(l.Oversize)
				return werr == nil
			}
			data := l.Data
			if recorded != nil {
				// A recorded session: only what the CLI wrote.
				var ok bool
				if data, ok = recorded.Unwrap(data); !ok {
					return true
				}
			}
			if len(data) > 0 {
				apply(m.Line(data))
			}
			return werr == nil
		})
	}
	if werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("read stream: %w", err)
	}
	if m.InTurn() {
		apply(m.Finish(false, "The stream ended before the turn did.", ""))
	}
	flush()
	if werr != nil {
		return werr
	}
	if written == 0 {
		_, err = out.WriteString("[]\n")
	} else {
		_, err = out.WriteString("\n]\n")
	}
	return err
}

// replayBatch is a batch of a stream's lines read ahead.
type replayBatch struct {
	data  []byte        // the lines' bytes
	lines itemmap.Lines // the mapper's (itemmap.ReadAhead)
	// entries are the stream's lines in the batch, in order: an
	// oversize line's length, 0 for the next line in lines, -1 for an
	// empty line.
	entries []int64
	last    bool  // reading ended after this batch
	err     error // with this error (nil: at the end of the stream)
}

func (b *replayBatch) reset() {
	b.data, b.entries, b.last, b.err = b.data[:0], b.entries[:0], false, nil
	if cap(b.data) > 4*replayBatchBytes {
		b.data = nil // grown for a long line: not kept for every batch
	}
	b.lines.Reset()
}

// Batches of lines read ahead: a batch is handed over once it holds this
// many bytes or lines; this many batches go round.
const (
	replayBatchBytes = 256 << 10
	replayBatchLines = 2048
	replayBatches    = 3
)

// readAhead reads a stream from r line by line as cliproc.ReadLines does
// (the same lines, the same Oversize reports), on a goroutine of its own,
// into batches of lines read ahead (itemmap.Lines, made by newLines), and
// hands each batch to fn in order on the calling goroutine until the
// stream ends or fn returns false. A batch's lines are valid until fn
// returns. The stream is read straight into the
// batches' buffers: no line is copied but the start of one that a
// batch's buffer ends in. It returns nil at the end of r and r's error
// otherwise; when fn stops early, the reading goroutine ends at its next
// read and is not waited for.
func readAhead(r io.Reader, maxLine int, newLines func() itemmap.Lines, fn func(*replayBatch) bool) error {
	if maxLine <= 0 {
		maxLine = cliproc.DefaultMaxLine
	}
	free := make(chan *replayBatch, replayBatches)
	full := make(chan *replayBatch, replayBatches)
	done := make(chan struct{})
	for range replayBatches {
		free <- &replayBatch{lines: newLines()}
	}
	go func() {
		defer close(full)
		var (
			b       = <-free
			pending int   // b.data[pending:] is a line not yet complete
			scanned int   // b.data[:scanned] has been looked at for newlines
			skipped int64 // the length so far of a line too long to keep, not in b.data
		)
		// line takes the line b.data[pending:end] (end at its newline, or
		// at the end of the stream).
		line := func(end int) {
			n := skipped + int64(end-pending)
			switch {
			case n > int64(maxLine):
				b.entries = append(b.entries, n)
			case n == 0:
				b.entries = append(b.entries, -1)
			default:
				b.lines.Read(b.data[pending:end])
				b.entries = append(b.entries, 0)
			}
			pending, skipped = end, 0
		}
		// next hands b over and goes on in the next batch with the
		// incomplete line's start; false when the mapping stopped.
		next := func() bool {
			var nb *replayBatch
			select {
			case nb = <-free:
			case <-done:
				return false
			}
			if rest := len(b.data) - pending; cap(nb.data) < replayBatchBytes+rest {
				nb.data = make([]byte, 0, max(2*replayBatchBytes, 2*rest))
			}
			nb.data = append(nb.data[:0], b.data[pending:]...)
			b.data = b.data[:pending]
			select {
			case full <- b:
			case <-done:
				return false
			}
			b, scanned, pending = nb, scanned-pending, 0
			return true
		}
		for {
			if room := cap(b.data) - len(b.data); len(b.entries) >= replayBatchLines || room < replayBatchBytes/4 {
				if len(b.entries) > 0 {
					if !next() {
						return
					}
				} else {
					// One line longer than the buffer: a larger one.
					nd := make([]byte, len(b.data)-pending, max(2*replayBatchBytes, 2*cap(b.data)))
					copy(nd, b.data[pending:])
					b.data, scanned, pending = nd, scanned-pending, 0
				}
			}
			n, err := r.Read(b.data[len(b.data):cap(b.data)])
			b.data = b.data[:len(b.data)+n]
			for {
				i := bytes.IndexByte(b.data[scanned:], '\n')
				if i < 0 {
					scanned = len(b.data)
					break
				}
				scanned += i + 1
				line(scanned - 1)
				pending = scanned
			}
			if rest := int64(len(b.data) - pending); skipped+rest > int64(maxLine) {
				// Too long to keep: counted, not held.
				skipped += rest
				b.data, scanned = b.data[:pending], pending
			}
			if err != nil {
				if skipped > 0 || pending < len(b.data) {
					line(len(b.data))
				}
				if err == io.EOF {
					err = nil
				}
				b.last, b.err = true, err
				select {
				case full <- b:
				case <-done:
				}
				return
			}
		}
	}()
	for b := range full {
		if !fn(b) {
			close(done)
			return nil
		}
		if b.last {
			return b.err
		}
		b.reset()
		free <- b
	}
	return nil // not reached: the last batch returns
}

// replayGC paces the garbage collector for replay. What replay holds is
// small (one turn's items and the mapper's state of the turn) while it
// allocates the stream's strings as it goes, so at the default pace the
// collector runs every few megabytes, some fifty times a 100 MB stream.
// While the live heap is small, replay lets the heap grow to five times
// it, up to replayMemoryLimit in all; once a turn holds more than
// replayLiveLimit, the default pace again (and no limit: a turn that holds
// more than the limit is not collected over and over), so the peak stays
// near what is held. GOGC or GOMEMLIMIT, when set, decide alone.
type replayGC struct {
	prev      int   // the GC percent before replay
	prevLimit int64 // the memory limit before replay
	percent   int   // the GC percent set now; 0 when GOGC decides
	sample    []metrics.Sample
}

const (
	replayGCPercent   = 400
	replayLiveLimit   = 6 << 20
	replayMemoryLimit = 24 << 20
)

func newReplayGC() *replayGC {
	g := &replayGC{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		g.percent = replayGCPercent
		g.prev = debug.SetGCPercent(replayGCPercent)
		g.prevLimit = debug.SetMemoryLimit(replayMemoryLimit)
	}
	return g
}

// pace looks at the live heap (as the last collection found it) and sets
// the pace it calls for.
func (g *replayGC) pace() {
	if g.percent == 0 {
		return
	}
	metrics.Read(g.sample)
	want := replayGCPercent
	if live := g.sample[0].Value.Uint64(); live > replayLiveLimit {
		want = 100
	}
	if want != g.percent {
		debug.SetGCPercent(want)
		if want == replayGCPercent {
			debug.SetMemoryLimit(replayMemoryLimit)
		} else {
			debug.SetMemoryLimit(g.prevLimit)
		}
		g.percent = want
	}
}

func (g *replayGC) restore() {
	if g.percent != 0 {
		debug.SetGCPercent(g.prev)
		debug.SetMemoryLimit(g.prevLimit)
	}
}
