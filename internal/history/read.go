package history

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"spbridge/internal/jsonline"
)

// Bounds of what listing reads of a file: its head (more, up to headMax,
// while what it looks for is not found) and its tail.
const (
	headChunk = 64 << 10
	headMax   = 1 << 20
	tailSize  = 64 << 10
)

// maxLine bounds one line of a session file that Import reads; a longer
// line (a pasted file of hundreds of MB) is skipped and counted.
var maxLine = 64 << 20

// openRegular opens path for reading when it is a regular file (never a
// symbolic link), with its size at the time it was opened: reading stops
// there, so a file still being written is read as it stood.
func openRegular(path string) (*os.File, int64, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, 0, &NotSessionError{Path: path, Reason: "it is a symbolic link, which spbridge does not follow"}
		}
		return nil, 0, &NotSessionError{Path: path, Reason: "it is not a regular file"}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi2, err := f.Stat()
	if err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		if err == nil {
			err = &NotSessionError{Path: path, Reason: "it changed while it was opened"}
		}
		return nil, 0, err
	}
	return f, fi2.Size(), nil
}

// NotSessionError says why a file is not read as a session.
type NotSessionError struct {
	Path   string
	Reason string
}

func (e *NotSessionError) Error() string { return e.Path + " is not a session file: " + e.Reason }

// headLines calls fn with each complete line of the first bytes of f (size
// bytes long), reading headChunk at a time up to headMax until fn returns
// false. A line longer than what was read is passed cut (fn must cope).
func headLines(f io.ReaderAt, size int64, fn func(line []byte) bool) {
	limit := min(size, headMax)
	buf := make([]byte, 0, min(limit, headChunk))
	var off int64
	start := 0 // where the next line begins in buf
	for off < limit {
		n := min(int64(headChunk), limit-off)
		buf = append(buf, make([]byte, n)...)
		got, err := f.ReadAt(buf[len(buf)-int(n):], off)
		buf = buf[:len(buf)-int(n)+got]
		off += int64(got)
		for {
			i := bytes.IndexByte(buf[start:], '\n')
			if i < 0 {
				break
			}
			if !fn(buf[start : start+i]) {
				return
			}
			start += i + 1
		}
		if err != nil || got == 0 {
			break
		}
	}
	if start < len(buf) && off >= size {
		fn(buf[start:]) // the last line, without its newline
	}
}

// tailLines calls fn with each complete line of the last tailSize bytes of
// f, last first, until fn returns false; the first, partial line is left
// out unless the tail is the whole file.
func tailLines(f io.ReaderAt, size int64, fn func(line []byte) bool) {
	from := max(size-tailSize, 0)
	buf := make([]byte, size-from)
	n, _ := f.ReadAt(buf, from)
	buf = buf[:n]
	if from > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return
		}
		buf = buf[i+1:]
	}
	buf = bytes.TrimRight(buf, "\n")
	for len(buf) > 0 {
		i := bytes.LastIndexByte(buf, '\n')
		if !fn(buf[i+1:]) {
			return
		}
		if i < 0 {
			return
		}
		buf = buf[:i]
	}
}

// object parses line as a JSON object, false when it is not one (not
// JSON, cut short, nested too deep). Invalid UTF-8 in it reads as U+FFFD.
func object(line []byte) (gjson.Result, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || jsonline.TooDeep(line) || !gjson.ValidBytes(line) {
		return gjson.Result{}, false
	}
	return gjson.ParseBytes(line), true
}

// lineReader reads a session file a line at a time with bounded memory: a
// line longer than maxLine is skipped (and counted), the bytes are made
// valid UTF-8, and reading stops at the size the file had when opened.
type lineReader struct {
	r       *bufio.Reader
	buf     []byte
	TooLong int  // lines skipped for their length
	Partial bool // the last line had no newline
	err     error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Next returns the next line without its newline, or false at the end.
// The line is valid until the next call.
func (lr *lineReader) Next() ([]byte, bool) {
	for {
		lr.buf = lr.buf[:0]
		long := false
		for {
			chunk, err := lr.r.ReadSlice('\n')
			if !long {
				if len(lr.buf)+len(chunk) > maxLine {
					long, lr.buf = true, lr.buf[:0]
				} else {
					lr.buf = append(lr.buf, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				if err != io.EOF {
					lr.err = err
				}
				if long {
					lr.TooLong++
					return nil, false
				}
				if len(lr.buf) == 0 {
					return nil, false
				}
				lr.Partial = true
				return lr.valid(), true
			}
			break
		}
		if long {
			lr.TooLong++
			continue
		}
		lr.buf = lr.buf[:len(lr.buf)-1]
		return lr.valid(), true
	}
}

func (lr *lineReader) valid() []byte {
	if !utf8.Valid(lr.buf) {
		lr.buf = bytes.ToValidUTF8(lr.buf, []byte("\uFFFD"))
	}
	return lr.buf
}

// Err is the read error that ended the lines, nil at the end of the file.
func (lr *lineReader) Err() error { return lr.err }
