package cliproc

import (
	"bufio"
	"io"
)

// readBufSize is the size of the bufio.Reader that stdout is read through. A
// line that fits is copied out once; a longer one is gathered fragment by
// fragment, up to the line cap.
const readBufSize = 64 << 10

// Line is one line of the program's stdout, or the report of a line that was
// too long to deliver.
type Line struct {
	// Data is the line without its "\n" (a "\r" before it is kept). It is
	// never nil for a delivered line, even an empty one. From ReadLines it
	// belongs to the receiver; from Proc.Next it is valid until the next
	// call of Next. It is nil when Oversize is set.
	Data []byte

	// Oversize, when greater than zero, reports that a line of this many
	// bytes (not counting its "\n") was longer than Config.MaxLine and was
	// skipped without being held in memory.
	Oversize int64
}

// readLines reads lines from r and hands each to send, until r reports an
// error or send returns false. A final line without "\n" is delivered; a line
// longer than maxLine bytes is read through to its end and reported as
// Line{Oversize: n}. It returns nil at io.EOF or when send refused a line,
// and otherwise r's error.
//
// Memory does not grow with the number of lines: each line is copied into a
// slice of its own, handed over, and forgotten; a skipped line costs at most
// maxLine bytes while it is found out.
func readLines(r *bufio.Reader, maxLine int, send func(Line) bool) error {
	var (
		acc  []byte // the line so far, when it spans several fragments
		n    int64  // the line's length so far
		over bool   // the line is longer than maxLine and is being skipped
	)
	for {
		frag, err := r.ReadSlice('\n')
		complete := err == nil
		if complete {
			frag = frag[:len(frag)-1]
		}
		n += int64(len(frag))
		if !over && n > int64(maxLine) {
			over, acc = true, nil
		}
		if !over && (!complete || acc != nil) {
			acc = append(acc, frag...)
		}
		partial := err != nil && err != bufio.ErrBufferFull && n > 0
		if complete || partial {
			var line Line
			switch {
			case over:
				line.Oversize = n
			case acc != nil:
				line.Data = acc
			default:
				line.Data = append([]byte{}, frag...) // not zeroed first, as make would; never nil
			}
			if !send(line) {
				return nil
			}
			acc, n, over = nil, 0, false
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
