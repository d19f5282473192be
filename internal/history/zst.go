package history

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A store's session file may be kept compressed (zstd, its name ending
// in .zst): it is read decompressed as it is read, a window at a time.
// What it expands to is bounded as a plain file's reading is: a listing
// reads at most headScan bytes of it, an import at most maxExpanded; a
// file that goes past the bound is skipped, and so is one cut short or
// corrupt, with an error that says so.

// maxExpanded bounds what a compressed session file is read to by an
// import; maxWindow the decoder's window (the memory it holds): the
// CLIs compress with windows of a few megabytes (a file compressed in one
// block has its size as window).
var (
	maxExpanded int64  = 4 << 30
	maxWindow   uint64 = 128 << 20
)

// Compressed reports whether the session file at path is compressed (its
// name ends in .zst).
func Compressed(path string) bool { return strings.HasSuffix(path, ".zst") }

// TrimCompressed is a file's name without the .zst of a compressed one.
func TrimCompressed(name string) string { return strings.TrimSuffix(name, ".zst") }

// ExpandError is the error of a compressed file that expands past what
// spbridge reads of one.
type ExpandError struct {
	Path  string
	Limit int64
}

func (e *ExpandError) Error() string {
	return fmt.Sprintf("%s expands past %d MiB: it was not read", e.Path, e.Limit>>20)
}

// CorruptError is the error of a compressed file that cannot be
// decompressed: cut short, or not zstd.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	if errors.Is(e.Err, zstd.ErrWindowSizeExceeded) {
		return fmt.Sprintf("%s needs more than %d MiB of memory to decompress: it was not read", e.Path, maxWindow>>20)
	}
	return fmt.Sprintf("%s is not a whole zstd file (cut short or corrupt): %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// SessionFile is a session file open for reading from its start: a plain
// file up to the size it had when opened, a compressed one decompressed
// as it is read, up to limit bytes.
type SessionFile struct {
	Path string
	Size int64 // the file's size on disk
	f    *os.File
	dec  *zstd.Decoder
	r    io.Reader
	n    int64 // bytes read
	lim  int64 // the bound of a compressed file's content
	// last keeps the last bytes read of a compressed file (at least
	// tailSize of them, when there are), for Tail.
	last []byte
}

// OpenSession opens the session file at path (a regular file, never a
// symbolic link) for reading its content: a compressed file's content
// read past limit (0: maxExpanded) ends with an *ExpandError.
func OpenSession(path string, limit int64) (*SessionFile, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	s := &SessionFile{Path: path, Size: size, f: f, r: io.NewSectionReader(f, 0, size)}
	if !Compressed(path) {
		return s, nil
	}
	if limit <= 0 {
		limit = maxExpanded
	}
	s.lim = limit
	s.dec, _ = decoders.Get().(*zstd.Decoder)
	if s.dec == nil {
		s.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxWindow))
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := s.dec.Reset(s.r); err != nil {
		s.Close()
		return nil, &CorruptError{Path: path, Err: err}
	}
	s.r = s.dec
	return s, nil
}

// decoders are the decoders of files read and closed, for the next: a
// listing reads hundreds of compressed files one after the other.
var decoders sync.Pool

func (s *SessionFile) Read(p []byte) (int, error) {
	if s.dec == nil {
		return s.r.Read(p)
	}
	if s.n >= s.lim {
		// One byte more tells a file that ends here from one that goes on.
		var one [1]byte
		if n, err := s.r.Read(one[:]); n == 0 && errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		return 0, &ExpandError{Path: s.Path, Limit: s.lim}
	}
	if int64(len(p)) > s.lim-s.n {
		p = p[:s.lim-s.n]
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	s.keep(p[:n])
	if err != nil && !errors.Is(err, io.EOF) {
		err = &CorruptError{Path: s.Path, Err: err}
	}
	return n, err
}

// Close closes the file (and its decoder).
func (s *SessionFile) Close() error {
	if s.dec != nil {
		if s.dec.Reset(nil) == nil {
			decoders.Put(s.dec)
		} else {
			s.dec.Close()
		}
		s.dec = nil
	}
	return s.f.Close()
}

// ReaderAt is the plain file, for reading its parts directly (nil for a
// compressed one).
func (s *SessionFile) ReaderAt() io.ReaderAt {
	if s.dec != nil {
		return nil
	}
	return s.f
}

// Head calls fn with each of the first lines of the file, as HeadLines
// does; it reads from the file's start, once, before Tail.
func (s *SessionFile) Head(fn func(line []byte) bool) {
	if s.dec == nil {
		HeadLines(s.f, s.Size, fn)
		return
	}
	headLines(s, headScan, fn)
}

// Tail calls fn with each complete line of the file's last tailSize
// bytes, last first, as TailLines does. A compressed file is read on to
// its end from where Head left it, to headScan bytes in all: one longer
// gives no line.
func (s *SessionFile) Tail(fn func(line []byte) bool) {
	if s.dec == nil {
		TailLines(s.f, s.Size, fn)
		return
	}
	if s.n < headScan {
		if _, err := io.Copy(io.Discard, io.LimitReader(s, headScan-s.n)); err != nil {
			return
		}
	}
	if s.n >= headScan {
		var one [1]byte
		if n, _ := s.Read(one[:]); n > 0 {
			return
		}
	}
	buf := s.last
	if len(buf) > tailSize {
		buf = buf[len(buf)-tailSize:]
	}
	tailLines(buf, s.n > int64(len(buf)), fn)
}

// keep keeps the last bytes read, at least tailSize of them.
func (s *SessionFile) keep(p []byte) {
	if len(p) >= tailSize {
		s.last = append(s.last[:0], p[len(p)-tailSize:]...)
		return
	}
	if s.last == nil {
		s.last = make([]byte, 0, 2*tailSize)
	}
	if len(s.last)+len(p) > cap(s.last) {
		n := copy(s.last, s.last[len(s.last)-(tailSize-len(p)):])
		s.last = s.last[:n]
	}
	s.last = append(s.last, p...)
}
