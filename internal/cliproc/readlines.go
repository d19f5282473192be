package cliproc

import (
	"bufio"
	"io"
)

// ReadLines reads r line by line as a Proc reads a program's stdout, for
// streams that come from elsewhere (a recorded file): each line, or the
// Oversize report of a line longer than maxLine (DefaultMaxLine when 0), is
// handed to fn until r ends or fn returns false. It returns nil at the end of
// r and r's error otherwise.
func ReadLines(r io.Reader, maxLine int, fn func(Line) bool) error {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return readLines(bufio.NewReaderSize(r, readBufSize), maxLine, fn)
}
