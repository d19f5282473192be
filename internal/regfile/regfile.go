// Package regfile opens files that spbridge reads from a path it was given
// (a user's argument, a folder's own files, the state folder) only when
// they are regular files, so that a FIFO or a device at such a path is
// refused at once instead of holding the read, or the open, forever.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is matched (through errors.Is) by the error of a path that
// is not a regular file: a FIFO, a device, a socket or a folder.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError names the path that is not a regular file, and what it is.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s)", e.Path, kind(e.Mode))
}

func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// kind says what a non-regular file is, for messages.
func kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case m.IsDir():
		return "a folder"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "not a plain file"
	}
}

// Open opens path for reading when it is a regular file (a symbolic link
// to one included). The open itself never waits: a FIFO without a writer,
// or a device, is refused with a *NotRegularError before anything is read.
func Open(path string) (*os.File, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// ReadFile reads the whole of path as os.ReadFile does, when it is a
// regular file (see Open).
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	data := make([]byte, 0, size+512)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}
