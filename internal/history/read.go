package history

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"io"
	"os"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"spbridge/internal/jsonline"
	"spbridge/internal/regfile"
)

// Bounds of what listing reads of a file: its first lines, headMax bytes
// of them (while what it looks for is not found), and its tail. A line
// longer than longLine (a first message with images: several MB, or
// more than Import takes whole) is read to its end but kept skimmed: each
// of its strings cut to skimString bytes, at most skimMax bytes in all, so
// memory stays bounded whatever the line's length; it counts as its
// skimmed size, and the head ends after headScan bytes read in all.
const (
	headChunk  = 64 << 10
	headMax    = 1 << 20
	tailSize   = 64 << 10
	longLine   = 256 << 10
	skimString = 16 << 10
	skimMax    = 1 << 20
	headScan   = 256 << 20
)

// maxLine bounds one line of a session file that Import reads; a longer
// line (a pasted file of hundreds of MB) is skipped and counted.
var maxLine = 64 << 20

// OpenRegular opens path for reading when it is a regular file (never a
// symbolic link), with its size at the time it was opened: reading stops
// there, so a file still being written is read as it stood.
func OpenRegular(path string) (*os.File, int64, error) {
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
	f, err := regfile.Open(path)
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

// HeadLines calls fn with each of the first lines of f (size bytes long),
// in order, until fn returns false or headMax bytes of lines were passed
// (headScan read). A line longer than longLine is passed skimmed (see
// skimmer): its strings cut, its structure whole, so that the fields a
// listing reads are there; one that goes past headScan, or skimmed beyond
// skimMax, is passed cut (fn must cope).
func HeadLines(f io.ReaderAt, size int64, fn func(line []byte) bool) {
	headLines(io.NewSectionReader(f, 0, size), size, fn)
}

// ReaderHead is HeadLines of what r reads from a file's start.
func ReaderHead(r io.Reader, fn func(line []byte) bool) { headLines(r, headScan, fn) }

// headLines is HeadLines of what r reads, size bytes long at most.
func headLines(r io.Reader, size int64, fn func(line []byte) bool) {
	br := bufio.NewReaderSize(r, headChunk)
	var off int64 // where the next line begins
	passed := 0   // bytes passed to fn
	buf := make([]byte, 0, headChunk)
	var sk *skimmer
	for off < min(size, headScan) && passed < headMax {
		buf = buf[:0]
		skimmed := false
		n := 0 // the line's length so far
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			n += len(chunk)
			switch {
			case skimmed:
				sk.write(chunk)
			case len(buf)+len(chunk) > longLine:
				if sk == nil {
					sk = &skimmer{}
				}
				sk.reset()
				sk.write(buf)
				sk.write(chunk)
				skimmed = true
			default:
				buf = append(buf, chunk...)
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
			if off+int64(n) > headScan {
				err = errLineTooLong // passed cut, and the head ends there
				break
			}
		}
		line := buf
		if skimmed {
			line = sk.out
		}
		off += int64(n)
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if n == 0 || (len(line) == 0 && err != nil) {
			return
		}
		passed += len(line) + 1
		if !fn(line) || err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// skimmer copies a JSON text with each string longer than skimString
// bytes cut there (at a whole character or escape), to at most skimMax
// bytes: what a listing needs of a line with megabytes of images — its
// fields, the start of each text — kept in bounded memory. It checks
// nothing: the copy is parsed as any line is.
type skimmer struct {
	out      []byte
	inString bool
	escape   int  // -1 after a backslash, then the hex digits left of a \uXXXX
	strStart int  // where the string being copied begins in out
	cut      bool // the string being copied was cut
	limit    int  // the strings' bound: skimString when 0
}

func (s *skimmer) reset() { *s = skimmer{out: s.out[:0], limit: s.limit} }

func (s *skimmer) emit(b byte) {
	if len(s.out) < skimMax {
		s.out = append(s.out, b)
	}
}

func (s *skimmer) write(p []byte) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case !s.inString:
			if b == '"' {
				s.inString, s.cut, s.strStart = true, false, len(s.out)+1
			}
			s.emit(b)
		case s.escape != 0:
			if s.escape < 0 && b == 'u' {
				s.escape = 4
			} else if s.escape < 0 {
				s.escape = 0
			} else {
				s.escape--
			}
			if !s.cut {
				s.emit(b)
			}
		case b == '"':
			if s.cut {
				s.trimRune()
			}
			s.inString = false
			s.emit(b)
		case s.cut:
			// Skip to the string's next quote or backslash.
			j := i
			for j < len(p) && p[j] != '"' && p[j] != '\\' {
				j++
			}
			if j < len(p) && p[j] == '\\' {
				s.escape = -1
			}
			i = j
			if j < len(p) && p[j] == '"' {
				i-- // the quote ends the string, above
			}
		case len(s.out)-s.strStart >= cmp.Or(s.limit, skimString):
			s.cut = true
			i-- // skip it, as the rest
		default:
			if b == '\\' {
				s.escape = -1
			}
			s.emit(b)
		}
	}
}

// trimRune drops an incomplete UTF-8 sequence the cut left at the end of
// the string.
func (s *skimmer) trimRune() {
	str := s.out[min(s.strStart, len(s.out)):]
	for k := 1; k <= min(3, len(str)); k++ {
		c := str[len(str)-k]
		if c < 0x80 {
			return
		}
		if c >= 0xC0 { // a sequence's first byte
			if !utf8.FullRune(str[len(str)-k:]) {
				s.out = s.out[:len(s.out)-k]
			}
			return
		}
	}
}

// TailLines calls fn with each complete line of the last tailSize bytes of
// f, last first, until fn returns false; the first, partial line is left
// out unless the tail is the whole file.
func TailLines(f io.ReaderAt, size int64, fn func(line []byte) bool) {
	from := max(size-tailSize, 0)
	buf := make([]byte, size-from)
	n, _ := f.ReadAt(buf, from)
	tailLines(buf[:n], from > 0, fn)
}

// tailLines calls fn with each complete line of buf, last first, until fn
// returns false; its first line is left out when cut.
func tailLines(buf []byte, cut bool, fn func(line []byte) bool) {
	if cut {
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

// Object parses line as a JSON object, false when it is not one (not
// JSON, cut short, nested too deep). Invalid UTF-8 in it reads as U+FFFD.
func Object(line []byte) (gjson.Result, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || jsonline.TooDeep(line) || !gjson.ValidBytes(line) {
		return gjson.Result{}, false
	}
	return gjson.ParseBytes(line), true
}

// LineReader reads a session file a line at a time with bounded memory: a
// line longer than maxLine is skipped (and counted), the bytes are made
// valid UTF-8, and reading stops at the size the file had when opened.
type LineReader struct {
	r       *bufio.Reader
	buf     []byte
	TooLong int  // lines skipped for their length
	Partial bool // the last line had no newline
	err     error
}

// NewLineReader reads r a line at a time.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Next returns the next line without its newline, or false at the end.
// The line is valid until the next call.
func (lr *LineReader) Next() ([]byte, bool) {
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

func (lr *LineReader) valid() []byte {
	if !utf8.Valid(lr.buf) {
		lr.buf = bytes.ToValidUTF8(lr.buf, []byte("\uFFFD"))
	}
	return lr.buf
}

// Err is the read error that ended the lines, nil at the end of the file.
func (lr *LineReader) Err() error { return lr.err }
