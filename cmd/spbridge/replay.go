package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"

	"github.com/tidwall/gjson"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/cliproc"
	"spbridge/internal/codex"
	"spbridge/internal/itemmap"
)

func runReplay(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("replay", "--backend claude|codex [--codex-transport exec|app-server] [FILE]",
		"Read a recorded CLI event stream (JSON lines; standard input when FILE is\n"+
			"absent or -) and print the items it maps to as a canonical JSON array. Exit 0\n"+
			"whenever the stream could be read: a failed or interrupted turn shows in the\n"+
			"items. Item ids are sequential, so the output is the same at every run.")
	backend := f.String("backend", "", "the CLI that wrote the stream: claude or codex")
	transport := f.String("codex-transport", "exec", "the codex stream's transport: exec (codex exec --json) or app-server (what codex app-server wrote; a recorded session's {\"dir\",\"msg\"} lines are unwrapped)")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if *backend == "" {
		return usagef(f.cmd, "replay needs --backend claude or --backend codex")
	}
	if err := checkBackend(f, *backend, *transport); err != nil {
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
	if err := replayStream(in, *backend, *transport, out, gc.turnWritten); err != nil {
		return err
	}
	return out.Flush()
}

// mapper is what replay needs of a backend's mapper.
type mapper interface {
	Line([]byte) itemmap.Result
	InTurn() bool
	Finish(interrupted bool, text, detail string) itemmap.Result
}

// replayStream maps a recorded stream to the items a panel would show at
// its end and writes them to out as one canonical JSON array and a newline,
// the same bytes as canonjson.Encode of the whole list. A stream that stops
// inside a turn ends that turn as failed.
//
// A mapper keeps nothing of a turn once it ended, so the items a turn made
// are final when the mapper is between turns: they are written then and
// dropped, and the memory held is one turn's items, not the stream's.
func replayStream(in io.Reader, backend, transport string, out *bufio.Writer, turnWritten func()) error {
	newID := itemmap.SequentialIDs()
	var m mapper = itemmap.NewClaude(newID)
	app := backend == "codex" && transport == codex.TransportAppServer
	switch {
	case app:
		m = itemmap.NewCodexApp(newID)
	case backend == "codex":
		m = itemmap.NewCodex(newID)
	}
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
		if turnWritten != nil {
			turnWritten()
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
	read := cliproc.ReadLines
	if backend == "claude" {
		// The claude mapper keeps nothing of a line: each is read in
		// place, in the reader's buffer.
		read = readBorrowedLines
	}
	err := read(in, 0, func(l cliproc.Line) bool {
		if l.Oversize > 0 {
			it := archive.ItemFromMap(map[string]any{"id": newID(), "type": archive.TypeNotice,
				"text": fmt.Sprintf("Skipped a line of %d bytes: longer than the %d-byte limit.", l.Oversize, cliproc.DefaultMaxLine)})
			items = append(items, it)
			if !m.InTurn() {
				flush()
			}
			return werr == nil
		}
		data := l.Data
		if app {
			// A recorded session: only what the server wrote.
			if rec := gjson.ParseBytes(data); rec.Get("dir").Exists() {
				if rec.Get("dir").String() != "out" {
					return true
				}
				data = []byte(rec.Get("msg").Raw)
			}
		}
		if len(data) > 0 {
			apply(m.Line(data))
		}
		return werr == nil
	})
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

// readBorrowedLines reads r line by line as cliproc.ReadLines does (the
// same lines, the same Oversize reports), but hands fn each line in a
// buffer of its own that the next line reuses: fn must keep nothing of
// Data once it returns.
func readBorrowedLines(r io.Reader, maxLine int, fn func(cliproc.Line) bool) error {
	if maxLine <= 0 {
		maxLine = cliproc.DefaultMaxLine
	}
	br := bufio.NewReaderSize(r, 256<<10)
	var (
		acc      []byte // the line so far, when it spans several fragments
		spanning bool   // acc holds the line's start
		n        int64  // the line's length so far
		over     bool   // the line is longer than maxLine and is being skipped
	)
	for {
		frag, err := br.ReadSlice('\n')
		complete := err == nil
		if complete {
			frag = frag[:len(frag)-1]
		}
		n += int64(len(frag))
		if !over && n > int64(maxLine) {
			over, acc, spanning = true, acc[:0], false
		}
		if !over && (!complete || spanning) {
			acc, spanning = append(acc, frag...), true
		}
		if complete || err != nil && err != bufio.ErrBufferFull && n > 0 {
			var line cliproc.Line
			switch {
			case over:
				line.Oversize = n
			case spanning:
				line.Data = acc
			default:
				line.Data = frag
			}
			if !fn(line) {
				return nil
			}
			acc, spanning, n, over = acc[:0], false, 0, false
		}
		switch err {
		case nil, bufio.ErrBufferFull:
		case io.EOF:
			return nil
		default:
			return err
		}
	}
}

// replayGC paces the garbage collector for replay. What replay holds is
// small (one turn's items and the mapper's state of the turn) while it
// allocates the stream's strings as it goes, so at the default pace the
// collector runs every few megabytes, some fifty times a 100 MB stream.
// While the live heap is small, replay lets the heap grow to five times
// it (a few megabytes more at most); once a turn holds more than
// replayLiveLimit, the default pace again, so the peak stays near what
// is held. GOGC, when set, decides alone.
type replayGC struct {
	prev    int // the GC percent before replay
	percent int // the GC percent set now; 0 when GOGC decides
	sample  []metrics.Sample
}

const (
	replayGCPercent = 400
	replayLiveLimit = 6 << 20
)

func newReplayGC() *replayGC {
	g := &replayGC{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	if os.Getenv("GOGC") == "" {
		g.percent = replayGCPercent
		g.prev = debug.SetGCPercent(replayGCPercent)
	}
	return g
}

// turnWritten looks at the live heap after each turn written, and sets
// the pace it calls for.
func (g *replayGC) turnWritten() {
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
		g.percent = want
	}
}

func (g *replayGC) restore() {
	if g.percent != 0 {
		debug.SetGCPercent(g.prev)
	}
}
