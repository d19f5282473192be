//go:build unix

package regfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// open opens path without waiting for a FIFO's writer or a device (the
// O_NONBLOCK flag), then puts the descriptor back in blocking mode, which
// is what a regular file's reads use anyway.
func open(path string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
